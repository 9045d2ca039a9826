"""Categorical features coded as integers: every family with and without
its indicator columns (``categorical_features="auto"`` / ``None``).

Data, generated here from their definitions (no file needed):

* the tic-tac-toe endgame table: every board at the end of a game that x
  opened (958 boards; nine cells coded 0 = blank, 1 = o, 2 = x, the codes of
  an ordinal encoder; the class is "x has three in a row", 65.3% positive),
  the categorical table of issue 12 on which the oblique families lost to
  CART;
* the three MONK's problems (Thrun et al., 1991) on the whole attribute
  space (432 rows, six attributes coded 1..2, 1..3 or 1..4, no label noise):
  MONK-1 ``a1 == a2 or a5 == 1``, MONK-2 "exactly two attributes take their
  first value", MONK-3 ``(a5 == 3 and a4 == 1) or (a5 != 4 and a2 != 3)``.

Protocol of ``bench_defaults.py``: three seeded stratified 70/30 splits,
default parameters with ``random_state`` = split seed, raw codes, against
depth-tuned CART, RandomForest (200 trees) and HistGradientBoosting; mean ±
sd of the test accuracy (%) and the mean fit time.

    python benchmarks/bench_categorical.py --markdown docs/benchmarks.md
    python benchmarks/bench_categorical.py --smoke   # CI-sized (< 60 s)
"""

import argparse
import itertools
import sys

import numpy as np

from _common import Timer, environment_line, markdown_table, mean_std, single_thread

MARKER_KEY = "bench_categorical"
LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


def tic_tac_toe():
    """``(X, y)``: the distinct final boards of every game x opens."""
    boards = {}

    def winner(b):
        return next((b[i] for i, j, k in LINES if b[i] and b[i] == b[j] == b[k]), 0)

    def play(board, player):
        w = winner(board)
        if w or all(board):
            boards[tuple(board)] = int(w == 2)
            return
        for cell in range(9):
            if not board[cell]:
                board[cell] = player
                play(board, 3 - player)  # x = 2, o = 1
                board[cell] = 0

    play([0] * 9, 2)
    X = np.array(list(boards), dtype=np.float64)
    return X, np.array(list(boards.values()))


def monks():
    """``{name: (X, y)}`` of the three MONK's problems on all 432 attribute vectors."""
    X = np.array(list(itertools.product([1, 2, 3], [1, 2, 3], [1, 2], [1, 2, 3],
                                        [1, 2, 3, 4], [1, 2])), dtype=np.float64)
    a = X.T
    first = (a == 1).sum(axis=0)
    return {
        "MONK-1": (X, ((a[0] == a[1]) | (a[4] == 1)).astype(int)),
        "MONK-2": (X, (first == 2).astype(int)),
        "MONK-3": (X, (((a[4] == 3) & (a[3] == 1)) | ((a[4] != 4) & (a[1] != 3))).astype(int)),
    }


def models(seed, smoke):
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.model_selection import GridSearchCV
    from sklearn.tree import DecisionTreeClassifier

    import sklearn_difftrees as sd

    fast = dict(max_iter=3) if smoke else {}
    out = {}
    for name, cls in [("DGT", sd.DGTClassifier), ("LatentTree", sd.LatentTreeClassifier),
                      ("NonGreedy", sd.NonGreedyObliqueTreeClassifier),
                      ("TEL", sd.TreeEnsembleLayerClassifier),
                      ("CPT", sd.ConvexPolytopeTreeClassifier),
                      ("DGTForest", sd.DGTForestClassifier)]:
        extra = dict(n_estimators=3, **fast) if smoke and name == "DGTForest" else fast
        for cat in ("auto", None):
            out[(name, cat)] = cls(random_state=seed, categorical_features=cat, **extra)
    out[("CART", None)] = GridSearchCV(DecisionTreeClassifier(random_state=0),
                                       {"max_depth": range(2, 13)}, cv=3)
    out[("RF", None)] = RandomForestClassifier(n_estimators=200, random_state=seed)
    out[("HGB", None)] = HistGradientBoostingClassifier(random_state=seed)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="one split, 3 epochs")
    parser.add_argument("--markdown", help="write the table between the markers of this file")
    args = parser.parse_args(argv)
    single_thread()
    env = environment_line()
    from sklearn.model_selection import train_test_split

    sets = {"tic-tac-toe": tic_tac_toe(), **monks()}
    if args.smoke:
        sets = {"MONK-2": sets["MONK-2"]}
    seeds = range(1 if args.smoke else args.seeds)
    blocks = []
    for data_name, (X, y) in sets.items():
        scores, seconds = {}, {}
        for seed in seeds:
            X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=seed,
                                                      stratify=y)
            for key, est in models(seed, args.smoke).items():
                with Timer() as t:
                    est.fit(X_tr, y_tr)
                scores.setdefault(key, []).append(100 * est.score(X_te, y_te))
                seconds.setdefault(key, []).append(t.seconds)
                print(f"{data_name} seed {seed} {key[0]} categorical_features={key[1]!r}: "
                      f"{scores[key][-1]:.2f}%", flush=True)
        rows = []
        for name in dict.fromkeys(k[0] for k in scores):
            auto, none = scores.get((name, "auto")), scores.get((name, None))
            rows.append([name, mean_std(auto) if auto else "", mean_std(none),
                         f"{np.mean(seconds.get((name, 'auto'), seconds[(name, None)])):.2f}"])
        blocks.append(f"**{data_name}** ({X.shape[0]} rows x {X.shape[1]} coded features, "
                      f"{100 * y.mean():.1f}% positive):\n\n" + markdown_table(
                          ["model", 'categorical_features="auto" (default)', "None", "fit s"],
                          rows))
    command = "python benchmarks/bench_categorical.py" + (" " + " ".join(sys.argv[1:])
                                                          if argv is None else "")
    text = "\n\n".join([
        f"Environment: {env}",
        f"Command: `{command.strip()}`",
        f"{len(seeds)} seeded stratified 70/30 split(s), default parameters, test accuracy % "
        "(mean ± sd); fit s: mean fit time with the indicator columns (the references "
        "without).",
        *blocks,
    ])
    print(text)
    if args.markdown:
        from sklearn_difftrees._provenance import replace_marked_section

        replace_marked_section(args.markdown, MARKER_KEY, text)
        print(f"wrote the table into {args.markdown}")


if __name__ == "__main__":
    main()

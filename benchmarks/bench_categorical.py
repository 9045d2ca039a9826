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

import itertools

import numpy as np

from _common import (environment_line, fit_on_splits, markdown_table, mean_std, publish,
                     single_thread, table_args)

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
    """Every family with and without indicator columns, and the references
    (``bench_defaults.make_model``: the defaults table's estimators)."""
    from bench_defaults import make_model

    out = {}
    for name in ("DGT", "LatentTree", "NonGreedy", "TEL", "CPT", "DGTForest"):
        for cat in ("auto", None):
            out[name, cat] = make_model(name, "classification", seed, 2, smoke,
                                        {name: {"categorical_features": cat}})
    for name in ("CART", "RF", "HGB"):
        out[name, None] = make_model(name, "classification", seed, 2, smoke)
    return out


def main(argv=None):
    args = table_args(__doc__, argv, "one split of MONK-2, 4 epochs")
    single_thread()
    env = environment_line()
    sets = {"tic-tac-toe": tic_tac_toe(), **monks()}
    if args.smoke:
        sets = {"MONK-2": sets["MONK-2"]}
    seeds = range(1 if args.smoke else args.seeds)
    blocks = []
    for data_name, (X, y) in sets.items():
        res = fit_on_splits(X, y, seeds, lambda seed: models(seed, args.smoke),
                            label=f"{data_name} ")
        rows = []
        for name in dict.fromkeys(k[0] for k in res):
            auto, none = res.get((name, "auto")), res[name, None]
            rows.append([name, mean_std(auto["test"]) if auto else "", mean_std(none["test"]),
                         f"{np.mean((auto or none)['seconds']):.2f}"])
        blocks.append(f"**{data_name}** ({X.shape[0]} rows x {X.shape[1]} coded features, "
                      f"{100 * y.mean():.1f}% positive):\n\n" + markdown_table(
                          ["model", 'categorical_features="auto" (default)', "None", "fit s"],
                          rows))
    publish("bench_categorical.py", argv, env, [
        f"{len(seeds)} seeded stratified 70/30 split(s), default parameters, test accuracy % "
        "(mean ± sd); fit s: mean fit time with the indicator columns (the references "
        "without).", *blocks], args.markdown, MARKER_KEY)


if __name__ == "__main__":
    main()

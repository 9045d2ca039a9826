"""Pickle size of every estimator family at its default settings.

Every classifier is fitted with its default parameters (``random_state=0``)
on the bundled ``breast_cancer_wisconsin`` set (569 x 30, 2 classes), every
regressor on the bundled ``abalone`` set (4177 x 8). For each fitted
estimator the script reports the size of ``pickle.dumps(est)`` (protocol 5),
the bytes of the numpy arrays that prediction reads (everything reachable
from the fitted state: ``tree_``, head weights, ensemble arrays, ...), and
the three attributes that weigh most in the pickle. The goal (issue 14) is a
pickle dominated by the arrays prediction needs; ``warm_start=True`` keeps
the trained module's weights too, shown for ``DGTClassifier`` as a second
row. ``DGTForestRegressor`` is left out (30 default ``DGTRegressor`` fits on
abalone take long on a small machine); a forest pickles its members, so its
size is ``n_estimators`` times a member's, as the classifier's row shows.

    python benchmarks/bench_pickle_size.py --out benchmarks/results/pickle_size.md
    python benchmarks/bench_pickle_size.py --smoke      # three families, tiny budgets
"""

import argparse
import io
import pickle
import sys
import warnings

import numpy as np

from _common import environment_line, markdown_table, single_thread, write_out


def array_bytes(obj, seen=None):
    """Bytes of the numpy arrays reachable from ``obj`` (dicts, lists, objects)."""
    seen = {} if seen is None else seen
    if id(obj) in seen:
        return 0
    seen[id(obj)] = obj  # keeps temporaries (getstate dicts) alive: ids stay unique
    if isinstance(obj, np.ndarray):
        if obj.dtype == object:
            return sum(array_bytes(o, seen) for o in obj.ravel())
        return obj.nbytes
    if isinstance(obj, dict):
        return sum(array_bytes(v, seen) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(array_bytes(v, seen) for v in obj)
    state = getattr(obj, "__getstate__", None)
    if state is not None and hasattr(obj, "__dict__"):
        try:
            return array_bytes(obj.__getstate__(), seen)
        except TypeError:
            return 0
    return 0


def top_attributes(est, k=3):
    state = est.__getstate__()
    sizes = []
    for name, value in state.items():
        buf = io.BytesIO()
        pickle.dump(value, buf, protocol=5)
        sizes.append((buf.tell(), name))
    sizes.sort(reverse=True)
    return ", ".join(f"`{n}` {s / 1024:.1f}" for s, n in sizes[:k])


def cases(smoke):
    import sklearn_difftrees as sd

    small = dict(max_iter=3) if smoke else {}
    clf = [
        ("DGTClassifier", lambda: sd.DGTClassifier(random_state=0, **small)),
        ("DGTClassifier (warm_start=True)",
         lambda: sd.DGTClassifier(random_state=0, warm_start=True, **small)),
        ("NonGreedyObliqueTreeClassifier",
         lambda: sd.NonGreedyObliqueTreeClassifier(random_state=0, **small)),
        ("LatentTreeClassifier", lambda: sd.LatentTreeClassifier(random_state=0, **small)),
    ]
    reg = []
    if not smoke:
        clf += [
            ("DGTForestClassifier", lambda: sd.DGTForestClassifier(random_state=0)),
            ("DGTBanditClassifier", lambda: sd.DGTBanditClassifier(random_state=0)),
            ("TreeEnsembleLayerClassifier",
             lambda: sd.TreeEnsembleLayerClassifier(random_state=0)),
            ("ConvexPolytopeTreeClassifier",
             lambda: sd.ConvexPolytopeTreeClassifier(random_state=0)),
        ]
        reg = [
            ("DGTRegressor", lambda: sd.DGTRegressor(random_state=0)),
            ("NonGreedyObliqueTreeRegressor",
             lambda: sd.NonGreedyObliqueTreeRegressor(random_state=0)),
            ("LatentTreeRegressor", lambda: sd.LatentTreeRegressor(random_state=0)),
            ("TreeEnsembleLayerRegressor", lambda: sd.TreeEnsembleLayerRegressor(random_state=0)),
            ("ConvexPolytopeTreeRegressor",
             lambda: sd.ConvexPolytopeTreeRegressor(random_state=0)),
            ("DGTBanditRegressor", lambda: sd.DGTBanditRegressor(random_state=0)),
        ]
    return [("breast_cancer_wisconsin", n, f) for n, f in clf] + [
        ("abalone", n, f) for n, f in reg
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the markdown report here")
    parser.add_argument("--smoke", action="store_true", help="three families, 3 epochs")
    args = parser.parse_args(argv)

    single_thread()
    env = environment_line()
    from sklearn_difftrees.datasets import load_dataset

    rows = []
    for data, name, make in cases(args.smoke):
        X, y = load_dataset(data, return_X_y=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = make().fit(X, y)
        size = len(pickle.dumps(est, protocol=5))
        arrays = array_bytes(est.__getstate__())
        rows.append([name, data, f"{size / 1024:.1f}", f"{arrays / 1024:.1f}",
                     top_attributes(est)])
        print(" | ".join(rows[-1]), flush=True)

    table = markdown_table(
        ["estimator (defaults)", "data", "pickle [KB]", "arrays [KB]", "largest attributes [KB]"],
        rows, align=["l", "l", "r", "r", "l"],
    )
    text = f"{table}\n\n{env}"
    print()
    print(text)
    write_out(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

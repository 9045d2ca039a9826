"""LatentTreeClusterer against KMeans, a Gaussian mixture and Ward's clustering.

Thirteen sets: ``make_blobs`` of 2, 4 and 8 centers (150 rows each; 2-D, also
sheared, "aniso", and 3-D with its features scaled by 1, 100 and 0.01),
iris, wine (raw and standardized), digits, breast cancer and the bundled
glass. Seeds 0, 1, 2 are each model's ``random_state`` and the blobs' data
seed; every row is fitted and scored; the references are told the number of
classes ``k``. The clusterer's columns: its default (``init="bisect"``,
the pruned tree's leaves as clusters), ``n_clusters=k``, and the former
random start (``init="random"``) as leaves, with ``n_clusters=k`` and at
``max_depth=ceil(log2 k)``. Mean adjusted Rand index over the seeds.

    python benchmarks/bench_clustering.py --markdown docs/benchmarks.md
    python benchmarks/bench_clustering.py --smoke   # CI-sized (< 60 s)
"""

import math
import warnings

import numpy as np

from _common import environment_line, markdown_table, publish, single_thread, table_args

MARKER_KEY = "bench_clustering"
SETS = ["blobs 2", "blobs 4", "blobs 8", "aniso 2", "aniso 4", "aniso 8", "blobs 4, scaled",
        "iris", "wine", "wine, standardized", "digits", "breast_cancer", "glass"]


def load(name, seed):
    """``(X, y)`` of one of :data:`SETS` (the blobs drawn with ``seed``)."""
    from sklearn import datasets
    from sklearn.preprocessing import StandardScaler

    from sklearn_difftrees.datasets import load_dataset

    kind, _, rest = name.partition(" ")
    if kind in ("blobs", "aniso"):
        k = int(rest.split(",")[0])
        scaled = rest.endswith("scaled")
        X, y = datasets.make_blobs(n_samples=150 * k, centers=k, n_features=3 if scaled else 2,
                                   random_state=seed)
        if kind == "aniso":
            X = X @ np.array([[0.6, -0.6], [-0.4, 0.8]])
        return (X * np.array([1, 100, 0.01]) if scaled else X), y
    if name == "glass":
        return load_dataset("glass", return_X_y=True)
    loader = {"iris": datasets.load_iris, "wine": datasets.load_wine,
              "wine, standardized": datasets.load_wine, "digits": datasets.load_digits,
              "breast_cancer": datasets.load_breast_cancer}[name]
    X, y = loader(return_X_y=True)
    return (StandardScaler().fit_transform(X) if name.endswith("standardized") else X), y


def models(k, seed, smoke):
    from sklearn.cluster import AgglomerativeClustering, KMeans
    from sklearn.mixture import GaussianMixture

    from sklearn_difftrees import LatentTreeClusterer

    fast = {"max_iter": 5} if smoke else {}

    def lt(**kw):
        return LatentTreeClusterer(random_state=seed, **fast, **kw)

    return {
        "KMeans": KMeans(k, n_init=10, random_state=seed),
        "GMM": GaussianMixture(k, random_state=seed),
        "Ward": AgglomerativeClustering(k),
        "default (leaves)": lt(),
        "n_clusters=k": lt(n_clusters=k),
        'init="random", leaves': lt(init="random"),
        'init="random", n_clusters=k': lt(init="random", n_clusters=k),
        'init="random", depth ceil(log2 k)': lt(init="random",
                                                  max_depth=max(1, math.ceil(math.log2(k)))),
    }


def main(argv=None):
    from sklearn.metrics import adjusted_rand_score

    args = table_args(__doc__, argv, "three sets, one seed, 5 epochs")
    single_thread()
    env = environment_line()
    sets = SETS[:2] + ["iris"] if args.smoke else SETS
    seeds = range(1 if args.smoke else args.seeds)
    scores = {}
    for name in sets:
        for seed in seeds:
            X, y = load(name, seed)
            k = np.unique(y).size
            for label, est in models(k, seed, args.smoke).items():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # ConvergenceWarning of short runs
                    labels = est.fit_predict(X)
                scores.setdefault(label, {}).setdefault(name, []).append(
                    adjusted_rand_score(y, labels))
        print(name, {m: round(float(np.mean(s[name])), 3) for m, s in scores.items()},
              flush=True)
    labels = list(scores)
    rows = [[name] + [f"{np.mean(scores[m][name]):.3f}" for m in labels] for name in sets]
    rows.append(["mean"] + [f"{np.mean([np.mean(v) for v in scores[m].values()]):.3f}"
                            for m in labels])
    publish("bench_clustering.py", argv, env, [
        f"Adjusted Rand index against the classes, mean over {len(seeds)} seed(s); "
        "references told the number of classes k; LatentTreeClusterer's columns: "
        "its default, n_clusters=k, and the former random start.",
        markdown_table(["set"] + labels, rows, ["l"] + ["r"] * len(labels))],
        args.markdown, MARKER_KEY)


if __name__ == "__main__":
    main()

"""GPU check: every torch-trained family fitted with ``device="cuda"`` beside ``"cpu"``.

Fits each estimator with its default parameters (the forest with 5 members) on
one seeded 70/30 split of a bundled dataset, on the CPU and on the GPU, and
prints test score and fit time for both, plus a forward/backward pass of the
two torch layers on the GPU. It shows that ``device="cuda"`` takes the same
code path as the CPU (same training loop, same hard tree at the end); the
scores differ only by floating-point reduction order. Without CUDA it prints
that it skipped (exit 0), so ``--smoke`` runs anywhere.

    python benchmarks/bench_gpu.py [--out FILE] [--markdown docs/benchmarks.md]
"""

import argparse
import sys
import time
import warnings

from _common import markdown_table, write_out

from sklearn_difftrees._provenance import cpu_model


def families():
    import sklearn_difftrees as sd

    return [
        ("DGTClassifier", lambda d: sd.DGTClassifier(random_state=0, device=d), "vehicle"),
        ("DGTRegressor", lambda d: sd.DGTRegressor(random_state=0, device=d), "197_cpu_act"),
        ("LatentTreeClassifier", lambda d: sd.LatentTreeClassifier(random_state=0, device=d),
         "vehicle"),
        ("LatentTreeRegressor", lambda d: sd.LatentTreeRegressor(random_state=0, device=d),
         "197_cpu_act"),
        ("TreeEnsembleLayerClassifier",
         lambda d: sd.TreeEnsembleLayerClassifier(random_state=0, device=d), "vehicle"),
        ("TreeEnsembleLayerRegressor",
         lambda d: sd.TreeEnsembleLayerRegressor(random_state=0, device=d), "197_cpu_act"),
        ("ConvexPolytopeTreeClassifier",
         lambda d: sd.ConvexPolytopeTreeClassifier(random_state=0, device=d), "vehicle"),
        ("ConvexPolytopeTreeRegressor",
         lambda d: sd.ConvexPolytopeTreeRegressor(random_state=0, device=d), "197_cpu_act"),
        ("DGTForestClassifier(n_estimators=5)",
         lambda d: sd.DGTForestClassifier(n_estimators=5, random_state=0, device=d), "vehicle"),
        ("DGTBanditClassifier", lambda d: sd.DGTBanditClassifier(random_state=0, device=d),
         "vehicle"),
    ]


def fit_score(make, device, data):
    from sklearn.model_selection import train_test_split

    from sklearn_difftrees.datasets import load_dataset

    X, y = load_dataset(data, return_X_y=True)
    regression = data == "197_cpu_act"
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0,
                                          stratify=None if regression else y)
    est = make(device)
    t0 = time.perf_counter()
    est.fit(Xtr, ytr)
    return est.score(Xte, yte), time.perf_counter() - t0


def layer_checks(torch):
    from sklearn_difftrees import LatentTreeLayer, TreeEnsembleLayer

    rows = []
    for name, make in [("LatentTreeLayer(10, max_depth=4)", lambda: LatentTreeLayer(10, 4)),
                       ("TreeEnsembleLayer(10, 3, n_trees=4, depth=3)",
                        lambda: TreeEnsembleLayer(10, 3, n_trees=4, depth=3))]:
        x = torch.randn(64, 10, dtype=torch.float64)
        layer = make().double()
        out_cpu = layer(x)
        out_cpu = out_cpu[0] if isinstance(out_cpu, tuple) else out_cpu
        layer_gpu = layer.to("cuda")
        xg = x.to("cuda").requires_grad_(True)
        out = layer_gpu(xg)
        out = out[0] if isinstance(out, tuple) else out
        out.sum().backward()
        err = (out.detach().cpu() - out_cpu.detach()).abs().max().item()
        rows.append([name, str(tuple(out.shape)), f"{err:.1e}",
                     "yes" if bool(torch.isfinite(xg.grad).all()) else "NO"])
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="same run (it is small); "
                        "skips without CUDA")
    parser.add_argument("--out", default=None, help="write the markdown table here")
    parser.add_argument("--markdown", default=None, metavar="FILE",
                        help="rewrite the bench_gpu section of FILE (docs/benchmarks.md)")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    import torch

    if not torch.cuda.is_available():
        print("bench_gpu: no CUDA device, skipped")
        return 0
    torch.set_num_threads(1)
    rows = []
    for name, make, data in families():
        (s_cpu, t_cpu), (s_gpu, t_gpu) = (fit_score(make, d, data) for d in ("cpu", "cuda"))
        rows.append([name, data, f"{s_cpu:.4f}", f"{t_cpu:.2f}", f"{s_gpu:.4f}", f"{t_gpu:.2f}"])
        print(" | ".join(rows[-1]), flush=True)
    head = (f"GPU check, {time.strftime('%Y-%m-%d', time.gmtime())}: "
            f"{torch.cuda.get_device_name(0)}, CPU {cpu_model()} (1 torch thread), "
            f"torch {torch.__version__}. Defaults, one seeded 70/30 split; score = accuracy "
            "(vehicle) or R² (197_cpu_act).")
    table = markdown_table(["estimator", "data", "score cpu", "fit s cpu", "score cuda",
                            "fit s cuda"], rows)
    layers = markdown_table(["torch layer (float64)", "output", "max |cuda - cpu|",
                             "finite input grad"], layer_checks(torch))
    text = f"{head}\n\n{table}\n\n{layers}"
    print()
    print(text)
    write_out(args.out, text)
    if args.markdown:
        from sklearn_difftrees._provenance import replace_marked_section

        replace_marked_section(args.markdown, "bench_gpu", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``device="cuda"``: every torch-trained estimator on the GPU (skipped without CUDA).

CI has no GPU, so this module is skipped there; sessions lent a GPU run it
(``pytest tests/test_gpu.py``) beside ``benchmarks/bench_gpu.py``. It checks
what the CPU suite cannot: that the GPU path reaches the same fitted,
torch-free model (plain numpy arrays, compiled prediction, pickling), that the
CPU-only kernels (DGT's compiled route, TEL's conditional backend, the PAV
kernel) are replaced by their torch equivalents on the GPU and agree with
them, and that the categorical indicators and the early-stopping options take
the same route on both devices.
"""

import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

from sklearn.datasets import make_classification, make_regression  # noqa: E402
from sklearn.base import is_classifier, is_regressor  # noqa: E402

from sklearn_difftrees import TreeEnsembleLayer, TreeEnsembleLayerClassifier  # noqa: E402

from test_common import FAST_PARAMS, PUBLIC_ESTIMATORS  # noqa: E402

GPU_ESTIMATORS = [cls for cls in PUBLIC_ESTIMATORS if "device" in cls().get_params()]


def _data(cls, seed=0):
    if is_regressor(cls()):
        X, y = make_regression(n_samples=300, n_features=6, noise=0.1, random_state=seed)
    else:
        X, y = make_classification(n_samples=300, n_features=6, n_informative=4,
                                   n_classes=3, random_state=seed)
    # An integer column with five codes: categorical_features="auto" expands it.
    X = np.column_stack([X, np.random.RandomState(seed).randint(0, 5, len(X))])
    return X, y


def _no_tensors(obj, path="est"):
    """Paths of torch tensors / modules left in a fitted estimator's attributes."""
    found = []
    for key, val in vars(obj).items():
        if isinstance(val, (torch.Tensor, torch.nn.Module)):
            found.append(f"{path}.{key}")
        elif isinstance(val, (list, tuple)):
            for i, item in enumerate(val):
                if hasattr(item, "__dict__") and hasattr(item, "get_params"):
                    found += _no_tensors(item, f"{path}.{key}[{i}]")
    return found


@pytest.mark.parametrize("cls", GPU_ESTIMATORS, ids=lambda c: c.__name__)
def test_fit_on_cuda_gives_a_torch_free_model(cls):
    X, y = _data(cls)
    params = {**FAST_PARAMS[cls], "device": "cuda"}
    est = cls(**params).fit(X, y)
    assert not _no_tensors(est), _no_tensors(est)
    pred = est.predict(X)
    assert pred.shape == (len(X),) and np.all(np.isfinite(np.asarray(pred, dtype=float)))
    clone = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(clone.predict(X), pred)
    if getattr(est, "is_categorical_", None) is not None:
        assert est.is_categorical_[-1]


@pytest.mark.parametrize("cls", [c for c in GPU_ESTIMATORS if is_classifier(c())],
                         ids=lambda c: c.__name__)
def test_cuda_and_cpu_fits_reach_similar_accuracy(cls):
    """Same code path: the two devices differ only in reduction order, so on an
    easy problem both learn it (training accuracy within a few points)."""
    X, y = make_classification(n_samples=400, n_features=5, n_informative=3, n_redundant=0,
                               n_classes=2, class_sep=2.0, random_state=1)
    params = {k: v for k, v in FAST_PARAMS[cls].items() if k != "max_iter"}
    scores = [cls(**params, device=d).fit(X, y).score(X, y) for d in ("cpu", "cuda")]
    assert scores[1] > 0.85 and abs(scores[0] - scores[1]) < 0.08, scores


def test_tel_backend_auto_is_dense_on_cuda_and_conditional_is_refused():
    X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    est = TreeEnsembleLayerClassifier(n_trees=3, max_depth=3, max_iter=3, device="cuda",
                                      random_state=0).fit(X, y)
    assert est.predict(X).shape == (200,)
    with pytest.raises(ValueError, match="CPU"):
        TreeEnsembleLayerClassifier(backend="conditional", device="cuda", max_iter=2).fit(X, y)


def test_tel_layer_dense_on_cuda_matches_conditional_on_cpu():
    torch.manual_seed(0)
    layer = TreeEnsembleLayer(6, 2, n_trees=4, depth=4, backend="conditional").double()
    x = torch.randn(128, 6, dtype=torch.float64)
    out_cpu = layer(x)
    layer_gpu = TreeEnsembleLayer(6, 2, n_trees=4, depth=4, backend="dense").double()
    layer_gpu.load_state_dict(layer.state_dict())
    out_gpu = layer_gpu.to("cuda")(x.to("cuda"))
    np.testing.assert_allclose(out_gpu.detach().cpu().numpy(), out_cpu.detach().numpy(),
                               atol=1e-10)


def test_latent_tree_layer_on_cuda_uses_the_kernel_and_matches_pure_torch():
    """The default PAV on a GPU batch is the compiled kernel (a round trip to
    the host); it agrees with the pure-torch PAV on the GPU, values and
    gradients, in float64."""
    from sklearn_difftrees import LatentTreeLayer

    from sklearn_difftrees.latent_tree._torch import TreeIsotonicFunction

    torch.manual_seed(0)
    x = torch.randn(200, 6, dtype=torch.float64, device="cuda")
    calls = []
    real_apply = TreeIsotonicFunction.apply
    outs = []
    for backend in ("auto", "torch"):
        torch.manual_seed(1)
        layer = LatentTreeLayer(6, 3, backend=backend).double().to("cuda")
        xb = x.clone().requires_grad_(True)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(TreeIsotonicFunction, "apply",
                       lambda *a: calls.append(backend) or real_apply(*a))
            z = layer(xb)
        assert z.device.type == "cuda"
        (z * torch.arange(z.shape[1], device="cuda")).sum().backward()
        outs.append((z.detach().cpu().numpy(), xb.grad.cpu().numpy()))
    assert calls and set(calls) == {"auto"}  # the kernel ran for "auto" only
    np.testing.assert_allclose(outs[0][0], outs[1][0], atol=1e-10)
    np.testing.assert_allclose(outs[0][1], outs[1][1], atol=1e-8)


@pytest.mark.parametrize("params", [dict(max_features=1), dict(validation_fraction="oob")],
                         ids=["max_features", "oob"])
def test_forest_options_regrow_the_start_on_cuda(params):
    """The forest options set a member's CART start again after its module
    went to the GPU: the start is set on the CPU and the module moved back."""
    from sklearn_difftrees import DGTForestClassifier

    X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    est = DGTForestClassifier(n_estimators=3, max_depth=3, max_iter=3, device="cuda",
                              random_state=0, **params).fit(X, y)
    assert all(m.device_ == "cuda" for m in est.estimators_)
    assert not _no_tensors(est)
    assert est.score(X, y) > 0.6


def test_layers_on_cuda_take_float64_rows_and_reload_their_state():
    """The torch layers on the GPU (TEL's dense backend there): float64 rows
    into a float32 layer give float64 outputs; a LatentTreeLayer state saved
    after fix_pruning loads into a new layer on the GPU."""
    from sklearn_difftrees import LatentTreeLayer

    torch.manual_seed(0)
    x = torch.randn(64, 4, dtype=torch.float64, device="cuda")
    tel = TreeEnsembleLayer(4, 2, n_trees=3, depth=3).cuda()
    out = tel(x)
    assert out.dtype == torch.float64 and out.device.type == "cuda"
    out.sum().backward()
    assert tel.weight.grad.dtype == torch.float32
    layer = LatentTreeLayer(4, max_depth=3).cuda()
    layer(x.float())
    layer.eval()
    layer.fix_pruning(x.float())
    fresh = LatentTreeLayer(4, max_depth=3).cuda()
    fresh.load_state_dict(layer.state_dict())
    fresh.eval()
    assert fresh.fixed_pruning.device.type == "cuda"
    torch.testing.assert_close(fresh(x.float()), layer(x.float()))

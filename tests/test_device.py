"""``device="auto"``: the GPU only for large fits (no GPU needed: CUDA is faked
as available, and the small fits below must then stay on the CPU)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn.datasets import make_classification  # noqa: E402

import sklearn_difftrees as sd  # noqa: E402
from sklearn_difftrees._core._trainer import AUTO_CUDA_MIN_ROWS, resolve_device  # noqa: E402


@pytest.fixture
def fake_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)


@pytest.mark.parametrize("n_rows, auto_cuda, expected", [
    (AUTO_CUDA_MIN_ROWS - 1, True, "cpu"),
    (AUTO_CUDA_MIN_ROWS, True, "cuda"),
    (None, True, "cpu"),  # a stream of updates
    (10 * AUTO_CUDA_MIN_ROWS, False, "cpu"),
])
def test_auto_device_follows_the_rows(fake_cuda, n_rows, auto_cuda, expected):
    assert resolve_device("auto", n_rows, auto_cuda).type == expected
    assert resolve_device("cpu", n_rows, auto_cuda).type == "cpu"


def test_auto_device_is_the_cpu_without_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto", 10 * AUTO_CUDA_MIN_ROWS).type == "cpu"
    with pytest.raises(ValueError, match="CUDA"):
        resolve_device("cuda", 10)


def test_tel_auto_device_is_the_cpu_for_the_cpu_only_backend(fake_cuda):
    """backend="conditional" runs on the CPU: "auto" must not pick the GPU for
    it on large data (where it would then refuse to train)."""
    big = 10 * AUTO_CUDA_MIN_ROWS
    conditional = sd.TreeEnsembleLayerClassifier(backend="conditional")
    assert resolve_device("auto", big, conditional._auto_cuda).type == "cpu"
    assert resolve_device("auto", big, sd.TreeEnsembleLayerRegressor()._auto_cuda).type == "cuda"


def test_latent_tree_never_picks_the_gpu_by_itself(fake_cuda):
    for cls in (sd.LatentTreeClassifier, sd.LatentTreeRegressor):
        assert resolve_device("auto", 10 * AUTO_CUDA_MIN_ROWS, cls._auto_cuda).type == "cpu"


@pytest.mark.parametrize("make", [
    lambda: sd.DGTClassifier(max_iter=2, random_state=0),
    lambda: sd.LatentTreeClassifier(max_iter=2, random_state=0),
    lambda: sd.TreeEnsembleLayerClassifier(max_iter=2, random_state=0),
    lambda: sd.ConvexPolytopeTreeClassifier(max_depth=1, max_iter=2, growth_max_iter=2,
                                            random_state=0),
    lambda: sd.DGTForestClassifier(n_estimators=2, max_iter=2, random_state=0),
], ids=["DGT", "LatentTree", "TEL", "CPT", "DGTForest"])
def test_small_fits_stay_on_the_cpu_when_a_gpu_is_seen(fake_cuda, make):
    X, y = make_classification(n_samples=150, n_features=4, random_state=0)
    est = make().fit(X, y)
    members = getattr(est, "estimators_", [est])
    assert all(m.device_ == "cpu" for m in members)
    assert np.isfinite(est.predict_proba(X)).all()

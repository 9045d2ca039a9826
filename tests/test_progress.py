"""Progress output of every long fit (``verbose``), with and without tqdm.

``verbose=0`` prints nothing; ``1`` a bar with the time left (tqdm, on
stderr) or, without tqdm, one line per step with the time left (stdout);
``2`` adds the step's numbers (losses, validation score) as lines.
"""

import sys
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_difftrees import (
    ConvexPolytopeTreeClassifier,
    DGTBanditClassifier,
    DGTClassifier,
    DGTForestClassifier,
    LatentTreeClassifier,
    NonGreedyObliqueTreeClassifier,
    TreeEnsembleLayerClassifier,
)
from sklearn_difftrees._core._progress import Progress, format_seconds

pytest.importorskip("tqdm")  # in the test extra; the no-tqdm runs monkeypatch it away


@pytest.fixture(params=["tqdm", "no_tqdm"])
def tqdm_mode(request, monkeypatch):
    if request.param == "no_tqdm":
        # ``import tqdm`` raises ImportError while sys.modules holds None.
        monkeypatch.setitem(sys.modules, "tqdm", None)
    return request.param


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    X = rng.randn(120, 4)
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    return X, y


# (estimator, unit of the bar, name of the training loss in the lines)
CASES = {
    "dgt": (DGTClassifier(max_depth=2, max_iter=3, hidden_width=8, random_state=0),
            "epoch", "loss"),
    "latent_tree": (LatentTreeClassifier(max_depth=2, max_iter=3, random_state=0),
                    "epoch", "loss"),
    "non_greedy": (NonGreedyObliqueTreeClassifier(max_depth=2, max_iter=3, random_state=0),
                   "epoch", "bound"),
    "tel": (TreeEnsembleLayerClassifier(n_trees=2, max_depth=2, max_iter=3, random_state=0),
            "epoch", "loss"),
    "polytope": (ConvexPolytopeTreeClassifier(max_depth=1, max_facets=2, growth_max_iter=2,
                                              max_iter=3, random_state=0), "level", "splits"),
    "forest": (DGTForestClassifier(n_estimators=3, max_depth=2, max_iter=2, hidden_width=8,
                                   random_state=0), "tree", "epochs"),
    "bandit": (DGTBanditClassifier(max_depth=2, n_passes=2, random_state=0),
               "round", "mean_played_loss"),
}


def _fit(est, data, verbose, capsys):
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.set_params(verbose=verbose).fit(*data)
    return capsys.readouterr()


@pytest.mark.parametrize("case", sorted(CASES))
def test_verbose_levels_of_every_family(case, data, tqdm_mode, capsys):
    est, unit, loss_name = CASES[case]
    name = type(est).__name__

    silent = _fit(est, data, 0, capsys)
    assert silent.out == "" and silent.err == ""

    one = _fit(est, data, 1, capsys)
    if tqdm_mode == "tqdm":
        # A bar (on stderr) with the time left: "<elapsed><<left>".
        assert name in one.err and "%|" in one.err and unit in one.err
        assert "<" in one.err
        assert one.out == ""
    else:
        lines = [line for line in one.out.splitlines() if f"] {unit} " in line]
        assert lines and all("left" in line for line in lines)
        assert all(f" {loss_name} " not in line for line in lines)
        assert one.err == ""

    two = _fit(est, data, 2, capsys)
    lines = [line for line in two.out.splitlines() if f"] {unit} " in line]
    assert lines and all(f" {loss_name} " in line for line in lines)
    if tqdm_mode == "tqdm":
        assert "%|" in two.err


def test_epoch_lines_carry_the_validation_score(data, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    est = DGTClassifier(max_depth=2, max_iter=4, hidden_width=8, init="random",
                        random_state=0)
    out = _fit(est, data, 2, capsys).out
    epochs = [line for line in out.splitlines() if "] epoch " in line]
    assert len(epochs) == est.n_iter_
    for k, line in enumerate(epochs, start=1):
        assert f"epoch {k}/4" in line
        assert f"val_score {est.validation_scores_[k - 1]:.5f}" in line
        assert f"loss {est.loss_curve_[k - 1]:.5f}" in line


def test_forest_bar_over_trees_with_parallel_members(data, capsys):
    forest = DGTForestClassifier(n_estimators=3, max_depth=2, max_iter=2, hidden_width=8,
                                 random_state=0, n_jobs=2)
    captured = _fit(forest, data, 2, capsys)
    # The main process advances the bar as the workers' members finish ...
    assert "3/3" in captured.err and "tree" in captured.err
    members = sorted(line.split("member ")[1].split()[0] for line in captured.out.splitlines()
                     if "] tree " in line)
    assert members == ["0", "1", "2"]
    # ... and progress does not change the forest: same members, same order.
    serial = DGTForestClassifier(**{**forest.get_params(), "verbose": 0, "n_jobs": 1})
    serial.fit(*data)
    np.testing.assert_array_equal(forest.predict_proba(data[0]), serial.predict_proba(data[0]))


def test_progress_unit(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    p = Progress(4, desc="M", unit="step", verbose=1)
    for _ in range(2):
        p.update(info={"loss": 0.5})
    p.close("stopped early")
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("[M] step 1/4") and "left" in out[0] and "loss" not in out[0]
    assert out[-1].startswith("[M] 2/4 steps") and out[-1].endswith("stopped early")
    p.close()  # closing twice prints nothing more
    assert capsys.readouterr().out == ""
    Progress(4, desc="M", verbose=0).update()
    assert capsys.readouterr().out == ""


def test_divergence_ends_the_bar_and_raises(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    from sklearn_difftrees._core._monitor import EpochMonitor

    monitor = EpochMonitor(name="M", max_iter=5, n_iter_no_change=3, tol=0.0,
                           learning_rate=1.0, has_validation=True, verbose=1)
    monitor.end_epoch(1, 0.5, 0.0, (0.4, 0.9))
    with pytest.raises(FloatingPointError, match="diverged"):
        monitor.end_epoch(2, 0.5, 0.0, (float("nan"), 0.9))
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("[M] 1/5 epochs") and out[-1].endswith("diverged")


def test_format_seconds():
    assert format_seconds(3.21) == "3.2s"
    assert format_seconds(42) == "42s"
    assert format_seconds(187) == "3m07s"
    assert format_seconds(3720) == "1h02m"


def test_auto_init_shows_both_runs_and_the_choice(data, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    est = DGTClassifier(max_depth=2, max_iter=4, n_iter_no_change=10, hidden_width=8,
                        random_state=0)
    out = _fit(est, data, 2, capsys).out
    assert len([line for line in out.splitlines() if "] epoch 1/4" in line]) == 2
    assert f"kept the {est.init_} start (paired statistic" in out.splitlines()[-1]

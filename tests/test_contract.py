"""The scikit-learn contract in everyday use: labels, DataFrames, pipelines, errors, export."""

import copy
import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from scipy import sparse  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.datasets import make_classification, make_regression  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from sklearn_difftrees import DGTClassifier, DGTRegressor, ObliqueTree, export_text, plot_tree  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

FAST = dict(max_depth=2, max_iter=8, hidden_width=8, random_state=0)
ESTIMATORS = [DGTClassifier, DGTRegressor]


@pytest.fixture(scope="module")
def clf_data():
    return make_classification(200, 5, n_informative=3, random_state=0)


@pytest.fixture(scope="module")
def fitted_clf(clf_data):
    X, y = clf_data
    return DGTClassifier(**{**FAST, "max_depth": 3}).fit(X, y)


def _data(cls, n=120, p=4, seed=0):
    if cls is DGTClassifier:
        return make_classification(n, p, n_informative=2, n_redundant=0, random_state=seed)
    return make_regression(n, p, random_state=seed)


# ------------------------------------------------------------------- labels
def test_string_labels():
    X, y = make_classification(150, 4, n_informative=3, n_redundant=0, n_classes=3, random_state=1)
    names = np.array(["cat", "dog", "eel"])
    est = DGTClassifier(**FAST).fit(X, names[y])
    np.testing.assert_array_equal(est.classes_, names)
    pred = est.predict(X)
    assert set(pred) <= set(names)
    # Same fit as with the integer codes: labels are only re-encoded.
    ref = DGTClassifier(**FAST).fit(X, y)
    np.testing.assert_array_equal(pred, names[ref.predict(X)])
    assert est.n_classes_ == 3 and est.predict_proba(X).shape == (150, 3)


def test_non_contiguous_integer_labels():
    X, y = make_classification(150, 4, n_informative=2, n_redundant=0, random_state=2)
    labels = np.where(y == 1, 205, 101)
    est = DGTClassifier(**FAST).fit(X, labels)
    np.testing.assert_array_equal(est.classes_, [101, 205])
    pred = est.predict(X)
    assert set(np.unique(pred)) <= {101, 205}
    ref = DGTClassifier(**FAST).fit(X, y)
    np.testing.assert_array_equal(pred, np.where(ref.predict(X) == 1, 205, 101))
    assert est.score(X, labels) == ref.score(X, y)


# --------------------------------------------------------------- DataFrames
def test_dataframe_feature_names_and_export_text():
    pd = pytest.importorskip("pandas")
    X, y = make_classification(150, 4, n_informative=2, n_redundant=0, random_state=3)
    cols = ["height_cm", "weight_kg", "age_years", "score_pts"]
    df = pd.DataFrame(X, columns=cols)
    est = DGTClassifier(**FAST).fit(df, y)
    np.testing.assert_array_equal(est.feature_names_in_, cols)
    assert est.n_features_in_ == 4
    text = export_text(est, top_k=4)
    assert any(c in text for c in cols)
    assert "feature_" not in text
    # Predicting from the same frame or from the bare array agree.
    with pytest.warns(UserWarning, match="valid feature names"):
        from_array = est.predict(df.to_numpy())
    np.testing.assert_array_equal(est.predict(df), from_array)
    with pytest.raises(ValueError, match="feature names"):
        est.predict(df[cols[::-1]])


# ----------------------------------------------------- meta-estimators, clone
def test_pipeline_and_grid_search():
    X, y = make_classification(160, 4, n_informative=2, n_redundant=0, random_state=4)
    pipe = make_pipeline(StandardScaler(), DGTClassifier(max_iter=3, hidden_width=8, random_state=0))
    grid = GridSearchCV(pipe, {"dgtclassifier__max_depth": [1, 2]}, cv=2)
    grid.fit(X, y)
    assert grid.best_params_["dgtclassifier__max_depth"] in (1, 2)
    assert len(grid.cv_results_["mean_test_score"]) == 2
    assert np.all(np.isfinite(grid.cv_results_["mean_test_score"]))
    best = grid.best_estimator_[-1]
    assert best.tree_.max_depth == grid.best_params_["dgtclassifier__max_depth"]
    assert grid.predict(X).shape == (160,)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_clone_is_unfitted(cls):
    X, y = _data(cls)
    est = cls(**FAST).fit(X, y)
    c = clone(est)
    assert c.get_params() == est.get_params()
    assert not hasattr(c, "tree_") and not hasattr(c, "_module_state")
    with pytest.raises(NotFittedError):
        c.predict(X)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_not_fitted_errors(cls):
    X, _ = _data(cls)
    est = cls(**FAST)
    for method in ("predict", "apply", "decision_path"):
        with pytest.raises(NotFittedError):
            getattr(est, method)(X)
    with pytest.raises(NotFittedError):
        export_text(est)
    with pytest.raises(NotFittedError):
        plot_tree(est)
    with pytest.raises(NotFittedError):
        est.get_depth()
    with pytest.raises(NotFittedError):
        est.feature_importances_
    if cls is DGTClassifier:
        with pytest.raises(NotFittedError):
            est.predict_proba(X)


# --------------------------------------------------------------- bad inputs
@pytest.mark.parametrize("cls", ESTIMATORS)
def test_bad_inputs_give_clear_errors(cls):
    X, y = _data(cls)
    est = cls(**FAST)
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.fit(X_nan, y)
    X_inf = X.copy()
    X_inf[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        est.fit(X_inf, y)
    with pytest.raises(ValueError, match="minimum of 2 is required"):
        est.fit(X[:1], y[:1])
    w = np.ones(len(y))
    w[5] = -1.0
    with pytest.raises(ValueError, match="non-negative"):
        est.fit(X, y, sample_weight=w)
    with pytest.raises(ValueError, match="non-zero|positive"):
        est.fit(X, y, sample_weight=np.zeros(len(y)))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        est.fit(X, y[:-1])
    with pytest.raises(TypeError, match="[Ss]parse"):
        est.fit(sparse.csr_matrix(X), y)

    est.fit(X, y)
    with pytest.raises(ValueError, match="4 features"):
        est.predict(X[:, :3])
    with pytest.raises(ValueError, match="NaN"):
        est.predict(X_nan)
    with pytest.raises(TypeError, match="[Ss]parse"):
        est.predict(sparse.csr_matrix(X))
    for method in ("apply", "decision_path"):
        with pytest.raises(ValueError, match="4 features"):
            getattr(est, method)(X[:, :3])


def test_single_class_is_refused():
    X = np.random.RandomState(0).normal(size=(30, 3))
    with pytest.raises(ValueError, match="only one class"):
        DGTClassifier(**FAST).fit(X, np.full(30, 7))
    with pytest.raises(ValueError, match="Unknown label type"):
        DGTClassifier(**FAST).fit(X, np.linspace(0, 1, 30))


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(max_depth=0), "max_depth"),
        (dict(max_depth=13), "max_depth"),
        (dict(learning_rate=0.0), "learning_rate"),
        (dict(optimizer="lbfgs"), "optimizer"),
        (dict(hidden_width="big"), "hidden_width"),
        (dict(validation_fraction=1.0), "validation_fraction"),
    ],
)
def test_invalid_parameters(params, match):
    X, y = _data(DGTClassifier)
    with pytest.raises(ValueError, match=match):
        DGTClassifier(**{**FAST, **params}).fit(X, y)


def test_inputs_not_modified(clf_data):
    X, y = clf_data
    X32 = X.astype(np.float32)
    w = np.linspace(0.5, 2, len(y))
    copies = X32.copy(), y.copy(), w.copy()
    est = DGTClassifier(**FAST).fit(X32, y, sample_weight=w)
    est.predict(X32)
    np.testing.assert_array_equal(X32, copies[0])
    np.testing.assert_array_equal(y, copies[1])
    np.testing.assert_array_equal(w, copies[2])
    # float32 and float64 inputs route identically through the fitted tree
    # for float32-representable values.
    np.testing.assert_array_equal(est.predict(X32), est.predict(X32.astype(np.float64)))


# ------------------------------------------------------ tree introspection
def test_apply_decision_path_depth_leaves(fitted_clf, clf_data):
    est = fitted_clf
    X, _ = clf_data
    leaves = est.apply(X)
    n_int = 2**3 - 1
    assert leaves.shape == (len(X),)
    assert np.all((leaves >= n_int) & (leaves < 2 * n_int + 1))
    np.testing.assert_array_equal(leaves, est.tree_.apply(X))
    P = est.decision_path(X)
    assert P.shape == (len(X), 2**4 - 1)
    np.testing.assert_array_equal(P.sum(axis=1).A1, 4)
    np.testing.assert_array_equal(P.toarray()[np.arange(len(X)), leaves], 1)
    # Training data reaches exactly the active nodes.
    np.testing.assert_array_equal(np.asarray(P.sum(axis=0)).ravel() > 0, est.tree_.active)
    assert est.get_n_leaves() == len(np.unique(leaves))
    # Depth counts the splits (both children reached) on a path to a reached
    # leaf, not the pass-through nodes the exports hide.
    active = est.tree_.active
    splits = [0] * active.size
    for node in range(1, active.size):
        parent = (node - 1) // 2
        splits[node] = splits[parent] + int(active[2 * parent + 1] and active[2 * parent + 2])
    assert est.get_depth() == max(splits[n] for n in np.flatnonzero(active[n_int:]) + n_int)
    assert est.get_n_leaves() <= 2 ** est.get_depth()
    # Predictions come from the reached leaf.
    np.testing.assert_array_equal(est.predict_proba(X), est.tree_.value[leaves - n_int])


def test_feature_importances(fitted_clf, clf_data):
    est = fitted_clf
    imp = est.feature_importances_
    assert imp.shape == (5,)
    assert np.all(imp >= 0)
    np.testing.assert_allclose(imp.sum(), 1.0)
    # Independent recomputation from the definition: every split's features'
    # shares of |w_j| * std_j, weighted by the training rows it divides
    # (reaching it, times the fractions going left and right) times the
    # squared gap between the mean predictions of the rows on its two sides.
    X, _ = clf_data
    tree = est.tree_
    m = tree.n_internal
    P = est.decision_path(X).toarray()
    proba = est.predict_proba(X)
    divided = np.zeros(m)
    for i in range(m):
        left, right = P[:, 2 * i + 1] > 0, P[:, 2 * i + 2] > 0
        if left.any() and right.any():
            gap = ((proba[left].mean(0) - proba[right].mean(0)) ** 2).sum()
            divided[i] = left.sum() * right.sum() / (left.sum() + right.sum()) / len(X) * gap
    use = np.abs(tree.weights) * X.std(axis=0)
    shares = use / np.where(use.sum(1, keepdims=True) > 0, use.sum(1, keepdims=True), 1)
    raw = divided @ shares
    np.testing.assert_allclose(imp, raw / raw.sum(), rtol=1e-10)
    # A split's scale routes nothing differently and does not count.
    scaled = copy.deepcopy(est)
    factor = np.linspace(0.1, 30.0, m)[:, None]
    scaled.tree_.weights, scaled.tree_.bias = tree.weights * factor, tree.bias * factor[:, 0]
    np.testing.assert_array_equal(scaled.apply(X), est.apply(X))
    np.testing.assert_allclose(scaled.feature_importances_, imp, rtol=1e-12)


def test_feature_importances_of_a_tree_predicting_one_value_are_zero():
    """Splits whose two sides predict alike move no prediction: a tree fitted
    to a constant target (58 leaves by default, all predicting it) has no
    important feature, as scikit-learn's tree of one leaf."""
    X = np.random.RandomState(0).randn(300, 4)
    est = DGTRegressor(random_state=0).fit(X, np.full(300, 2.5))
    assert est.get_n_leaves() > 1 and np.ptp(est.predict(X)) < 1e-9
    np.testing.assert_allclose(est.feature_importances_, 0.0, atol=1e-12)


def test_feature_importances_ignore_useless_feature():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(300, 3))
    X[:, 2] = 5.0  # constant: carries no information, and has std 0
    y = (X[:, 0] > 0).astype(int)
    est = DGTClassifier(max_depth=1, max_iter=20, hidden_width=8, random_state=0).fit(X, y)
    imp = est.feature_importances_
    assert imp[2] == 0.0
    assert imp[0] > imp[1]
    # Its weights were never trained: they are dropped, so a test point with
    # another value of the constant feature is routed as if it had 5.0.
    np.testing.assert_array_equal(est.tree_.weights[:, 2], 0.0)
    X_other = X.copy()
    X_other[:, 2] = -1e6
    np.testing.assert_array_equal(est.apply(X_other), est.apply(X))


# ------------------------------------------------------------------- export
def _hand_made(est_cls, weights, bias, value, X, **fit_attrs):
    """An estimator whose tree_ is set by hand (to control the export)."""
    est = est_cls()
    est.tree_ = ObliqueTree(weights, bias, value).finalize(X)
    est.n_features_in_ = weights.shape[1]
    est._feature_mean = X.mean(0)
    est._feature_scale = np.ones(weights.shape[1])
    for k, v in fit_attrs.items():
        setattr(est, k, v)
    return est


def test_export_text_top_k_and_more(fitted_clf):
    text = export_text(fitted_clf, top_k=2, feature_names=list("abcde"))
    lines = text.strip().splitlines()
    split_lines = [ln for ln in lines if "<=" in ln or "> " in ln]
    assert split_lines
    # Dense oblique weights over 5 features: 3 more than shown on every split.
    for ln in split_lines:
        assert "(+3 more)" in ln
    assert "(+" not in export_text(fitted_clf, top_k=5)
    assert "class:" in text


def test_export_text_hides_pass_through_and_inactive_nodes():
    X = np.array([[0.0, -1.0], [0.0, 1.0], [0.0, 2.0], [0.0, -2.0]])
    W = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, -7.0]])
    b = np.array([-10.0, 0.0, 0.0])  # root sends everything left: a pass-through
    V = np.array([[1.5], [2.5], [99.0], [77.0]])
    est = _hand_made(DGTRegressor, W, b, V, X, n_outputs_=1)
    text = export_text(est, feature_names=["u", "v"], decimals=1)
    lines = text.strip().splitlines()
    # The root's split is not a decision: node 1 is shown in its place, with
    # its two lines and two leaves; node 2's subtree is never printed.
    assert lines == [
        "|--- 1*v <= 0", "|   |--- value: [1.5]", "|--- 1*v >  0", "|   |--- value: [2.5]",
    ]
    assert "no training samples" not in text and "*u" not in text
    # What a hidden split's empty side predicts: the mean of the shown leaves.
    np.testing.assert_allclose(est.predict(np.array([[20.0, 0.0]])), [2.0])


def test_export_text_max_depth_truncates(fitted_clf):
    text = export_text(fitted_clf, max_depth=0)  # the root's split, as scikit-learn's
    assert "truncated branch of depth 2" in text
    assert "class:" not in text


def test_export_text_class_names(fitted_clf):
    text = export_text(fitted_clf, class_names=["neg", "pos"])
    assert "class: neg" in text or "class: pos" in text
    with pytest.raises(ValueError, match="class_names"):
        export_text(fitted_clf, class_names=["a", "b", "c"])
    with pytest.raises(ValueError, match="feature_names"):
        export_text(fitted_clf, feature_names=["a"])


def test_export_dispatches_on_the_fitted_tree_hook(fitted_clf):
    """A tree kind the core does not know renders through its own hook (the
    FittedTree protocol): the three exports pass it the estimator, the
    resolved feature and class names and the validated arguments, and render
    the view it returns."""
    import copy

    import matplotlib.pyplot as plt

    from sklearn_difftrees import export_graphviz
    from sklearn_difftrees._core._tree_view import TreeView, ViewNode

    calls = []

    class OtherTree(type(fitted_clf.tree_)):
        def _tree_view(self, est, names, class_names, decimals, top_k):
            calls.append((est, names, class_names, decimals, top_k))
            split = ViewNode(0, split=(["my split"], "1"), samples=3.0,
                             children=[ViewNode(1, label="my leaf a", samples=1.0),
                                       ViewNode(2, label="my leaf b", samples=2.0)])
            return TreeView(split)

    est = copy.deepcopy(fitted_clf)
    est.tree_.__class__ = OtherTree
    text = export_text(est, feature_names=list("abcde"), max_depth=4, top_k=2)
    assert text == ("|--- my split <= 1\n|   |--- my leaf a\n"
                    "|--- my split >  1\n|   |--- my leaf b\n")
    assert calls[-1] == (est, list("abcde"), list(est.classes_), 2, 2)
    fig, ax = plt.subplots()
    try:
        texts = plot_tree(est, ax=ax, fontsize=6)
        assert [t.get_text().split("\n")[0] for t in texts] == [
            "my split <= 1", "my leaf a", "my leaf b"]
        assert calls[-1][1] == [f"feature_{j}" for j in range(5)]
    finally:
        plt.close(fig)
    assert "my leaf b" in export_graphviz(est)
    # The default path is untouched for the core's own tree.
    assert "my split" not in export_text(fitted_clf)


def test_plot_tree_returns_one_text_per_shown_node(fitted_clf):
    import matplotlib.pyplot as plt

    from sklearn_difftrees._core.export import tree_view

    fig, ax = plt.subplots()
    try:
        anns = plot_tree(fitted_clf, ax=ax, feature_names=list("abcde"))
        shown = list(tree_view(fitted_clf).root.walk())
        assert len(anns) == len(shown) <= fitted_clf.tree_.node_count
        texts = [a.get_text() for a in anns]
        assert sum("class:" in t for t in texts) == sum(v.is_leaf for v in shown)
        assert any("<=" in t for t in texts)
        assert all(isinstance(a, matplotlib.text.Text) for a in anns)
        anns1 = plot_tree(fitted_clf, ax=ax, max_depth=0)  # the root's split
        assert 1 <= len(anns1) <= 3
    finally:
        plt.close(fig)

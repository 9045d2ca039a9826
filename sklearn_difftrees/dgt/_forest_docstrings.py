"""The numpydoc sections the two DGT forests share (parameters, attributes,
references), formatted per task in ``_forest``."""

from .._core.categorical import CATEGORICAL_ATTR_DOC, CATEGORICAL_PARAM_DOC
from ._classes import _DOC_TREE_PARAMS, _FOREST_DOC_MAX_DEPTH, _INIT_AUTO_DOC

_FOREST_DOC_VALIDATION = """    validation_fraction : float in (0, 1) or "oob", default=0.1
        Fraction of each member's sample held out for early stopping. ``"oob"``:
        every member trains on all the rows of its bootstrap sample and stops
        on its out-of-bag rows instead (those its sample left out, weighted by
        ``sample_weight``: about a third of the rows, where a tenth of the
        sample is about 6%); a member without two out-of-bag rows
        (``bootstrap=False``, tiny data) holds out 0.1 of its rows, and the
        members' own ``validation_fraction`` reads 0.1. With
        ``oob_score=True`` the OOB score then reuses the rows the members
        stopped on, so it is somewhat optimistic. Not the default: measured,
        it lowers the regressor's RMSE by 0 to 3.5% for 1.3 to 2.2 times the
        fit time (docs/dgt.md, "Forest defaults").
"""
# The forests keep a patience of 20 epochs where a single tree waits 50: the
# longer patience cost 2x the time for no measured gain (pima -1.5 points,
# vehicle +1.0); their members start from their own bootstrap CART (init="cart")
# where a single tree trains from two starts (docs/dgt.md, "Forest defaults").
# validation_fraction also accepts "oob" (members stop on their out-of-bag rows).
_FOREST_DOC_SUBTREE = """    subtree_depth : "auto", int or None, default="auto"
        Depth of the greedy subtree grown below every leaf of every member
        once the members are trained: a CART (Gini / squared error, as
        scikit-learn's) on the member's bootstrap rows that reach the leaf,
        whose leaves then predict their rows' class proportions or mean
        target (``subtrees_``). ``None`` grows each until its leaves are pure,
        as :class:`~sklearn.ensemble.RandomForestClassifier` grows its trees;
        ``0`` grows none: every member predicts with its own leaves (the
        paper's DGT-Forest). ``"auto"`` grows them until pure, then cuts them
        all at the depth whose out-of-bag predictions score best (accuracy,
        or R^2 averaged over the outputs), among 0 (none), 1, 2, 3, 4, 6, 8, 12, 16, 24,
        32 and as grown; the shallowest of equal scores (``subtree_depth_``,
        ``subtree_scores_``). Without out-of-bag rows (``bootstrap=False``)
        it keeps them as grown, and where no leaf could be split it keeps
        none. A member's trained tree is bounded in depth
        (every row is scored at all ``2**max_depth`` leaves while it
        trains); the subtrees partition its leaves' rows further at the cost
        of one small CART per leaf (a tenth to a fifth of the fit on tables
        of thousands of rows). Measured, they bring the default forest from
        6 points behind RandomForest to within one on letter (26 classes)
        and from 15% to within 1% of its RMSE on 537_houses; on small tables
        pure subtrees add variance, which the out-of-bag cut removes
        (docs/dgt.md, "Greedy subtrees below the leaves"). With them, class
        weights change the splits and the proportions of mixed leaves but
        not the pure leaves' (as in a RandomForest).
    min_weight_fraction_leaf : float in [0, 0.5], default=0.0
        Least weight of a subtree's leaf, as a fraction of the member's
        bootstrap weight (scikit-learn's forests' parameter of that name,
        applied to the subtrees; the members' trained trees have none).
        Larger values grow smaller subtrees; with ``class_weight``, rows of
        a lightly weighted class then cannot form leaves of their own.
"""
_FOREST_DOC_TREE_PARAMS = _FOREST_DOC_MAX_DEPTH + _FOREST_DOC_SUBTREE + _DOC_TREE_PARAMS.replace(
    "n_iter_no_change : int, default=50", "n_iter_no_change : int, default=20").replace(
    'init : {"auto", "random", "cart"}, default="auto"',
    'init : {"random", "cart"}, default="cart"').replace(_INIT_AUTO_DOC, "").replace(
    """    validation_fraction : float, default=0.1
        Fraction of the training data held out for early stopping.
""", _FOREST_DOC_VALIDATION)
assert _FOREST_DOC_VALIDATION in _FOREST_DOC_TREE_PARAMS

__all__ = ["_DOC_FOREST_ATTRS", "_MEMBER_PARAMS_NOTE", "_REFERENCES", "_forest_params_doc"]


def _forest_params_doc(oob_attr):
    """Parameters section of a forest's docstring."""
    return (
        f"""
    Parameters
    ----------
    n_estimators : int, default=30
        Number of trees (30 in the paper).
    max_samples : float in (0, 1] or int >= 1, default=1.0
        Size of each bootstrap sample: a float is a fraction of the training
        rows (of positive weight; the paper picks it from {{0.7, 0.85, 0.9,
        1}}), an int a number of rows (at most that many). Must be 1.0 when
        ``bootstrap=False``.
    max_features : {{"sqrt", "log2"}}, int, float or None, default=None
        Features the greedy start of each member (``init="cart"``: the CART
        of its rows) draws at random at each of its splits, as
        :class:`~sklearn.ensemble.RandomForestClassifier` reads it: ``"sqrt"``
        / ``"log2"`` of the number of features, a float a fraction of them,
        an int a count, ``None`` all of them (at least one; the indicator
        columns of categorical features count). It decorrelates the members'
        starts; the gradient training then moves every split over all the
        features (the splits stay oblique), so it does not restrict the
        fitted trees. No effect with ``init="random"``. The resolved count
        is ``max_features_``. Not the default: measured, ``"sqrt"`` gains on
        many classes or features (letter, dna) and loses on small tables
        (docs/dgt.md, "Forest defaults").
    bootstrap : bool, default=True
        Draw each member's rows with replacement. When False every member
        trains on all the rows and the members differ only by their seeds
        (initialization, validation split, batch order).
    oob_score : bool or callable, default=False
        Score the forest on the out-of-bag rows (requires ``bootstrap``):
        sets ``oob_score_`` and ``{oob_attr}``. A callable
        ``metric(y_true, y_pred)`` scores them instead of the default score,
        as in scikit-learn's forests (a classifier's ``y_true`` and
        ``y_pred`` are class indices into ``classes_``; no sample weights).
    n_jobs : int, default=None
        Number of members fitted in parallel by :class:`joblib.Parallel`
        (``None`` means 1 unless in a :func:`joblib.parallel_backend` context,
        ``-1`` means all processors). When it is not 1, torch is limited to
        one thread inside each worker. Any joblib backend works, for
        instance ``with joblib.parallel_backend("dask"):`` (with a
        ``dask.distributed.Client``) or ``"ray"`` (after
        ``ray.util.joblib.register_ray()``).
"""
        + _FOREST_DOC_TREE_PARAMS
        + CATEGORICAL_PARAM_DOC
        + """    random_state : int, RandomState instance or None, default=None
        Draws one seed per member (its initialization, validation split and
        batch order) and the bootstrap samples. Two fits with the same integer
        give identical forests, whatever ``n_jobs`` (for the same number of
        torch threads per fit). Never passed to the members as such.
    device : {"auto", "cpu", "cuda"}, default="auto"
        Where the members train. ``"auto"`` is CUDA when torch sees a GPU and
        ``X`` has at least 1,000,000 rows (on smaller tables a GPU is slower
        than the CPU), else the CPU; all members train on one device. Prediction is always on the CPU, without torch.
    verbose : int, default=0
        ``0`` is silent; ``1`` shows a progress bar over the trees with the
        time left (also with ``n_jobs > 1``; one line per finished tree
        without tqdm, see the ``progress`` extra); ``2`` adds a line per tree
        (its epochs and best validation score); ``>= 3`` also passes
        ``verbose - 2`` to the members (their epochs).
"""
    )


_MEMBER_PARAMS_NOTE = """
    The parameters from ``max_depth`` to ``tol`` (but the forest's own
    ``subtree_depth`` and ``min_weight_fraction_leaf``) and ``device`` are
    those of :class:`{member}`, passed unchanged to every member, with the
    same
    defaults except ``max_depth`` (one depth for all members, ``"auto"``
    choosing it once on the forest's rows), the patience
    ``n_iter_no_change=20``, ``init="cart"`` (each member starts from the
    CART of its own bootstrap sample). ``warm_start`` and ``greedy_floor``
    are not offered (every member applies the greedy floor).

    Read more in the :doc:`User Guide </dgt>`.
"""

_DOC_FOREST_ATTRS = """
    estimators_ : list of {member}
        The fitted members (torch-free). A classifier's members are fitted on
        the class indices ``0 .. n_classes_ - 1``: their ``classes_`` index
        the forest's ``classes_``. Every member takes the forest's ``X``
        (its ``n_features_in_``, ``feature_names_in_`` and
        ``categorical_features`` are the forest's): it was trained on the
        columns the forest expanded once (the indicator columns of
        categorical features appended, which its ``tree_`` splits on), and
        its ``predict(X)`` expands them as the forest does.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit (only when X has string column
        names).
""" + CATEGORICAL_ATTR_DOC + """    n_iter_ : ndarray of shape (n_estimators,)
        Number of epochs each member ran.
    max_features_ : int
        The number of features the members' starts draw at each split
        (``max_features`` resolved).
    max_depth_ : int
        The members' depth: ``max_depth``, or the depth ``"auto"`` chose.
    depth_scores_ : ndarray of shape (8,) or None
        With ``max_depth="auto"``: mean cross-validated score (weighted
        accuracy / minus the weighted mean squared error) of the greedy tree
        at depths 1 to 8 on the forest's training rows. ``None`` otherwise.
    subtrees_ : list of AxisSubtrees or None
        The subtrees below the leaves of every member (``subtree_depth``),
        as node arrays (``root``: one node per leaf of the member's tree,
        where its rows continue; ``feature``, ``threshold`` in raw feature
        units, ``left``, ``right``, ``value`` in the forest's output columns,
        ``n_node_samples``). ``None`` with ``subtree_depth=0``, or when
        ``"auto"`` chose 0.
    subtree_depth_ : int
        Depth of the deepest subtree kept (0: none); with ``"auto"``, the
        cut it chose.
    subtree_scores_ : dict or None
        With ``subtree_depth="auto"``: the out-of-bag score (accuracy, or
        R^2 averaged uniformly over the outputs, weighted by
        ``sample_weight`` times the class weights, as the members train) of
        every depth tried, keyed
        by it: 0 (the members' own leaves), the cuts, and the depth of the
        deepest subtree (the subtrees as grown). The same rows choose the
        depth that ``oob_score_`` scores, so that score is somewhat
        optimistic. ``None`` otherwise, without out-of-bag rows, or where no
        leaf could be split (nothing to choose).
    feature_importances_ : ndarray of shape (n_features_in_,)
        Mean of the members' importances (of their trained trees; the
        subtrees are not counted), renormalized to sum to one.
    oob_score_ : float
        Score ({score}, or the ``oob_score`` callable's) of the out-of-bag
        predictions, weighted by ``sample_weight`` (the default score), over
        the rows that at least one member left out of its sample. Only with
        ``oob_score``.
"""

_REFERENCES = """
    References
    ----------
    A. Karthikeyan, N. Jain, N. Natarajan, P. Jain. "Learning Accurate
    Decision Trees with Bandit Feedback via Quantized Gradient Descent".
    TMLR, 2022. Section 5.2 and Appendix C ("DGT-Forest").
"""


"""ONNX export: the public :func:`to_onnx` and the graph pieces methods share.

ONNX-ML's ``TreeEnsemble*`` operators compare one feature with a threshold,
so they cannot hold oblique or polytope splits. The graphs here are built
from standard ONNX operators instead (``MatMul``, ``Greater``, ``Where``,
``Gather``, ...) and compute in float64, like ``predict``, so that the labels
of an exported model match ``predict`` (scores are summed in another order
than the compiled kernels, so probabilities agree to rounding).

The core knows no method: :func:`to_onnx` calls the fitted estimator's
``_onnx_graph(graph)`` hook, which each family implements in its own
subpackage with the pieces below (:class:`OnnxGraph`, :func:`oblique_leaves`,
:func:`leaf_outputs`, :func:`classifier_outputs`, :func:`regressor_output`).
Building a graph needs the ``onnx`` package (the ``onnx`` extra); running one
needs only an ONNX runtime.
"""

import numpy as np
from sklearn.base import is_classifier
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from . import onnx_pipeline, topology
from .categorical import indicator_spec, match_dtype
from .optional import require

__all__ = [
    "OPSET",
    "OnnxGraph",
    "axis_subtree_outputs",
    "classifier_outputs",
    "hard_tree_outputs",
    "leaf_outputs",
    "oblique_leaves",
    "regressor_output",
    "to_onnx",
]

#: Opset of the exported graphs (onnxruntime >= 1.14 runs it).
OPSET = 17


class OnnxGraph:
    """A graph under construction: one input ``X``, named outputs.

    Parameters
    ----------
    n_features : int
        Number of input columns.
    input_dtype : numpy dtype
        ``float32`` or ``float64``: the element type of the input ``X``
        (cast to float64 inside the graph).
    name : str
        Name of the graph.
    """

    def __init__(self, n_features, input_dtype, name):
        self.onnx = require("onnx", "sklearn_difftrees.to_onnx")
        self.n_features = int(n_features)
        self.input_dtype = np.dtype(input_dtype)
        self.name = name
        self.nodes, self.initializers, self.outputs = [], [], []
        self._count = 0
        self._x64 = None
        self.indicators = []

    # ----------------------------------------------------------- building
    def _fresh(self, hint):
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, array, hint="c"):
        """Add a constant tensor (an initializer); return its name."""
        array = np.asarray(array)
        if array.dtype.kind == "U" or array.dtype == object:
            array = array.astype(object)
        name = self._fresh(hint)
        self.initializers.append(self.onnx.numpy_helper.from_array(array, name=name))
        return name

    def op(self, op_type, inputs, hint=None, **attributes):
        """Add one node with one output; return the output's name."""
        out = self._fresh(hint or op_type.lower())
        self.nodes.append(
            self.onnx.helper.make_node(op_type, list(inputs), [out], **attributes)
        )
        return out

    @property
    def x(self):
        """The input as float64, shape (n_samples, n_features), with the
        indicator columns of ``self.indicators`` appended (``[(feature,
        values), ...]``, :mod:`~sklearn_difftrees._core.categorical`)."""
        if self._x64 is None:
            if self.input_dtype == np.float64:
                self._x64 = "X"
            else:
                self._x64 = self.op("Cast", ["X"], "x64", to=self.onnx.TensorProto.DOUBLE)
            blocks = [self._x64]
            for j, values in self.indicators:
                column = self.op("Gather", ["X", self.const(np.array([j], np.int64))], axis=1)
                dt = match_dtype(values, self.input_dtype)  # as expand_indicators compares
                if np.dtype(dt) != self.input_dtype:
                    proto = self.onnx.TensorProto
                    column = self.op("Cast", [column], to=proto.FLOAT if dt is np.float32
                                     else proto.DOUBLE)
                equal = self.op("Equal", [column, self.const(values[None, :].astype(dt))])
                blocks.append(self.op("Cast", [equal], "ind", to=self.onnx.TensorProto.DOUBLE))
            if len(blocks) > 1:
                self._x64 = self.op("Concat", blocks, "x_ind", axis=1)
        return self._x64

    def linear(self, weights, bias, hint="score", x=None):
        """``x @ weights.T + bias`` in float64 (``x``: the input by default)."""
        w = self.const(np.ascontiguousarray(np.asarray(weights, dtype=np.float64).T), "W")
        b = self.const(np.asarray(bias, dtype=np.float64), "b")
        return self.op("Add", [self.op("MatMul", [self.x if x is None else x, w]), b], hint)

    def zeros_int64(self, hint="zeros"):
        """An int64 column of zeros, shape (n_samples, 1)."""
        shape = self.op("Concat", [
            self.op("Shape", [self.x], end=1), self.const(np.array([1], dtype=np.int64))
        ], axis=0)
        value = self.onnx.helper.make_tensor("zero", self.onnx.TensorProto.INT64, [1], [0])
        return self.op("ConstantOfShape", [shape], hint, value=value)

    def ints(self, *values):
        """A constant 1-D int64 tensor (axes, shapes, indices)."""
        return self.const(np.array(values, dtype=np.int64), "i")

    def interleave(self, a, b, shape):
        """``a`` and ``b`` (same shape) merged along the last axis as
        ``a0, b0, a1, b1, ...``, reshaped to ``(-1, *shape)``."""
        axis = self.ints(-1)
        both = self.op("Concat", [self.op("Unsqueeze", [a, axis]),
                                  self.op("Unsqueeze", [b, axis])], axis=-1)
        return self.op("Reshape", [both, self.ints(-1, *shape)])

    def elu(self, x):
        """``x`` if ``x > 0`` else ``exp(x) - 1`` (float64)."""
        return self.op("Where", [
            self.op("Greater", [x, self.const(np.array(0.0))]),
            x,
            self.op("Sub", [self.op("Exp", [self.op("Min", [x, self.const(np.array(0.0))])]),
                            self.const(np.array(1.0))]),
        ])

    def softmax(self, logits):
        """Row softmax as ``predict_proba`` computes it: ``exp(z - max) / sum``."""
        z = self.op("Sub", [logits, self.op("ReduceMax", [logits], axes=[1], keepdims=1)])
        p = self.op("Exp", [z])
        return self.op("Div", [p, self.op("ReduceSum", [p, self.ints(1)], keepdims=1)])

    def output(self, name, public, array_like):
        """Expose ``name`` as graph output ``public``, typed like ``array_like``
        (an ndarray whose dtype and trailing dimensions the output has)."""
        array_like = np.asarray(array_like)
        if array_like.dtype.kind in "UO":
            elem = self.onnx.TensorProto.STRING
        else:
            elem = self.onnx.helper.np_dtype_to_tensor_dtype(array_like.dtype)
        self.nodes.append(self.onnx.helper.make_node("Identity", [name], [public]))
        shape = [None] + list(array_like.shape[1:])
        self.outputs.append(self.onnx.helper.make_tensor_value_info(public, elem, shape))

    def model(self, doc_string=""):
        """The finished, checked ``onnx.ModelProto``."""
        helper = self.onnx.helper
        elem = helper.np_dtype_to_tensor_dtype(self.input_dtype)
        graph = helper.make_graph(
            self.nodes,
            self.name,
            [helper.make_tensor_value_info("X", elem, [None, self.n_features])],
            self.outputs,
            initializer=self.initializers,
        )
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            producer_name="sklearn_difftrees",
            doc_string=doc_string,
        )
        model.ir_version = 8  # readable by onnxruntime >= 1.14
        self.onnx.checker.check_model(model, full_check=True)
        return model


# ----------------------------------------------------------------- pieces
def oblique_leaves(graph, weights, bias, max_depth, hint="leaf"):
    """Leaf position (0 .. 2**max_depth - 1, int64) of a complete oblique tree.

    The package's routing rule: at internal node ``i`` (heap order) a row
    goes right iff ``weights[i] @ x + bias[i] > 0``. All node scores come
    from one ``MatMul``; the root-to-leaf walk gathers one score per level.
    """
    g = graph
    node = g.zeros_int64("root")  # (n, 1) heap index, the root first
    if max_depth == 0:
        return g.op("Squeeze", [node, g.const(np.array([1], dtype=np.int64))], hint)
    scores = g.linear(weights, bias, "node_score")
    zero = g.const(np.array(0.0))
    one = g.const(np.array(1, dtype=np.int64))
    two = g.const(np.array(2, dtype=np.int64))
    for _ in range(max_depth):
        s = g.op("GatherElements", [scores, node], axis=1)
        right = g.op("Cast", [g.op("Greater", [s, zero])], to=g.onnx.TensorProto.INT64)
        node = g.op("Add", [g.op("Add", [g.op("Mul", [node, two]), one]), right])
    n_int = topology.n_internal(max_depth)
    leaf = g.op("Sub", [node, g.const(np.array(n_int, dtype=np.int64))])
    return g.op("Squeeze", [leaf, g.const(np.array([1], dtype=np.int64))], hint)


def leaf_outputs(graph, leaves, value):
    """Rows of ``value`` (one per leaf) for int64 leaf positions: (n, k) float64."""
    table = graph.const(np.asarray(value, dtype=np.float64), "leaf_value")
    return graph.op("Gather", [table, leaves], "leaf_output", axis=0)


def axis_subtree_outputs(graph, leaves, subtrees):
    """Rows of ``subtrees.value`` (a :class:`~.subtrees.AxisSubtrees`) at the
    node each row reaches from the root of its int64 leaf position: (n, k)
    float64. One step per level of the deepest subtree; a leaf steps onto
    itself."""
    g = graph
    if subtrees.max_depth == 0:  # nothing grown: every root is a leaf
        return leaf_outputs(g, leaves, subtrees.value[subtrees.root])
    index = np.arange(subtrees.n_nodes)
    inner = subtrees.left >= 0
    table = {name: g.const(array, name) for name, array in (
        ("sub_left", np.where(inner, subtrees.left, index)),
        ("sub_right", np.where(inner, subtrees.right, index)),
        ("sub_feature", np.where(inner, subtrees.feature, 0)),
        ("sub_threshold", subtrees.threshold))}
    node = g.op("Gather", [g.const(subtrees.root, "sub_root"), leaves], "sub_node", axis=0)
    column = g.ints(1)
    for _ in range(subtrees.max_depth):
        feature = g.op("Unsqueeze", [g.op("Gather", [table["sub_feature"], node], axis=0),
                                     column])
        x = g.op("Squeeze", [g.op("GatherElements", [g.x, feature], axis=1), column])
        left = g.op("LessOrEqual", [x, g.op("Gather", [table["sub_threshold"], node], axis=0)])
        node = g.op("Where", [left, g.op("Gather", [table["sub_left"], node], axis=0),
                              g.op("Gather", [table["sub_right"], node], axis=0)], "sub_node")
    return leaf_outputs(g, node, subtrees.value)


def classifier_outputs(graph, estimator, proba, label_index=None):
    """Outputs ``label`` (``classes_`` dtype) and ``probabilities`` (float64).

    ``label_index`` (int64 positions in ``classes_``) defaults to the first
    argmax of ``proba``, which is what ``np.argmax`` picks on ties.
    """
    g = graph
    if label_index is None:
        label_index = g.op("ArgMax", [proba], axis=1, keepdims=0, select_last_index=0)
    classes = np.asarray(estimator.classes_)
    if classes.dtype.kind == "b":
        table = classes.astype(bool)
    elif classes.dtype.kind in "iu":
        table = classes.astype(np.int64)
    elif classes.dtype.kind == "f":
        table = classes.astype(np.float64)
    else:
        table = classes.astype(str)
    label = g.op("Gather", [g.const(table, "classes"), label_index], axis=0)
    g.output(label, "label", table)
    g.output(proba, "probabilities", np.zeros((1, classes.size)))


def regressor_output(graph, estimator, values):
    """Output ``variable``: (n,) for one target, (n, n_outputs) otherwise, float64."""
    g = graph
    n_out = getattr(estimator, "n_outputs_", 1)
    if n_out == 1:
        values = g.op("Squeeze", [values, g.const(np.array([1], dtype=np.int64))])
        g.output(values, "variable", np.zeros(1))
    else:
        g.output(values, "variable", np.zeros((1, n_out)))


def hard_tree_outputs(graph, estimator, tree):
    """Outputs of an estimator predicting with a complete oblique ``tree``:
    leaf values (classifiers: probabilities, label = per-leaf argmax)."""
    leaves = oblique_leaves(graph, tree.weights, tree.bias, tree.max_depth)
    values = leaf_outputs(graph, leaves, tree.value)
    if is_classifier(estimator):
        leaf_class = np.argmax(tree.value, axis=1).astype(np.int64)
        index = graph.op("Gather", [graph.const(leaf_class, "leaf_class"), leaves], axis=0)
        classifier_outputs(graph, estimator, values, index)
    else:
        regressor_output(graph, estimator, values)


# ----------------------------------------------------------------- public
def to_onnx(estimator, X_sample, *, name=None):
    """Export a fitted estimator, or a Pipeline ending in one, as an ONNX model.

    Oblique and polytope splits are not expressible with ONNX-ML's
    axis-aligned ``TreeEnsemble`` operators; the graph is built from
    ``MatMul``, comparisons, ``Where`` and ``Gather`` and computes in float64
    like ``predict``. Classifiers have the outputs ``label`` (the values of
    ``classes_``) and ``probabilities`` (n_samples, n_classes); regressors
    the output ``variable`` ((n_samples,) for one target, else (n_samples,
    n_outputs)). The input is ``X`` of shape (n_samples, n_features), with the
    dtype of ``X_sample`` (float32 or float64).

    A scikit-learn ``Pipeline`` whose last step is an estimator of the
    package exports whole: skl2onnx converts the steps before it (scalers,
    encoders, ``ColumnTransformer``, ...), whose output feeds the last step's
    graph; the outputs are the last step's, as above. The inputs are
    skl2onnx's: ``X`` for an array ``X_sample`` (float32 or float64; the
    steps then compute in that dtype), one input per column, named and typed
    after it, for a DataFrame (each fed as an (n_samples, 1) array). A
    Pipeline whose last step is not of this package raises a ``TypeError``
    (convert it with ``skl2onnx.to_onnx``), as does a step that skl2onnx
    cannot convert (the message names it). Where ``onnxruntime`` can be
    imported, the exported Pipeline is loaded and run on the first 5 rows of
    ``X_sample``; a model onnxruntime cannot load or run raises a
    ``TypeError`` quoting it (e.g. ``SimpleImputer`` in float64; the message
    says when a float32 ``X_sample`` works). See ``docs/deploy.md``.

    Needs the ``onnx`` package, and for a Pipeline ``skl2onnx`` (both in
    ``pip install "sklearn-difftrees[onnx]"``); serving the model needs only
    an ONNX runtime (no Python, no torch, not this package).

    Parameters
    ----------
    estimator : fitted estimator of sklearn_difftrees, or Pipeline
        Any supervised estimator of the package (the DGT trees, forests and
        bandits, LatentTree, NonGreedy, TEL, ConvexPolytopeTree), or a fitted
        ``sklearn.pipeline.Pipeline`` whose last step is one (nested
        Pipelines and ``"passthrough"`` steps are allowed).
    X_sample : array-like or DataFrame of shape (n_samples, n_features)
        A few input rows: their number of columns and dtype (float32 or
        float64; anything else is treated as float64) fix the input. For a
        Pipeline, a DataFrame with the columns it was fitted on gives one
        input per column (strings for text columns).
    name : str, default=None
        Graph name (default: the estimator's class name; ``"Pipeline"``).

    Returns
    -------
    model : onnx.ModelProto
        Save it with ``onnx.save(model, "model.onnx")``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_difftrees import NonGreedyObliqueTreeClassifier, to_onnx
    >>> X = np.random.RandomState(0).normal(size=(100, 3))
    >>> clf = NonGreedyObliqueTreeClassifier(max_depth=2, max_iter=3).fit(X, X[:, 0] > 0)
    >>> model = to_onnx(clf, X[:5])                     # doctest: +SKIP
    >>> import onnxruntime as ort                       # doctest: +SKIP
    >>> sess = ort.InferenceSession(model.SerializeToString())  # doctest: +SKIP
    >>> label, proba = sess.run(None, {"X": X})         # doctest: +SKIP

    A Pipeline (the scaler is converted by skl2onnx):

    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> pipe = make_pipeline(StandardScaler(), NonGreedyObliqueTreeClassifier(
    ...     max_depth=2, max_iter=3)).fit(X, X[:, 0] > 0)
    >>> model = to_onnx(pipe, X[:5])                    # doctest: +SKIP
    """
    check_is_fitted(estimator)
    if isinstance(estimator, Pipeline):
        return _pipeline_model(estimator, X_sample, name)
    return _estimator_model(estimator, X_sample, name)


def _estimator_model(estimator, X_sample, name):
    """The graph of one fitted estimator of the package (``to_onnx``)."""
    hook = getattr(estimator, "_onnx_graph", None)
    if hook is None:
        raise TypeError(f"{type(estimator).__name__} has no ONNX export.")
    coded = getattr(estimator, "_category_levels", None)
    if coded:
        names = getattr(estimator, "feature_names_in_", None)
        which = ", ".join(repr(names[j]) if names is not None else str(j) for j in coded)
        raise ValueError(
            f"{type(estimator).__name__} was fitted on category columns of "
            f"non-numeric categories ({which}), which the estimator codes itself; an "
            "ONNX graph takes numbers only. Ordinal-encode those columns before fitting "
            "(e.g. OrdinalEncoder in a Pipeline) to export the model.")
    X_sample = np.asarray(X_sample)
    if X_sample.ndim != 2 or X_sample.shape[1] != estimator.n_features_in_:
        raise ValueError(
            f"X_sample must be 2-D with {estimator.n_features_in_} columns, "
            f"got shape {X_sample.shape}."
        )
    dtype = X_sample.dtype if X_sample.dtype in (np.float32, np.float64) else np.float64
    graph = OnnxGraph(estimator.n_features_in_, dtype, name or type(estimator).__name__)
    graph.indicators = indicator_spec(estimator)
    hook(graph)
    return graph.model(doc_string=f"{type(estimator).__name__} exported by sklearn_difftrees")


def _pipeline_model(pipeline, X_sample, name):
    """``to_onnx`` of a Pipeline: skl2onnx's graph of the steps before the
    last joined to the last step's graph (:mod:`.onnx_pipeline`)."""
    steps, (last_name, last) = onnx_pipeline.split_pipeline(pipeline)
    if getattr(last, "_onnx_graph", None) is None:
        raise TypeError(
            f"The last step of the Pipeline, {last_name!r} ({type(last).__name__}), is "
            "not an estimator of sklearn_difftrees with an ONNX export. to_onnx exports "
            "a Pipeline that ends in one; convert other Pipelines with skl2onnx.to_onnx.")
    title = " -> ".join(type(step).__name__ for _, step in [*steps, (last_name, last)])
    if not steps:  # only "passthrough" before the last step
        return _estimator_model(last, X_sample, name or title)
    pre, dtype, input_names = onnx_pipeline.preprocessing_model(steps, X_sample, pipeline,
                                                                OPSET)
    width = pre.graph.output[0].type.tensor_type.shape.dim[-1:]
    if width and width[0].HasField("dim_value") and width[0].dim_value != last.n_features_in_:
        raise ValueError(
            f"skl2onnx's graph of the steps before {last_name!r} has {width[0].dim_value} "
            f"output columns, the step was fitted on {last.n_features_in_}.")
    est = _estimator_model(last, np.zeros((1, last.n_features_in_), dtype), last_name)
    doc = (f"Pipeline {title} exported by sklearn_difftrees (the steps before the last "
           "converted by skl2onnx)")
    model = onnx_pipeline.join(pre, est, name=name or "Pipeline", doc_string=doc,
                               input_names=input_names)
    # skl2onnx's part may hold operators onnxruntime lacks (in float64 mostly);
    # our graphs are standard operators, run in tests/test_onnx.py in both dtypes.
    onnx_pipeline.check_runs(model, steps, X_sample, pipeline, OPSET)
    return model

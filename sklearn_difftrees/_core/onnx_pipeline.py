"""ONNX export of a scikit-learn ``Pipeline`` whose last step is an estimator
of the package (:func:`~sklearn_difftrees.to_onnx` of a Pipeline).

The steps before the last are scikit-learn's (scalers, encoders, a
``ColumnTransformer``, ...): skl2onnx converts them (the ``onnx`` extra), at
the opset of the package's graphs, and :func:`join` feeds their output to the
input ``X`` of the last step's graph with ``onnx.compose.merge_models``. The
joined model keeps skl2onnx's inputs (``X`` for an array, one input per
column for a DataFrame) and the last step's outputs (``label`` and
``probabilities``, or ``variable``). This module knows no method: the last
step's graph comes from :mod:`~sklearn_difftrees._core.onnx_graph`.

skl2onnx may convert a step into operators onnxruntime lacks (mostly in
float64: ``SimpleImputer``'s ONNX-ML ``Imputer``), so :func:`check_runs`
loads the joined model in onnxruntime, when it can be imported, and runs it
on a few rows of ``X_sample``. Where a conversion or that check fails in
float64, the error suggests a float32 sample only after trying it
(:func:`_float32_hint`).
"""

import numpy as np
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from .optional import require, try_import

__all__ = ["check_runs", "join", "preprocessing_model", "split_pipeline"]

_PURPOSE = "sklearn_difftrees.to_onnx of a Pipeline"
#: Rows of ``X_sample`` the exported Pipeline runs on in onnxruntime (:func:`check_runs`).
_CHECK_ROWS = 5
#: numpy types of onnxruntime's numeric input types (other inputs are fed as given).
_NUMPY_OF = {"tensor(double)": np.float64, "tensor(float)": np.float32,
             "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": np.bool_}


def _flat(steps, prefix=""):
    """The steps of nested Pipelines in order, named ``outer__inner``."""
    for name, step in steps:
        if isinstance(step, Pipeline):
            yield from _flat(step.steps, f"{prefix}{name}__")
        else:
            yield f"{prefix}{name}", step


def split_pipeline(pipeline):
    """``(steps, (name, estimator))``: the steps before the last (nested
    Pipelines flattened, ``"passthrough"`` / None dropped) and the last step."""
    *before, last = _flat(pipeline.steps)
    return [(n, s) for n, s in before if s not in ("passthrough", None)], last


def _sample(X_sample, pipeline):
    """``X_sample`` as skl2onnx should see it: a DataFrame as is (one input
    per column, typed after the column), an array 2-D (integers and booleans
    as float64, like the single-estimator export)."""
    n_features = getattr(pipeline, "n_features_in_", None)
    if hasattr(X_sample, "columns"):  # a DataFrame: skl2onnx names the inputs after it
        if not all(isinstance(c, str) for c in X_sample.columns):
            raise ValueError(
                "X_sample is a DataFrame whose column names are not all strings "
                f"({list(X_sample.columns)[:5]}...): the exported model has one input "
                "per column, named after it. Pass X_sample.to_numpy() for one input X "
                "(a ColumnTransformer's integer column selectors then pick the same "
                "columns), or give the columns string names before fitting.")
        names = getattr(pipeline, "feature_names_in_", None)
        if names is not None and list(X_sample.columns) != list(names):
            raise ValueError(
                f"X_sample's columns {list(X_sample.columns)} are not those the Pipeline "
                f"was fitted on ({list(names)}).")
        if n_features is not None and X_sample.shape[1] != n_features:
            raise ValueError(f"X_sample must have {n_features} columns, got "
                             f"{X_sample.shape[1]}.")
        return X_sample
    X_sample = np.asarray(X_sample)
    if X_sample.ndim != 2 or (n_features is not None and X_sample.shape[1] != n_features):
        raise ValueError(
            f"X_sample must be 2-D with {n_features} columns, got shape {X_sample.shape}.")
    return X_sample.astype(np.float64) if X_sample.dtype.kind in "biu" else X_sample


def _convert(steps, X_sample, opset):
    """skl2onnx's model of the fitted ``steps``, checked."""
    model = require("skl2onnx", _PURPOSE).to_onnx(Pipeline(steps), X_sample,
                                                  target_opset=opset)
    require("onnx", _PURPOSE).checker.check_model(model, full_check=True)
    return model


def _session(ort, model):
    """onnxruntime's ``InferenceSession`` of ``model`` on the CPU (its errors
    are raised, not also logged)."""
    options = ort.SessionOptions()
    options.log_severity_level = 4  # fatal only
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def _head(X_sample):
    """The first :data:`_CHECK_ROWS` rows of ``X_sample``."""
    return X_sample.iloc[:_CHECK_ROWS] if hasattr(X_sample, "iloc") else X_sample[:_CHECK_ROWS]


def _run_head(sess, X_sample):
    """Run ``sess`` on the first :data:`_CHECK_ROWS` rows of ``X_sample``, fed
    as to the exported model (``X``, or one (n, 1) column per input), numeric
    inputs in the element type the session declares."""
    head = _head(X_sample)
    if hasattr(head, "columns"):  # skl2onnx's inputs follow the columns
        columns = [head.iloc[:, [j]].to_numpy() for j in range(head.shape[1])]
    else:
        columns = [head]
    if not len(columns[0]):
        return
    feeds = {}
    for entry, column in zip(sess.get_inputs(), columns):
        dtype = _NUMPY_OF.get(entry.type)
        feeds[entry.name] = column if dtype is None else np.asarray(column, dtype=dtype)
    sess.run(None, feeds)


def _run(ort, model, X_sample):
    """Load ``model`` in onnxruntime and run it on the first rows of ``X_sample``."""
    _run_head(_session(ort, model), X_sample)


def _failing_step(steps, X_sample, opset, ort=None):
    """The first step that skl2onnx cannot convert (``steps[:k]`` converted
    for k = 1, 2, ... until one fails; with ``ort``, until onnxruntime cannot
    load or run it), in words; None when every prefix passes."""
    for k, (name, step) in enumerate(steps, start=1):
        try:
            model = _convert(steps[:k], X_sample, opset)
            if ort is not None:
                _run(ort, model, X_sample)
        except Exception:
            return f"step {name!r} ({type(step).__name__})"
    return None


def _float32(X_sample):
    """``X_sample`` with its float64 values in float32 (a DataFrame: its
    float64 columns), or None when it has none."""
    if hasattr(X_sample, "columns"):
        wide = [c for c, dt in X_sample.dtypes.items() if dt == np.float64]
        return X_sample.astype({c: np.float32 for c in wide}) if wide else None
    return X_sample.astype(np.float32) if X_sample.dtype == np.float64 else None


def _float32_hint(steps, X_sample, opset, ort):
    """A hint for float64 input where float32 input works: the steps convert
    (and, with ``ort``, load and run in onnxruntime) from the float32 sample.
    Some of skl2onnx's converters and onnxruntime's ONNX-ML operators handle
    float32 only; any other failure gets no hint (tried, not guessed from
    skl2onnx's messages, which vary between its versions)."""
    X32 = _float32(X_sample)
    if X32 is None:
        return ""
    try:
        model = _convert(steps, X32, opset)
        if ort is not None:
            _run(ort, model, X32)
    except Exception:
        return ""
    which = ("its float64 columns cast to float32" if hasattr(X_sample, "columns")
             else "X_sample.astype(np.float32)")
    runs = " and run in onnxruntime" if ort is not None else ""
    return (f" From an X_sample in float32 ({which}) the steps convert{runs}: export "
            "with it, the steps then computing in float32 (see 'Pipelines' in "
            "docs/deploy.md for how closely that matches scikit-learn).")


def preprocessing_model(steps, X_sample, pipeline, opset):
    """skl2onnx's model of ``steps`` (``(name, transformer)`` pairs, fitted),
    the dtype of its one output, float32 or float64 (another element type,
    such as an encoder's int64, is cast to float64 at the end), and the
    public names of its inputs (a DataFrame's column names)."""
    require("skl2onnx", _PURPOSE)
    onnx = require("onnx", _PURPOSE)
    X_sample = _sample(X_sample, pipeline)
    for step_name, step in steps:  # skl2onnx would report a missing attribute
        try:
            check_is_fitted(step)
        except NotFittedError as exc:
            raise NotFittedError(f"Step {step_name!r} of the Pipeline is not fitted: {exc}")
    try:
        model = _convert(steps, X_sample, opset)
    except ImportError:
        raise
    except Exception as exc:  # skl2onnx's own message, and which step it is
        hint = _float32_hint(steps, X_sample, opset, try_import("onnxruntime"))
        if getattr(pipeline, "feature_names_in_", None) is not None and not hasattr(
                X_sample, "columns"):
            hint += (" The Pipeline was fitted on a DataFrame: a DataFrame X_sample with "
                     "its columns gives one input per column, as steps selecting columns "
                     "by name need.")
        raise TypeError(
            f"skl2onnx cannot convert "
            f"{_failing_step(steps, X_sample, opset) or 'the steps before the last'} of the "
            f"Pipeline at opset {opset}: {_quote(exc)}.{hint}") from exc
    if len(model.graph.output) != 1:
        raise TypeError(
            f"skl2onnx converted the steps before the last into {len(model.graph.output)} "
            "outputs; the last step needs one matrix.")
    output = model.graph.output[0]
    elem = output.type.tensor_type.elem_type
    # skl2onnx names a column's input after it, characters other than letters,
    # digits and "_" replaced; the joined model keeps the column's own name.
    names = [i.name for i in model.graph.input]
    if hasattr(X_sample, "columns") and len(names) == X_sample.shape[1]:
        names = list(X_sample.columns)
    if elem == onnx.TensorProto.FLOAT:
        return model, np.float32, names
    if elem != onnx.TensorProto.DOUBLE:
        cast = output.name + "_float64"
        model.graph.node.append(onnx.helper.make_node(
            "Cast", [output.name], [cast], to=onnx.TensorProto.DOUBLE))
        output.name = cast
        output.type.tensor_type.elem_type = onnx.TensorProto.DOUBLE
    return model, np.float64, names


def _rewire(graph, names, onnx, *, inputs):
    """Public names for ``graph``'s inputs or outputs: ``names`` maps each
    prefixed name to its public one, bridged by an ``Identity`` node."""
    helper = onnx.helper
    entries = graph.input if inputs else graph.output
    bridges = []
    for entry in entries:
        public = names[entry.name]
        pair = [public, entry.name] if inputs else [entry.name, public]
        bridges.append(helper.make_node("Identity", pair[:1], pair[1:], name=f"public_{public}"))
        entry.name = public
    nodes = bridges + list(graph.node) if inputs else list(graph.node) + bridges
    del graph.node[:]
    graph.node.extend(nodes)


def join(pre, est, *, name, doc_string, input_names=None):
    """One model: ``pre``'s output feeds ``est``'s input ``X``. The joined model
    has ``pre``'s inputs and ``est``'s outputs, under their own names; every
    other name is prefixed (``pre_`` / ``est_``)."""
    onnx = require("onnx", _PURPOSE)
    compose = onnx.compose
    public = input_names or [i.name for i in pre.graph.input]
    inputs = {"pre_" + i.name: p for i, p in zip(pre.graph.input, public)}
    outputs = {"est_" + o.name: o.name for o in est.graph.output}
    clash = sorted(set(inputs.values()) & set(outputs.values()))
    if clash:
        raise ValueError(
            f"The Pipeline's input {clash[0]!r} has the name of an output of the exported "
            "model; rename that column to export it.")
    pre, est = compose.add_prefix(pre, "pre_"), compose.add_prefix(est, "est_")
    ir_version = max(pre.ir_version, est.ir_version)
    pre.ir_version = est.ir_version = ir_version
    model = compose.merge_models(pre, est, io_map=[(pre.graph.output[0].name, "est_X")],
                                 name=name)
    model.producer_name, model.producer_version = "sklearn_difftrees", ""
    model.doc_string, model.model_version = doc_string, 0  # as the single-estimator export
    _rewire(model.graph, inputs, onnx, inputs=True)
    _rewire(model.graph, outputs, onnx, inputs=False)
    internal = {o for node in model.graph.node for o in node.output}
    internal.update(i.name for i in model.graph.initializer)
    clash = sorted(set(inputs.values()) & (internal - set(outputs.values())))
    if clash:
        raise ValueError(
            f"The Pipeline's input {clash[0]!r} has the name of a tensor inside the "
            "exported model; rename that column to export it.")
    onnx.checker.check_model(model, full_check=True)
    return model


def check_runs(model, steps, X_sample, pipeline, opset):
    """Load the exported Pipeline ``model`` in onnxruntime and run it on the
    first rows of ``X_sample``: a ``TypeError`` quoting onnxruntime when it
    cannot (skl2onnx converts some steps into operators onnxruntime lacks,
    e.g. ``SimpleImputer``'s ONNX-ML ``Imputer`` in float64), a
    ``ValueError`` when the Pipeline cannot predict those rows either.
    Nothing is checked when onnxruntime cannot be imported (no extra of the
    package installs it: serving may use another runtime)."""
    ort = try_import("onnxruntime")
    if ort is None:
        return
    X_sample = _sample(X_sample, pipeline)
    try:
        sess = _session(ort, model)
    except Exception as exc:
        what, failure = "cannot load the exported Pipeline (creating the session failed; ", exc
    else:
        try:
            return _run_head(sess, X_sample)
        except Exception as exc:
            failure = exc
        head = _head(X_sample)
        n = len(head)
        try:
            pipeline.predict(head)
        except Exception as own:  # the rows, not the export
            raise ValueError(
                f"The Pipeline cannot predict the first {n} rows of X_sample "
                f"({type(own).__name__}: {_quote(own)}), nor can "
                f"onnxruntime run the exported model on them ({_quote(failure)}): "
                "pass rows the Pipeline predicts.") from failure
        what = f"cannot run the exported Pipeline on the first {n} rows of X_sample ("
    step = _failing_step(steps, X_sample, opset, ort)
    where = (f"skl2onnx's conversion of the steps up to {step} fails already" if step
             else "skl2onnx's conversion of the steps alone runs")
    hint = _float32_hint(steps, X_sample, opset, ort)
    raise TypeError(
        f"onnxruntime {ort.__version__} {what}{where}): {_quote(failure)}.{hint}"
    ) from failure


def _quote(exc):
    """``exc``'s message without its trailing newline and full stop."""
    return str(exc).strip().rstrip(". ")

"""numpydoc validation of the whole public API, and its API reference.

Every public name (the ``__all__`` of the package and of its public
submodules: estimators, functions, the torch layers) and every public method
or property a public class defines in this package is run through
``numpydoc.validate``. Methods inherited unchanged from scikit-learn or torch
(``score``, ``get_params``, ``nn.Module.train``, ...) are theirs to document
and are not checked.

Checked codes (:data:`CHECKED`): every numpydoc check except the four that
scikit-learn's own ``test_docstrings.py`` also leaves out for methods:

* ``ES01`` (extended summary), ``SA01`` (See Also), ``EX01`` (Examples):
  wanted on the classes (they have them), not on every method;
* ``RT02`` (return type alone on the first line): scikit-learn names its
  return values (``proba : ndarray of shape ...``), and so do we.

The list is spelled out rather than computed ("all but ...") so that a new
numpydoc release adding checks does not change what passes silently.

A second test fits every estimator on a tiny problem and checks that each
public fitted attribute (trailing underscore) is documented in its class's
Attributes section, and a third that ``docs/api_reference.rst`` lists every
public name.
"""

import importlib
import inspect
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")
from numpydoc.docscrape import ClassDoc  # noqa: E402

#: Public modules: the package and its public submodules (their ``__all__``).
PUBLIC_MODULES = [
    "sklearn_difftrees",
    "sklearn_difftrees.bandit",
    "sklearn_difftrees.datasets",
    "sklearn_difftrees.exceptions",
    "sklearn_difftrees.io",
    "sklearn_difftrees.metrics",
]

CHECKED = frozenset({
    # general
    "GL01", "GL02", "GL03", "GL05", "GL06", "GL07", "GL08", "GL09", "GL10",
    # summary
    "SS01", "SS02", "SS03", "SS04", "SS05", "SS06",
    # parameters: all documented, none unknown, in order, typed, described
    "PR01", "PR02", "PR03", "PR04", "PR05", "PR06", "PR07", "PR08", "PR09", "PR10",
    # returns / yields: present and described
    "RT01", "RT03", "RT04", "RT05", "YD01",
    # See Also entries, when there are some
    "SA02", "SA03", "SA04",
})

TORCH_LAYERS = {"LatentTreeLayer", "TreeEnsembleLayer"}


def _needs_torch(name):
    return name in TORCH_LAYERS


def _public_names():
    """``(module, name)`` of every public name, aliases once (first spelling)."""
    import sklearn_difftrees

    out = []
    for modname in PUBLIC_MODULES:
        mod = importlib.import_module(modname)
        for name in mod.__all__:
            if modname == "sklearn_difftrees" and name in sklearn_difftrees._LAZY_TORCH_EXPORTS:
                out.append((modname, name))  # resolved lazily (imports torch)
                continue
            obj = getattr(mod, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                out.append((modname, name))
    return out


def _resolve(modname, name):
    if _needs_torch(name):
        pytest.importorskip("torch")
    return getattr(importlib.import_module(modname), name)


def _own_members(cls):
    """Public methods / properties ``cls`` has from this package (not sklearn's, torch's)."""
    for attr in sorted(dir(cls)):
        if attr.startswith("_"):
            continue
        raw = inspect.getattr_static(cls, attr)
        if isinstance(raw, property):
            func = raw.fget
        elif isinstance(raw, (staticmethod, classmethod)):
            func = raw.__func__
        elif inspect.isfunction(raw):
            func = raw
        else:
            continue
        if (getattr(func, "__module__", None) or "").startswith("sklearn_difftrees"):
            yield attr


def _validation_targets():
    """Import paths to validate: public names, then their own public members."""
    seen = set()
    for modname, name in _public_names():
        if _needs_torch(name):
            # torch layers: listed without importing torch at collection time
            yield pytest.param(f"{modname}.{name}", name, id=f"{modname}.{name}")
            continue
        obj = getattr(importlib.import_module(modname), name)
        if id(obj) in seen:  # aliases (DGTForest, NonGreedyObliqueTree, ...)
            continue
        seen.add(id(obj))
        yield pytest.param(f"{modname}.{name}", None, id=f"{modname}.{name}")
        if inspect.isclass(obj):
            for attr in _own_members(obj):
                path = f"{modname}.{name}.{attr}"
                yield pytest.param(path, None, id=path)


def _errors(path):
    result = numpydoc_validate.validate(path)
    return [f"{code}: {msg}" for code, msg in result["errors"] if code in CHECKED]


@pytest.mark.parametrize("path, torch_layer", list(_validation_targets()))
def test_numpydoc(path, torch_layer):
    if torch_layer is not None:
        layer = _resolve("sklearn_difftrees", torch_layer)
        errors = _errors(path)
        for attr in _own_members(layer):
            errors += [f"{attr}: {e}" for e in _errors(f"{path}.{attr}")]
    else:
        errors = _errors(path)
    assert not errors, f"{path}:\n" + "\n".join(errors)


def test_validation_can_fail():
    """The check is live: an undocumented parameter and return are reported."""

    def f(a, b):
        """Do something.

        Parameters
        ----------
        a : int
            First.
        """
        return a + b

    import sys
    import types

    mod = types.ModuleType("_numpydoc_probe")
    mod.f = f
    f.__module__ = mod.__name__
    sys.modules[mod.__name__] = mod
    try:
        codes = {c for c, _ in numpydoc_validate.validate("_numpydoc_probe.f")["errors"]}
    finally:
        del sys.modules[mod.__name__]
    assert {"PR01", "RT01"} <= codes & CHECKED


# ---------------------------------------------------------------- attributes
def _tiny_fit(cls):
    from sklearn.base import ClusterMixin, is_regressor

    rng = np.random.RandomState(0)
    X = rng.normal(size=(80, 4))
    params = cls().get_params()
    kw = {"max_iter": 3, "n_estimators": 2, "max_depth": 2, "classes": [0, 1]}
    kw = {k: v for k, v in kw.items() if k in params}
    if kw.get("max_depth") is not None and not isinstance(params["max_depth"], int):
        kw.pop("max_depth")  # "auto" depths (ConvexPolytopeTree)
    est = cls(**kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if isinstance(est, ClusterMixin):
            return est.fit(X)
        if is_regressor(est):
            return est.fit(X, X[:, 0] + 0.1 * rng.normal(size=80))
        return est.fit(X, (X[:, 0] + X[:, 1] > 0).astype(int))


def _estimator_classes():
    import sklearn_difftrees

    seen = set()
    for name in sklearn_difftrees.__all__:
        if name in sklearn_difftrees._LAZY_TORCH_EXPORTS:
            continue
        obj = getattr(sklearn_difftrees, name)
        if inspect.isclass(obj) and hasattr(obj, "get_params") and id(obj) not in seen:
            seen.add(id(obj))
            yield pytest.param(obj, id=name)


@pytest.mark.parametrize("cls", list(_estimator_classes()))
def test_fitted_attributes_documented(cls):
    pytest.importorskip("torch")
    est = _tiny_fit(cls)
    fitted = {k for k in vars(est) if k.endswith("_") and not k.startswith("_")}
    properties = {
        k for k in dir(cls)
        if k.endswith("_") and not k.startswith("_")
        and isinstance(inspect.getattr_static(cls, k), property)
    }
    documented = {p.name for p in ClassDoc(cls)["Attributes"]}
    missing = sorted((fitted | properties) - documented)
    assert not missing, f"{cls.__name__}: fitted attributes not in its Attributes section: {missing}"


# ------------------------------------------------------------- API reference
API_REFERENCE = Path(__file__).resolve().parent.parent / "docs" / "api_reference.rst"


@pytest.mark.skipif(not API_REFERENCE.is_file(), reason="no docs/ in this checkout")
def test_api_reference_lists_every_public_name():
    text = API_REFERENCE.read_text()
    listed = set(re.findall(r"^   ([\w.]+)$", text, flags=re.M))
    missing = []
    for modname in PUBLIC_MODULES:
        mod = importlib.import_module(modname)
        submodule = modname.split(".", 1)[1] if "." in modname else None
        for name in mod.__all__:
            if name.isupper():  # constants (datasets.DATASETS) are documented in text
                continue
            if name not in listed and f"{submodule}.{name}" not in listed:
                missing.append(f"{modname}.{name}")
    assert not missing, f"add to docs/api_reference.rst: {missing}"


def test_package_namespace_holds_only_its_api_and_subpackages():
    """dir() (tab completion) shows the public API and the subpackages, not
    import helpers (importlib and require_torch showed, a user's trial)."""
    import types

    import sklearn_difftrees as sd

    extra = [n for n in dir(sd) if not n.startswith("_") and n not in sd.__all__]
    assert all(isinstance(getattr(sd, n), types.ModuleType) for n in extra), extra
    assert all(getattr(sd, n).__name__.startswith("sklearn_difftrees.") for n in extra), extra

"""The layering of docs/design.md, checked on the source with ``ast`` alone.

Every module of the package is parsed, imports inside functions included, and
the package's own import graph is built from it. The graph must have no cycle,
no ``_core`` module may import a method or be named after one, methods never
import each other, and no module is longer than 600 lines. ``lint-imports``
(contracts in pyproject.toml) checks the layers too; this test also runs where
import-linter is not installed, and checks what import-linter does not (cycles
inside a layer, module sizes, names).
"""

import ast
from pathlib import Path

import pytest

import sklearn_difftrees

PACKAGE = "sklearn_difftrees"
ROOT = Path(sklearn_difftrees.__file__).parent
METHODS = ("dgt", "latent_tree", "non_greedy", "tel", "polytope")
APPLICATIONS = ("bandit", "demo")
#: Words that name a method (or one of its ideas) and so have no place in a
#: core module's name.
METHOD_WORDS = {
    "dgt", "latent", "latent_tree", "non_greedy", "nongreedy", "tel", "polytope",
    "bandit", "forest", "pav", "lai", "cluster", "clusterer", "isotonic",
}
MAX_LINES = 600


def module_files(root, package):
    """``{module name: path}`` of every ``.py`` file below ``root``."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join([package, *parts])] = path
    return out


def _resolve(module, is_package, level, target):
    """Absolute name of ``from <level dots><target> import ...`` in ``module``."""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def imports_of(module, path, known, package):
    """The package's modules that ``module`` imports, anywhere in its body."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = (
                _resolve(module, is_package, node.level, node.module)
                if node.level
                else node.module
            )
            # ``from pkg import sub`` imports the submodule ``pkg.sub``.
            names = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        else:
            continue
        for name in names:
            if name != package and not name.startswith(package + "."):
                continue
            while name not in known and "." in name:  # ``import pkg.mod.attr``
                name = name.rsplit(".", 1)[0]
            if name in known and name != module:
                found.add(name)
    return found


def import_graph(root, package):
    files = module_files(root, package)
    known = set(files)
    return {m: imports_of(m, p, known, package) for m, p in files.items()}


def find_cycle(graph):
    """One import cycle ``[a, b, ..., a]`` of ``graph``, or ``None``."""
    WHITE, GREY, BLACK = 0, 1, 2
    color = dict.fromkeys(graph, WHITE)
    for start in sorted(graph):
        if color[start] != WHITE:
            continue
        stack = [(start, iter(sorted(graph[start])))]
        path = [start]
        color[start] = GREY
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                color[node] = BLACK
                stack.pop()
                path.pop()
            elif color.get(child, BLACK) == GREY:
                return path[path.index(child):] + [child]
            elif color.get(child) == WHITE:
                color[child] = GREY
                stack.append((child, iter(sorted(graph[child]))))
                path.append(child)
    return None


def _subpackage(module, package):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == package else None


def core_violations(graph, package=PACKAGE):
    """``(core module, imported method or application module)`` pairs."""
    banned = METHODS + APPLICATIONS
    return sorted(
        (m, t)
        for m, targets in graph.items()
        if _subpackage(m, package) == "_core"
        for t in targets
        if _subpackage(t, package) in banned
    )


def method_violations(graph, package=PACKAGE):
    """``(module of one method, module of another)`` pairs."""
    return sorted(
        (m, t)
        for m, targets in graph.items()
        for t in targets
        if _subpackage(m, package) in METHODS
        and _subpackage(t, package) in METHODS
        and _subpackage(t, package) != _subpackage(m, package)
    )


def core_names_after_a_method(files, package=PACKAGE):
    return sorted(
        m
        for m in files
        if _subpackage(m, package) == "_core"
        and METHOD_WORDS & set(m.rsplit(".", 1)[-1].strip("_").split("_"))
    )


def long_modules(files, limit=MAX_LINES):
    out = {}
    for m, path in files.items():
        with open(path, encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > limit:
            out[m] = n
    return out


@pytest.fixture(scope="module")
def graph():
    return import_graph(ROOT, PACKAGE)


# ----------------------------------------------------------------- the package
def test_graph_sees_module_level_and_function_level_imports(graph):
    # Sanity of the parser on known edges: relative, ``from . import sub``,
    # and an import inside a function (the torch training module, imported
    # only by ``fit``).
    assert "sklearn_difftrees._core.tree" in graph["sklearn_difftrees.polytope._tree"]
    assert "sklearn_difftrees._core.topology" in graph["sklearn_difftrees._core.tree"]
    assert "sklearn_difftrees.polytope._training" in graph["sklearn_difftrees.polytope._classes"]
    assert "sklearn_difftrees.dgt._module" in graph["sklearn_difftrees.dgt._classes"]


def test_no_import_cycle(graph):
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_core_imports_no_method(graph):
    assert core_violations(graph) == []


def test_no_core_module_named_after_a_method():
    assert core_names_after_a_method(module_files(ROOT, PACKAGE)) == []


def test_methods_never_import_each_other(graph):
    assert method_violations(graph) == []


def test_no_module_over_600_lines():
    assert long_modules(module_files(ROOT, PACKAGE)) == {}


# ------------------------------------------------------ the checks can fail
def test_find_cycle_on_synthetic_graphs():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None  # diamond
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"x": {"a"}, "a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]


def _write(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_checks_fail_on_a_planted_package(tmp_path):
    """A tiny package with every fault planted: each check reports it."""
    pkg = "sklearn_difftrees"
    root = tmp_path / pkg
    _write(root, "__init__.py", "")
    _write(root, "_core/__init__.py", "from .tree import Tree\n")
    _write(root, "_core/tree.py", "class Tree:\n    pass\n")
    # A core module named after a method that imports it (inside a function).
    _write(root, "_core/polytope_tree.py",
           "def f():\n    from ..polytope import _classes\n    return _classes\n")
    # A cycle through an import inside a function, as in ``from . import x``.
    _write(root, "polytope/__init__.py", "")
    _write(root, "polytope/_classes.py",
           "from .._core.tree import Tree\n\ndef fit():\n    from . import _training\n")
    _write(root, "polytope/_training.py", "from ._classes import fit\n")
    # A method importing another, by absolute name.
    _write(root, "dgt/__init__.py", "import sklearn_difftrees.polytope._classes\n")
    _write(root, "dgt/_long.py", "x = 1\n" * (MAX_LINES + 1))

    files = module_files(root, pkg)
    g = import_graph(root, pkg)
    cycle = find_cycle(g)
    assert cycle is not None
    assert set(cycle) == {f"{pkg}.polytope._classes", f"{pkg}.polytope._training"}
    assert core_violations(g, pkg) == [(f"{pkg}._core.polytope_tree", f"{pkg}.polytope._classes")]
    assert core_names_after_a_method(files, pkg) == [f"{pkg}._core.polytope_tree"]
    assert method_violations(g, pkg) == [(f"{pkg}.dgt", f"{pkg}.polytope._classes")]
    assert long_modules(files) == {f"{pkg}.dgt._long": MAX_LINES + 1}

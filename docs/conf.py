"""Sphinx configuration of the sklearn_difftrees documentation.

Build with ``bash dev.sh docs`` (warnings are errors). The Markdown guides in
this folder are the sources themselves (myst-parser), the API reference is
generated from the numpydoc docstrings (autosummary), and the gallery runs
``../examples/plot_*.py`` (sphinx-gallery).
"""

import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # document this checkout (its kernels are built in place)
os.environ.setdefault("OMP_NUM_THREADS", "1")

import sklearn_difftrees  # noqa: E402

project = "sklearn_difftrees"
author = "the sklearn_difftrees developers"
copyright = f"2026, {author}"
release = sklearn_difftrees.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "matplotlib.sphinxext.plot_directive",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
templates_path = ["_templates"]
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.md5"]

# -- Markdown guides (myst) ------------------------------------------------
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 4

# -- API reference ---------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = True
# Unknown words of a type become (unresolved, silent) object names, so that
# "ndarray of shape (n_features_in_,)" keeps its trailing underscore.
numpydoc_xref_ignore = {
    "of", "or", "and", "shape", "default", "optional", "instance", "the", "a",
    "an", "in", "with", "if", "per", "each", "to", "for", "is", "none",
}
# numpydoc's default aliases point into python's and numpy's inventories; the
# build is offline (no intersphinx), so the glossary-style ones become plain
# (unresolved, silent) object names.
numpydoc_xref_aliases = {
    name: f":obj:`{name}`"
    for name in ["bool", "boolean", "array-like", "array_like", "iterable",
                 "sequence", "generator"]
}

plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 110)]

# -- Gallery ---------------------------------------------------------------
_gallery_start = time.perf_counter()
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "show_memory": False,
    "plot_gallery": "True",
    "min_reported_time": 0,
    "write_computation_times": True,
    "doc_module": ("sklearn_difftrees",),
    "backreferences_dir": "gen_modules/backreferences",
    "reference_url": {"sklearn_difftrees": None},
}


def _report_gallery_time(app, exception):
    """Print the build time and the gallery's total execution time."""
    if exception is not None:
        return
    print(f"docs: build finished in {time.perf_counter() - _gallery_start:.0f} s")
    times = Path(app.srcdir) / "auto_examples" / "sg_execution_times.rst"
    if times.is_file():
        match = re.search(r"\*\*(\S+)\*\* total execution time for (\d+) files", times.read_text())
        if match:
            print(f"docs: gallery: {match.group(2)} examples, {match.group(1)} (mm:ss) "
                  "of execution (examples unchanged since the last build are not re-run)")


def setup(app):
    app.connect("build-finished", _report_gallery_time)


# -- HTML ------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"sklearn_difftrees {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_prev_next": False,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path = []
html_show_sourcelink = False


def _skip_foreign_member(app, what, name, obj, skip, options):
    """Document only what this package defines (not torch's or sklearn's members)."""
    if what != "class" or skip:
        return skip
    func = getattr(obj, "fget", obj)  # properties
    module = getattr(func, "__module__", None) or ""
    if callable(func) or isinstance(obj, property):
        return None if module.startswith("sklearn_difftrees") else True
    return skip


_SHAPE = re.compile(r"\([^()]*\)")


def _escape_shape_underscores(app, what, name, obj, options, lines):
    """``(n_features_in_,)`` in a type is text, not a reST reference."""
    for i, line in enumerate(lines):
        if "_," in line or "_)" in line:
            lines[i] = _SHAPE.sub(
                lambda m: re.sub(r"(\w)_(?=[,)])", r"\1\\_", m.group(0)), line)


def setup(app):  # noqa: F811 (extends the one above)
    app.connect("build-finished", _report_gallery_time)
    app.connect("autodoc-skip-member", _skip_foreign_member)
    # after numpydoc (priority 500) has turned the sections into reST
    app.connect("autodoc-process-docstring", _escape_shape_underscores, priority=900)

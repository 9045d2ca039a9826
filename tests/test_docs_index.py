"""Every page in docs/ is reachable from the site's index (the Sphinx build,
``bash dev.sh docs``, fails on an orphan page; this catches it without Sphinx)."""

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
GENERATED = {"index", "sg_execution_times"}  # the root, and sphinx-gallery's own page


@pytest.mark.skipif(not (DOCS / "index.rst").is_file(), reason="no docs/ in this checkout")
def test_every_page_is_in_the_index_toctree():
    index = (DOCS / "index.rst").read_text()
    listed = set(re.findall(r"^   ([\w/]+)\s*$", index, flags=re.M))
    pages = {p.stem for p in DOCS.glob("*.md")} | {p.stem for p in DOCS.glob("*.rst")}
    missing = sorted(pages - listed - GENERATED)
    assert not missing, f"add to a toctree of docs/index.rst: {missing}"

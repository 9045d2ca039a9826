"""The notebooks are valid nbformat >= 4.5 (cell ids), stored without outputs.

Executing them is ``bash dev.sh notebooks`` (nbmake; CI runs it), not part of
this fast suite.
"""

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.skipif(not NOTEBOOKS, reason="no notebooks/ in this checkout")
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_format(path):
    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    assert (nb.nbformat, nb.nbformat_minor) >= (4, 5)
    ids = [cell.get("id") for cell in nb.cells]
    assert all(ids) and len(set(ids)) == len(ids), "every cell needs a unique id"
    assert nb.metadata.kernelspec.name == "python3"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, (
                "store notebooks without outputs (CI executes them)"
            )

"""The example notebook runs fresh (nbclient, a real kernel), and is committed without outputs to go stale."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parent.parent / "examples" / "derive.ipynb"


def test_the_committed_notebook_holds_no_outputs():
    import nbformat

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    stale = [i for i, c in enumerate(notebook.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not stale, f"cells {stale} carry outputs: clear them (they are made fresh by this test)"


def test_the_notebook_runs_and_shows_what_it_computes(tmp_path):
    nbclient = pytest.importorskip("nbclient")
    import nbformat

    import derive

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    text = "\n".join(
        str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
        for c in notebook.cells
        if c.cell_type == "code"
        for o in c.outputs
    )
    for name in ("llama3-70b", "qwen3-30b-a3b", "deepseek-v3"):
        assert name in text
    assert (tmp_path / "knees.png").stat().st_size > 0
    # The solved batch the notebook shows is the one the API computes.
    batch = derive.solve("tpot_floor = 20 ms", "batch", "llama3-70b", tp=4).results["batch"]
    assert f"{batch.magnitude:.6g}" in text.replace("\n", "")

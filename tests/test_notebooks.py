"""Every notebook runs top to bottom on the bundled data (`make test-notebooks`: CI runs it
after the suite, as `pytest` leaves these out unless given `--notebooks`)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.conftest import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom_from_outside_the_checkout(
    path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(
        "MPLBACKEND", raising=False
    )  # (Streamlit's import sets Agg: no inline plots)
    # One OpenMP thread in the kernel: beside two busy processes its threads spun against each
    # other's barriers (169 s for the forecasting notebook against 29 s idle, and past the
    # 300 s timeout under more load); with one, 33 s beside them.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    stored = nbformat.read(path, as_version=4)
    assert len(_images(stored)) >= 2  # kept executed, so a reader on the web sees the plots
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute()
    assert not [o for o in _outputs(notebook) if o.get("output_type") == "error"]
    assert len(_images(notebook)) >= 2  # the reliability curve and the forecast plot


def _outputs(notebook: nbformat.NotebookNode) -> list[dict]:
    return [
        o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])
    ]


def _images(notebook: nbformat.NotebookNode) -> list[dict]:
    return [o for o in _outputs(notebook) if "image/png" in o.get("data", {})]

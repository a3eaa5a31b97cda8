"""Run every notebook here top to bottom and store it with its outputs, so a reader on the web
sees the tables and plots (``make notebooks``). Each runs in an empty folder: the notebooks find
their data through the package, not the checkout."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def execute(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as elsewhere:
        NotebookClient(
            notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": elsewhere}}
        ).execute()
    nbformat.write(notebook, path)
    print(f"executed and stored {path}")


if __name__ == "__main__":
    for notebook in sorted(Path(__file__).parent.glob("*.ipynb")) if len(sys.argv) < 2 else map(Path, sys.argv[1:]):
        execute(notebook)

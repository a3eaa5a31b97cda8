"""Every ``spotwise`` name a notebook imports exists, checked in the fast tier: a module moved
under the notebooks (as ``settings`` moved to ``spotwise.core``) fails here in seconds rather
than in the notebook run CI makes after the suite."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import nbformat
import pytest

from tests.conftest import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def spotwise_imports(source: str) -> list[tuple[str, str | None]]:
    """Each ``(module, name)`` a piece of code imports from ``spotwise`` (name None for a plain
    ``import spotwise.x``)."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "spotwise":
            found += [(str(node.module), alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(a.name, None) for a in node.names if a.name.split(".")[0] == "spotwise"]
    return found


def missing_names(source: str) -> list[str]:
    """The ``spotwise`` imports of ``source`` that do not resolve."""
    missing = []
    for module, name in spotwise_imports(source):
        try:
            imported = importlib.import_module(module)
        except ImportError:
            missing.append(module)
            continue
        if name is not None and not hasattr(imported, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{module}.{name}")
    return missing


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_spotwise_name_a_notebook_imports_exists(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    code = "\n".join(
        line
        for cell in notebook.cells
        if cell.cell_type == "code"
        for line in cell.source.splitlines()
        if not line.lstrip().startswith(("%", "!"))
    )
    assert spotwise_imports(code)  # the notebook is read: it imports Spotwise
    assert missing_names(code) == []


def test_a_moved_module_is_caught() -> None:
    assert missing_names("from spotwise import settings") == ["spotwise.settings"]
    assert missing_names("from spotwise.core import settings") == []
    assert missing_names("import spotwise.nowhere") == ["spotwise.nowhere"]

"""Every package of the tree is in the wheel: pyproject lists each one (the wheel a cloud's
instances install would lack a package it does not list, though the editable install finds it)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_lists_every_package_of_the_tree() -> None:
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(tool["packages"])
    found = set()
    for name, folder in tool["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            if "__pycache__" not in parts and not any(p.startswith(".") for p in parts):
                found.add(".".join((name, *parts)))
    assert found - listed == set(), "packages missing from pyproject's [tool.setuptools]"
    data = set(tool["package-data"])  # folders of data files, without an __init__.py
    assert listed - found - data == set(), "pyproject lists packages the tree does not have"

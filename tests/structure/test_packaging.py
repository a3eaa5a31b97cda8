"""Every package of the tree is in the wheel: pyproject's package discovery finds each one (the
wheel a cloud's instances install would lack a package it misses, though the editable install
finds it)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def tree_packages(package_dir: dict[str, str]) -> set[str]:
    """Every package of the tree under its installed name: each folder with an ``__init__.py``
    below a folder of ``package_dir``."""
    found = set()
    for name, folder in package_dir.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            if "__pycache__" not in parts and not any(p.startswith(".") for p in parts):
                found.add(".".join((name, *parts)))
    return found


def test_the_wheel_finds_every_package_of_the_tree() -> None:
    from setuptools import find_packages

    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = find_packages(str(ROOT), include=tool["packages"]["find"]["include"])
    assert set(found) == tree_packages(tool["package-dir"])

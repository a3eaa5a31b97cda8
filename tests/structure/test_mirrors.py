"""The unit tests mirror the tree: ``tests/PACKAGE/.../test_MODULE.py`` (or
``test_MODULE_ASPECT.py``, a second file for one module) tests ``PACKAGE/.../MODULE.py``, so a
module's tests are found where the module is. The cross-cutting suites (structure, contracts,
journeys, reliability, soak, the fakes) test several modules at once and are left out."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "pricing", "policy", "executor", "dashboard", "spotwise")
"""The top-level folders whose tests mirror them (the CLI is ``spotwise/``)."""


def mirrored_module(test: Path, root: Path = ROOT) -> Path | None:
    """The module ``test`` (a path under ``tests/``) mirrors: the longest ``_``-prefix of its
    name after ``test_`` that is a module of the same folder of the tree; None if there is
    none."""
    folder = root / Path(*test.relative_to(root / "tests").parts[:-1])
    words = test.stem.removeprefix("test_").split("_")
    for n in range(len(words), 0, -1):
        module = folder / ("_".join(words[:n]) + ".py")
        if module.is_file():
            return module
    return None


def unit_tests(root: Path = ROOT) -> list[Path]:
    """Every test file of the unit-test tree: ``tests/PACKAGE/**/test_*.py``."""
    return sorted(t for p in PACKAGES for t in (root / "tests" / p).rglob("test_*.py"))


def test_every_unit_test_file_sits_where_its_module_is() -> None:
    misplaced = [str(t.relative_to(ROOT)) for t in unit_tests() if mirrored_module(t) is None]
    assert not misplaced, (
        "test files with no module at their mirrored path (tests/a/b/test_x[_aspect].py tests "
        f"a/b/x.py): {', '.join(misplaced)}; move each beside the module it tests, or into a "
        "cross-cutting suite"
    )


def test_a_test_file_of_a_module_the_tree_lacks_is_found(tmp_path: Path) -> None:
    """The rule itself, on a tree of its own: an exact name, an aspect, a module elsewhere."""
    (tmp_path / "policy" / "nodes").mkdir(parents=True)
    (tmp_path / "policy" / "nodes" / "bench.py").touch()
    (tmp_path / "policy" / "risk_aware.py").touch()
    tests = tmp_path / "tests" / "policy"
    (tests / "nodes").mkdir(parents=True)
    for name in ("nodes/test_bench.py", "nodes/test_bench_files.py", "test_risk_aware_blind.py"):
        (tests / name).touch()
    (tests / "test_bench.py").touch()  # policy/bench.py is not in this tree
    (tests / "nodes" / "test_risk_aware.py").touch()  # a module of another folder
    found = {str(t.relative_to(tests)): mirrored_module(t, tmp_path) for t in unit_tests(tmp_path)}
    assert found == {
        "nodes/test_bench.py": tmp_path / "policy/nodes/bench.py",
        "nodes/test_bench_files.py": tmp_path / "policy/nodes/bench.py",
        "nodes/test_risk_aware.py": None,
        "test_bench.py": None,
        "test_risk_aware_blind.py": tmp_path / "policy/risk_aware.py",
    }

"""Every read of the wall clock, and every sleep, goes through the ``Clock`` of
``core/clock.py``, so a test or a replay can drive time. ``time.perf_counter`` (a duration,
never a date) is left to the benchmarks and the timings they report."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "pricing", "policy", "executor", "dashboard", "spotwise")
ALLOWED = {
    "core/clock.py": "the Clock itself",
    "executor/examples/": "the example training scripts run as users' own code on instances",
}
READS = {
    ("time", "time"),
    ("time", "monotonic"),
    ("time", "sleep"),
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("date", "today"),
    ("Timestamp", "now"),
    ("Timestamp", "utcnow"),
    ("Timestamp", "today"),
}
"""``module_or_class.function`` calls that read the clock or wait on it."""
NAMES = {"monotonic", "sleep", "utcnow"}
"""Names that read the clock when imported bare (``from time import monotonic``)."""


def clock_reads(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """The line and text of each call in ``tree`` that reads the wall clock or sleeps."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("time", "datetime"):
            for alias in node.names:
                if alias.name in NAMES:
                    yield node.lineno, f"from {node.module} import {alias.name}"
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner = node.func.value
        name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", None)
        if (name, node.func.attr) in READS:
            yield node.lineno, ast.unparse(node.func)


def offenders(root: Path = ROOT) -> list[str]:
    """``file:line call`` for every clock read outside :data:`ALLOWED`."""
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if any(relative.startswith(allowed) for allowed in ALLOWED):
                continue
            for line, call in sorted(clock_reads(ast.parse(path.read_text(), relative))):
                found.append(f"{relative}:{line} {call}")
    return found


def test_the_code_reads_the_clock_only_through_the_clock() -> None:
    found = offenders()
    assert not found, (
        "wall-clock reads outside core/clock.py (take a Clock, default SYSTEM_CLOCK; a UTC "
        f"timestamp is pricing.frames.utc_now(clock)): {', '.join(found)}"
    )


def test_a_planted_read_is_caught(tmp_path: Path) -> None:
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "clock.py").write_text("import time\nNOW = time.time()\n")
    (tmp_path / "policy").mkdir()
    (tmp_path / "policy" / "late.py").write_text(
        "import time\nimport pandas as pd\nfrom time import monotonic\n\n"
        "def f(clock):\n"
        "    clock.sleep(1)\n"
        "    time.sleep(2)\n"
        "    return pd.Timestamp.now(tz='UTC'), clock.time()\n"
    )
    assert offenders(tmp_path) == [
        "policy/late.py:3 from time import monotonic",
        "policy/late.py:7 time.sleep",
        "policy/late.py:8 pd.Timestamp.now",
    ]

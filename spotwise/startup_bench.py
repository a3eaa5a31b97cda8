"""``spotwise bench startup``: how long the everyday commands take to start, and their memory.

Each command runs as a fresh process several times on this machine (the median wall time and
the largest resident memory are reported), so the figures include the interpreter, every import
and the command's own work: what a person waits for.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from spotwise.console import StoreOption, out

COMMANDS = (("--help",), ("data", "summary"), ("jobs", "list"))
HEAVY = ("torch", "sklearn", "statsmodels", "streamlit", "stable_baselines3")
"""Libraries the CLI must not import to start (each costs seconds and hundreds of MB)."""


def measure(args: tuple[str, ...], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and peak resident MB of one ``spotwise ARGS`` process."""
    began = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "spotwise", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - began
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"spotwise {' '.join(args)} exited {process.returncode}")
    return seconds, usage.ru_maxrss / 1024  # KiB on Linux


def startup_bench(store: Path, repeats: int) -> dict[str, object]:
    """Median seconds and peak MB per command, and the heavy libraries ``spotwise.cli``
    imports (none expected)."""
    from spotwise.pricing.store import MarketStore

    MarketStore.open(store).close()  # `data summary` needs a store (an empty one is fine)
    env = {**os.environ, "SPOTWISE_STORE": str(store)}
    results: dict[str, dict[str, float]] = {}
    for args in COMMANDS:
        runs = [measure(args, env) for _ in range(repeats)]
        results[" ".join(args)] = {
            "median_s": round(statistics.median(s for s, _ in runs), 3),
            "max_rss_mb": round(max(mb for _, mb in runs), 1),
        }
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, json, spotwise.cli; "
            f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return {"commands": results, "heavy_imports": json.loads(probe.stdout), "repeats": repeats}


def bench_startup(
    repeats: Annotated[int, typer.Option("--repeats", min=1, help="Runs per command.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    store: StoreOption = None,
) -> None:
    """Start-up time and memory of `spotwise --help`, `data summary` and `jobs list`."""
    from spotwise import settings

    report = startup_bench(settings.store_path(store), repeats)
    if as_json:
        print(json.dumps(report))
        return
    for name, figures in report["commands"].items():  # type: ignore[attr-defined]
        out.print(f"spotwise {name}: {figures['median_s']:.2f} s, {figures['max_rss_mb']:.0f} MB")
    out.print(f"heavy libraries imported by the CLI: {report['heavy_imports'] or 'none'}")

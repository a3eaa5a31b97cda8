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
HEAVY = (
    "torch",
    "sklearn",
    "statsmodels",
    "streamlit",
    "stable_baselines3",
    "duckdb",
    "pandas",
    "numpy",
    "scipy",
    "boto3",
    "fastapi",
    "psycopg",
)
"""Libraries the CLI must not import to start (each costs a fraction of a second to seconds of
CPU, and tens to hundreds of MB); a command imports those it uses when it runs."""


_PEAK_AT_EXIT = """
import atexit, os, runpy, sys
def peak():
    with open("/proc/self/status") as status, open(os.environ["SPOTWISE_PEAK_FILE"], "w") as f:
        f.write(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
atexit.register(peak)
sys.argv = ["spotwise", *sys.argv[1:]]
runpy.run_module("spotwise", run_name="__main__", alter_sys=True)
"""
"""Run ``spotwise`` and write the process's own peak resident KiB (VmHWM) at exit: the
``ru_maxrss`` a parent reads counts the parent's memory too, for a child started by vfork or
fork keeps the high-water mark of the memory it started in (90 MB for a 46 MB ``--help``)."""


def measure(args: tuple[str, ...], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and peak resident MB of one ``spotwise ARGS`` process."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        peak_file = Path(folder) / "peak"
        began = time.perf_counter()  # benchmark timing: the measured start-up
        process = subprocess.run(
            [sys.executable, "-c", _PEAK_AT_EXIT, *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**env, "SPOTWISE_PEAK_FILE": str(peak_file)},
            check=False,
        )
        seconds = time.perf_counter() - began
        if process.returncode != 0:
            raise RuntimeError(f"spotwise {' '.join(args)} exited {process.returncode}")
        return seconds, int(peak_file.read_text()) / 1024  # KiB


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
    from spotwise.core import settings

    report = startup_bench(settings.store_path(store), repeats)
    if as_json:
        print(json.dumps(report))
        return
    for name, figures in report["commands"].items():  # type: ignore[attr-defined]
        out.print(f"spotwise {name}: {figures['median_s']:.2f} s, {figures['max_rss_mb']:.0f} MB")
    out.print(f"heavy libraries imported by the CLI: {report['heavy_imports'] or 'none'}")

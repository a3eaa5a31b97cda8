"""``spotwise bench store``: many processes on one store file at once, as a team runs it.

Readers (a dashboard, ``plan``) load whole tables as frames; supervisors write ledger entries
through the real :class:`~spotwise.executor.ledger.ledger.Ledger`; a forecast job replaces its
forecasts; a collector upserts prices. Each is its own process, and some writers are killed
with SIGKILL mid-run and started again. Every process reports how long each of its calls waited
for the file (:data:`spotwise.pricing.store.WAITS`); the bench prints the waits' percentiles per
role, the ledger writes kept pending (parked) instead of stored, every error, and whether each
ledger in the store holds what its supervisor said it wrote.
"""

from __future__ import annotations

import json
import random
import signal
import statistics
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from spotwise.console import StoreOption, err, fail, out
from spotwise.core.clock import SYSTEM_CLOCK

ROLES = ("reader", "supervisor", "forecaster", "collector")
"""What each bench process does, in the order the bench starts them."""


def _stop_at(seconds: float) -> Callable[[], bool]:
    end = SYSTEM_CLOCK.monotonic() + seconds
    return lambda: SYSTEM_CLOCK.monotonic() >= end


def _say(**values: Any) -> None:
    """One JSON line to the bench (flushed: a SIGKILL may follow at any time)."""
    print(json.dumps(values), flush=True)


def _reader(path: Path, done: Callable[[], bool]) -> None:
    """A dashboard's or ``plan``'s reads: whole market tables as frames, then the ledger's
    counts."""
    from spotwise.pricing.operational import open_operational
    from spotwise.pricing.store import MarketStore

    with MarketStore.open_to_read(path) as store, open_operational(path, read_only=True) as ops:
        while not done():
            store.query("SELECT * FROM availability")
            store.query("SELECT * FROM prices")
            ops.records("SELECT job_id, count(*) AS n FROM ledger GROUP BY job_id")
            SYSTEM_CLOCK.sleep(0.05)


def _supervisor(path: Path, done: Callable[[], bool]) -> None:
    """A supervisor's ledger: an entry every 50-150 ms, each said once the call returns."""
    from spotwise.executor.ledger.ledger import EntryKind, JobInfo, JobStatus, Ledger

    info = JobInfo(
        name="bench",
        command="train.py",
        launcher="local",
        compute_hours=1.0,
        deadline_hours=2.0,
        on_demand_price=3.06,
        simulated=True,
    )
    ledger = Ledger(path, info)
    written = 0
    _say(job=ledger.job_id, entries=written, pending=ledger.pending)
    while not done():
        ledger.record(EntryKind.CHECKPOINT, nbytes=1 << 20, detail=f"step {written}")
        written += 1
        _say(job=ledger.job_id, entries=written, pending=ledger.pending)
        SYSTEM_CLOCK.sleep(random.uniform(0.05, 0.15))
    ledger.finish(JobStatus.COMPLETED)
    _say(job=ledger.job_id, entries=written, pending=ledger.pending, finished=True)


def _forecaster(path: Path, done: Callable[[], bool]) -> None:
    """A scheduled forecast run: 20 series' forecasts replaced every second."""
    import pandas as pd

    from spotwise.pricing.frames import utc_now
    from spotwise.pricing.operational import open_operational

    with open_operational(path) as store:
        while not done():
            now = pd.Timestamp(utc_now())
            frame = pd.DataFrame(
                {
                    "unique_id": [f"series-{i % 20}" for i in range(2000)],
                    "ds": [now + pd.Timedelta(hours=i // 20) for i in range(2000)],
                    "model": "bench",
                    "horizon": [i // 20 + 1 for i in range(2000)],
                    "mean": 1.0,
                    "lo": 0.5,
                    "hi": 1.5,
                    "level": 90.0,
                    "p_preempt": 0.1,
                    "created_at": now,
                }
            )
            store.replace_forecasts(frame)
            SYSTEM_CLOCK.sleep(1.0)


def _collector(path: Path, done: Callable[[], bool]) -> None:
    """A price collector: a batch of 500 spot prices upserted every half second."""
    import pandas as pd

    from spotwise.pricing.clouds.registry import PROFILES
    from spotwise.pricing.frames import validate
    from spotwise.pricing.store import MarketStore

    batch = 0
    with MarketStore.open(path) as store:
        while not done():
            times = pd.date_range("2020-01-01", periods=500, freq="min", tz="UTC")
            frame = pd.DataFrame(
                {
                    "source": "bench",
                    "provider": next(iter(PROFILES)),
                    "region": "us-east-1",
                    "zone": "us-east-1a",
                    "instance_type": "p3.2xlarge",
                    "market": "spot",
                    "ts": times + pd.Timedelta(minutes=500 * batch),
                    "price": 1.0,
                }
            )
            store.upsert({"prices": validate("prices", frame, origin="bench")})
            batch += 1
            SYSTEM_CLOCK.sleep(0.5)


WORKERS: dict[str, Callable[[Path, Callable[[], bool]], None]] = {
    "reader": _reader,
    "supervisor": _supervisor,
    "forecaster": _forecaster,
    "collector": _collector,
}


def worker(role: str, path: Path, seconds: float) -> None:
    """Run one bench process's role, then report its waits (also when SIGTERM ends it)."""
    import spotwise.executor.ledger.schema  # noqa: F401  (the store holds the ledger too)
    from spotwise.pricing.errors import PricingError
    from spotwise.pricing.store import WAITS

    def report(*_: object) -> None:
        _say(role=role, waits=list(WAITS))
        sys.exit(0)

    signal.signal(signal.SIGTERM, report)
    try:
        WORKERS[role](path, _stop_at(seconds))
    except PricingError as exc:
        _say(role=role, error=str(exc))
    report()


@dataclass
class _Process:
    role: str
    popen: subprocess.Popen[str]
    lines: list[dict[str, Any]] = field(default_factory=list)
    killed: bool = False


def _start(role: str, path: Path, seconds: float) -> _Process:
    popen = subprocess.Popen(
        [sys.executable, "-m", "spotwise.store_bench", role, str(path), str(seconds)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return _Process(role, popen)


def _percentile(values: list[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def store_bench(
    path: Path, *, seconds: float, readers: int, supervisors: int, kills: int, seed: int
) -> dict[str, Any]:
    """Run the processes on the store at ``path`` for ``seconds``, killing ``kills`` writers
    (SIGKILL, each then started again); return the report."""
    from spotwise.pricing.store import MarketStore

    MarketStore.open(path).close()
    rng = random.Random(seed)
    roles = ["reader"] * readers + ["supervisor"] * supervisors + ["forecaster", "collector"]
    processes = [_start(role, path, seconds) for role in roles]
    began = SYSTEM_CLOCK.monotonic()
    kill_at = sorted(rng.uniform(0.2, 0.7) * seconds for _ in range(kills))
    for moment in kill_at:
        SYSTEM_CLOCK.sleep(max(0.0, began + moment - SYSTEM_CLOCK.monotonic()))
        live = [p for p in processes if p.role != "reader" and p.popen.poll() is None]
        if not live:
            break
        victim = rng.choice(live)
        victim.popen.kill()
        victim.killed = True
        remaining = seconds - (SYSTEM_CLOCK.monotonic() - began)
        processes.append(_start(victim.role, path, max(1.0, remaining)))
    raw_text: list[str] = []
    for process in processes:
        stdout, stderr = process.popen.communicate(timeout=seconds + 300)
        process.lines = [json.loads(line) for line in stdout.splitlines() if line.strip()]
        raw_text += [
            line for line in stderr.splitlines() if "Error:" in line or "Traceback" in line
        ]
    return _report(path, processes, raw_text, seconds)


def _report(
    path: Path, processes: list[_Process], raw_text: list[str], seconds: float
) -> dict[str, Any]:
    from spotwise.pricing.operational import open_operational

    waits: dict[str, list[float]] = {role: [] for role in ROLES}
    errors = [line["error"] for p in processes for line in p.lines if "error" in line]
    said: dict[str, int] = {}
    parked = 0
    unreported = 0
    for process in processes:
        for line in process.lines:
            if "waits" in line:
                waits[process.role] += line["waits"]
            if "job" in line:
                said[line["job"]] = line["entries"]
                parked = max(parked, line["pending"])
        if not process.killed and not any("waits" in line for line in process.lines):
            unreported += 1
    with open_operational(path, read_only=True) as store:
        stored = {
            row["job_id"]: int(row["n"])
            for row in store.records(
                "SELECT job_id, count(*) AS n FROM ledger WHERE kind = 'checkpoint' GROUP BY job_id"
            )
        }
    # a killed supervisor may have stored its last entry without living to say so
    short = {job: (n, stored.get(job, 0)) for job, n in said.items() if stored.get(job, 0) < n}
    everything = [w for values in waits.values() for w in values]
    return {
        "seconds": seconds,
        "processes": {role: sum(p.role == role for p in processes) for role in ROLES},
        "killed": sum(p.killed for p in processes),
        "calls": len(everything),
        "wait_s": {
            role: {
                "calls": len(values),
                "p50": _percentile(values, 0.5),
                "p99": _percentile(values, 0.99),
                "max": max(values) if values else None,
                "mean": statistics.fmean(values) if values else None,
            }
            for role, values in waits.items()
        },
        "p99_wait_s": _percentile(everything, 0.99),
        "max_wait_s": max(everything) if everything else None,
        "parked_writes": parked,
        "ledgers": len(said),
        "ledgers_short": short,
        "errors": errors,
        "raw_driver_text": raw_text,
        "processes_without_report": unreported,
    }


def bench_store(
    seconds: Annotated[float, typer.Option("--seconds", min=1.0, help="How long to run.")] = 30.0,
    readers: Annotated[int, typer.Option("--readers", min=0, help="Reading processes.")] = 3,
    supervisors: Annotated[
        int, typer.Option("--supervisors", min=0, help="Processes writing a ledger.")
    ] = 3,
    kills: Annotated[
        int, typer.Option("--kills", min=0, help="Writers killed (SIGKILL) and started again.")
    ] = 3,
    seed: Annotated[int, typer.Option("--seed", help="Which writers die, and when.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    store: StoreOption = None,
) -> None:
    """Many processes reading and writing one store at once: how long their calls wait."""
    import tempfile

    from spotwise.core import settings
    from spotwise.pricing.ingest import load_paths
    from spotwise.pricing.store import MarketStore

    with tempfile.TemporaryDirectory(prefix="spotwise-bench-store-") as scratch:
        if store is None:
            target = Path(scratch) / "bench.duckdb"
            err.print("loading the bundled data into a scratch store")
            with MarketStore.open(target) as fresh:
                load_paths(fresh, [settings.bundled_data_dir()])
        else:
            target = store
        err.print(
            f"{readers} readers, {supervisors} supervisors, a forecaster and a collector on "
            f"{target} for {seconds:.0f} s ({kills} writers killed and restarted)"
        )
        report = store_bench(
            target,
            seconds=seconds,
            readers=readers,
            supervisors=supervisors,
            kills=kills,
            seed=seed,
        )
    if as_json:
        print(json.dumps(report))
    else:
        for role, figures in report["wait_s"].items():
            if figures["calls"]:
                out.print(
                    f"{role}: {figures['calls']} calls, wait p50 {figures['p50'] * 1000:.0f} ms,"
                    f" p99 {figures['p99'] * 1000:.0f} ms, max {figures['max'] * 1000:.0f} ms"
                )
        out.print(
            f"parked ledger writes: {report['parked_writes']}; ledgers short of what their "
            f"supervisor wrote: {len(report['ledgers_short'])}; errors: {len(report['errors'])}"
        )
    if report["errors"] or report["ledgers_short"] or report["raw_driver_text"]:
        fail("the store lost writes or refused calls (see the report)")


if __name__ == "__main__":
    worker(sys.argv[1], Path(sys.argv[2]), float(sys.argv[3]))

"""The one rule ``spotwise gc CLOUD`` applies: end only what the ledger proves orphaned, or what
the user names and the ledger does not show live."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from spotwise.executor.clouds.orphans import Judged, Verdict, judge, ledger_verdicts, this_host
from spotwise.executor.ledger import schema  # noqa: F401  (registers the jobs table)
from spotwise.executor.ledger.liveness import process_started
from spotwise.pricing.operational import open_operational


def add_job(
    store: Path, job_id: str, status: str, host: str, pid: int | None, started: int | None
) -> None:
    with open_operational(store) as market:
        market.execute(
            "INSERT INTO jobs (job_id, name, command, launcher, started, status, compute_hours, "
            "deadline_hours, on_demand_price, checkpoint_usd_per_gb_month, host, "
            "supervisor_pid, supervisor_started) "
            "VALUES (?, 'j', 'python train.py', 'aws', ?, ?, 1, 2, 3.06, 0.023, ?, ?, ?)",
            [job_id, datetime(2026, 1, 1, tzinfo=UTC), status, host, pid, started],
        )


def gone_pid() -> tuple[int, int | None]:
    """The pid and start time of a process that has exited and been reaped."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    started = process_started(child.pid)
    child.communicate(b"", timeout=30)
    return child.pid, started


def test_each_job_of_the_ledger_is_judged_by_its_status_host_and_supervisor(tmp_path: Path) -> None:
    store = tmp_path / "market.duckdb"
    here, me = this_host(), os.getpid()
    dead, dead_started = gone_pid()
    add_job(store, "j-done", "completed", "another-box", 4242, None)  # the status comes first
    add_job(store, "j-away", "running", "another-box", me, None)
    add_job(store, "j-nopid", "running", here, None, None)
    add_job(store, "j-live", "running", here, me, process_started(me))
    add_job(store, "j-gone", "running", here, dead, dead_started)
    assert ledger_verdicts(store) == {
        "j-done": Verdict(orphaned=True, why="its job is completed in the ledger"),
        "j-away": Verdict(
            orphaned=False, why="its job runs under a supervisor on another-box, not checked here"
        ),
        "j-nopid": Verdict(orphaned=False, why="its job runs; the ledger has no supervisor pid"),
        "j-live": Verdict(orphaned=False, why=f"its job runs under a live supervisor (pid {me})"),
        "j-gone": Verdict(
            orphaned=True, why=f"its job's supervisor (pid {dead} on {here}) is gone"
        ),
    }


def test_without_a_store_file_there_is_no_ledger(tmp_path: Path) -> None:
    assert ledger_verdicts(tmp_path / "never-made.duckdb") is None
    assert not (tmp_path / "never-made.duckdb").exists()


def test_the_ledger_decides_and_a_named_job_it_does_not_know_is_ended(tmp_path: Path) -> None:
    store = tmp_path / "market.duckdb"
    verdicts = {
        "j-done": Verdict(orphaned=True, why="its job is completed in the ledger"),
        "j-live": Verdict(orphaned=False, why="its job runs under a live supervisor (pid 7)"),
    }
    named = frozenset({"j-live", "j-other"})
    assert judge("i-1", "j-done", verdicts, frozenset(), store) == Judged(
        resource="i-1", job_id="j-done", end=True, why="its job is completed in the ledger"
    )
    # naming a job the ledger shows live does not end it
    assert judge("i-2", "j-live", verdicts, named, store).end is False
    assert judge("s-3", "j-other", verdicts, named, store, kind="secret") == Judged(
        kind="secret", resource="s-3", job_id="j-other", end=True, why="named with --job"
    )


def test_a_job_neither_in_the_ledger_nor_named_is_left_alone_saying_how_to_end_it(
    tmp_path: Path,
) -> None:
    store = tmp_path / "market.duckdb"
    known = judge("i-4", "j-stranger", {}, frozenset(), store)
    assert known.end is False
    assert known.why == (
        f"job j-stranger is not in the ledger at {store}: left alone; if it is yours and no "
        "supervisor runs it, add --job j-stranger (or pass the --store that ran it)"
    )
    untagged = judge("i-5", "", None, frozenset(), store)
    assert untagged.end is False
    assert untagged.why.startswith(f"job ? is not in {store} (no ledger): left alone;")
    assert "add --job ID " in untagged.why

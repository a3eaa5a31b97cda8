"""The ledger loses nothing: writes a busy store cannot take wait in memory and in a pending
journal, go in order once the store is free, and show as pending meanwhile."""

from __future__ import annotations

import json
import logging
import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from spotwise.executor.ledger.journal import journal_path, pending_writes, read_journal
from spotwise.executor.ledger.ledger import EntryKind, JobInfo, JobStatus, Ledger, job_report
from spotwise.pricing.errors import StoreError
from spotwise.pricing.local_operational import SqliteStore, operational_path
from spotwise.pricing.operational import open_operational
from spotwise.pricing.store import MarketStore
from tests.conftest import CliRun, StoreBusy

INFO = JobInfo(
    name="train.py",
    command="python train.py",
    launcher="local",
    compute_hours=2.0,
    deadline_hours=4.0,
    on_demand_price=3.06,
    simulated=True,
)


def record_some(ledger: Ledger) -> None:
    ledger.running_in(4242)
    ledger.record(EntryKind.INSTANCE, pool="a", market="spot", hours=0.5, price=0.9, cost_usd=0.45)
    ledger.record(EntryKind.NOTICE, pool="a", market="spot")
    ledger.record(EntryKind.PREEMPTION, pool="a", market="spot")
    ledger.record(EntryKind.LOST_WORK, pool="a", hours=0.1, price=0.9, cost_usd=0.09)
    ledger.record(
        EntryKind.INSTANCE, pool=None, market="on-demand", hours=1.6, price=3.06, cost_usd=4.9
    )


def stored(store: Path, job_id: str) -> tuple[int, str | None]:
    with open_operational(store, read_only=True) as market:
        rows = market.records("SELECT status FROM jobs WHERE job_id = ?", [job_id])
        entries = market.records("SELECT count(*) AS n FROM ledger WHERE job_id = ?", [job_id])
    return int(entries[0]["n"]), rows[0]["status"] if rows else None


def test_writes_a_busy_store_cannot_take_wait_in_a_journal_and_go_in_order_when_it_is_free(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    store_busy: StoreBusy,
) -> None:
    store = tmp_path / "market.duckdb"
    MarketStore.open(store).close()
    monkeypatch.setenv("SPOTWISE_STORE_WAIT_S", "1")
    with store_busy(store):
        with caplog.at_level(logging.WARNING):
            ledger = Ledger(store, INFO)
            record_some(ledger)
        assert ledger.pending == 7  # the start, the process group and five entries
        journal = journal_path(store, ledger.job_id)
        assert [w.write.value for w in read_journal(journal)] == [
            "start",
            "process_group",
            *["entry"] * 5,
        ]
        assert stat.S_IMODE(journal.stat().st_mode) == 0o600
        assert stat.S_IMODE(journal.parent.stat().st_mode) == 0o700
        assert sum("keeps writes in" in r.message for r in caplog.records) == 1  # said once
        before = ledger.report()
        assert before.pending_writes == 7 and before.preemptions == 1 and before.instances == 2
    ledger.retry_every_s = 0.0
    ledger.retry()
    assert ledger.pending == 0 and not journal.exists()
    assert stored(store, ledger.job_id) == (5, "running")
    ledger.finish(JobStatus.COMPLETED)
    with open_operational(store, read_only=True) as market:
        after = job_report(market, ledger.job_id)
        seqs = [r["seq"] for r in market.records("SELECT seq FROM ledger ORDER BY ts, seq")]
        pgid = market.records("SELECT worker_pgid FROM jobs")[0]["worker_pgid"]
    assert seqs == [1, 2, 3, 4, 5] and pgid == 4242
    assert after == ledger.report()
    assert after.status == "completed" and after.pending_writes == 0
    assert after.cost_usd == pytest.approx(before.cost_usd)


@pytest.mark.slow
def test_a_finished_job_whose_store_stays_busy_is_shown_with_its_pending_writes(
    cli: CliRun, store_file: Path, monkeypatch: pytest.MonkeyPatch, store_busy: StoreBusy
) -> None:
    MarketStore.open(store_file).close()
    monkeypatch.setenv("SPOTWISE_STORE_WAIT_S", "0.5")
    with store_busy(store_file):
        ledger = Ledger(store_file, INFO)
        record_some(ledger)
        ledger.finish(JobStatus.COMPLETED)  # gives up after the wait, leaves the journal
        assert ledger.pending == 8 and journal_path(store_file, ledger.job_id).exists()
        # its supervisor is done and has let go of the journal: the next `jobs` command
        # writes it once the store is free
    listed = cli("jobs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    assert row["status"] == "completed" and row["pending"] == 0 and row["preemptions"] == 1
    assert not journal_path(store_file, ledger.job_id).exists()
    assert stored(store_file, ledger.job_id) == (5, "completed")


@pytest.mark.slow
def test_jobs_show_counts_a_live_supervisors_pending_writes_and_marks_them(
    cli: CliRun, store_file: Path, monkeypatch: pytest.MonkeyPatch, store_busy: StoreBusy
) -> None:
    MarketStore.open(store_file).close()
    monkeypatch.setenv("SPOTWISE_STORE_WAIT_S", "0.5")
    with store_busy(store_file):
        ledger = Ledger(store_file, INFO)
        record_some(ledger)
    # the supervisor has not retried yet: its journal is still locked, so it stays its own
    shown = cli("jobs", "show", ledger.job_id, "--json")
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert report["pending_writes"] == 7 and report["preemptions"] == 1
    assert report["status"] == "running" and report["instances"] == 2
    text = cli("jobs", "show", ledger.job_id)
    assert "7 ledger writes pending" in text.stdout
    listed = json.loads(cli("jobs", "list", "--json").stdout)
    assert [(r["job_id"], r["pending"]) for r in listed] == [(ledger.job_id, 7)]
    assert stored(store_file, ledger.job_id) == (0, None)  # the live supervisor's to write
    ledger.finish(JobStatus.COMPLETED)
    assert stored(store_file, ledger.job_id) == (5, "completed")


HOLD_A_WRITE = """
import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN IMMEDIATE")
print("held", flush=True)
time.sleep(1e5)
"""


def another_writer(store: Path) -> subprocess.Popen[str]:
    """Another process in a write transaction on the operational file (returns once it is)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_A_WRITE, str(operational_path(store))],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def test_pending_writes_wait_for_another_writers_transaction_to_end_rather_than_stay_pending(
    tmp_path: Path, operational_store: str
) -> None:
    """Once a write is pending, the next try waits a moment for the store: another process's
    transaction of the moment does not keep the writes out (tried without waiting, they stayed
    pending until a try found the file free)."""
    if operational_store != "file":
        pytest.skip("the ledger lives in PostgreSQL: there is no local file to hold")
    store = tmp_path / "market.duckdb"
    SqliteStore.open(store).close()
    holder = another_writer(store)
    try:
        ledger = Ledger(store, INFO)  # waits its 2 s and keeps the write
        assert ledger.pending == 1
    finally:
        holder.kill()
        holder.wait()
    holder = another_writer(store)  # a writer of the moment: it ends soon after the try begins
    ending = threading.Timer(0.1, holder.kill)
    ending.start()
    try:
        ledger.retry_every_s = 0.0
        ledger.retry()
        assert ledger.pending == 0 and not journal_path(store, ledger.job_id).exists()
        ledger.record(EntryKind.NOTICE, pool="a", market="spot")
        assert ledger.pending == 0
    finally:
        ending.join()
        holder.wait()
    assert stored(store, ledger.job_id) == (1, "running")


SUPERVISOR = """
import sys, time
from pathlib import Path
from spotwise.executor.ledger.ledger import EntryKind, JobInfo, Ledger
ledger = Ledger(Path(sys.argv[1]), JobInfo(name="x", command="x", launcher="local",
    compute_hours=1.0, deadline_hours=2.0, on_demand_price=3.0, simulated=True))
for n in range(int(sys.argv[2])):
    ledger.record(EntryKind.CHECKPOINT, nbytes=n, detail=f"checkpoint {n}")
print(ledger.job_id, ledger.pending, flush=True)
time.sleep(600)
"""


@pytest.mark.slow
def test_a_supervisor_killed_while_the_store_was_busy_loses_none_of_its_writes(
    cli: CliRun, store_file: Path, store_busy: StoreBusy
) -> None:
    MarketStore.open(store_file).close()
    with store_busy(store_file):
        supervisor = subprocess.Popen(
            [sys.executable, "-c", SUPERVISOR, str(store_file), "40"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "SPOTWISE_STORE_WAIT_S": "0.2"},
        )
        assert supervisor.stdout is not None
        job_id, pending = supervisor.stdout.readline().split()
        assert int(pending) == 41
        os.kill(supervisor.pid, signal.SIGKILL)
        supervisor.wait()
    assert len(pending_writes(store_file)[job_id]) == 41
    shown = cli("jobs", "show", job_id, "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["pending_writes"] == 0
    with open_operational(store_file, read_only=True) as market:
        details = [r["detail"] for r in market.records("SELECT detail FROM ledger ORDER BY seq")]
    assert details == [f"checkpoint {n}" for n in range(40)]
    assert pending_writes(store_file) == {}


def test_a_damaged_journal_is_refused_by_file_and_line_and_a_cut_short_line_is_left_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = tmp_path / "market.duckdb"
    MarketStore.open(store).close()
    journal = journal_path(store, "abc123")
    journal.parent.mkdir()
    good = '{"write": "process_group", "values": {"worker_pgid": 7, "job_id": "abc123"}}\n'
    journal.write_text(good + '{"write": "process_gr')
    with caplog.at_level(logging.WARNING):
        assert len(read_journal(journal)) == 1
    assert "cut short" in caplog.text
    journal.write_text(good + '{"write": "drop table", "values": {}}\n' + good)
    with pytest.raises(StoreError, match=r"abc123.jsonl: line 2 is not a ledger write"):
        read_journal(journal)
    journal.write_text('{"write": "finish", "values": {"status": "done", "sql": "x"}}\n')
    with pytest.raises(StoreError, match="line 1"):
        read_journal(journal)
    with pytest.raises(StoreError, match="not a job id"):
        journal_path(store, "../../etc/passwd")


@pytest.mark.slow
def test_a_damaged_journal_does_not_hide_the_other_jobs(cli: CliRun, store_file: Path) -> None:
    MarketStore.open(store_file).close()
    ledger = Ledger(store_file, INFO)
    ledger.finish(JobStatus.COMPLETED)
    damaged = journal_path(store_file, "deadbeef")
    damaged.parent.mkdir(exist_ok=True)
    damaged.write_text('{"write": "drop", "values": {}}\n')
    listed = cli("jobs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [row["job_id"] for row in json.loads(listed.stdout)] == [ledger.job_id]
    assert "deadbeef.jsonl: line 1 is not a ledger write" in listed.stderr
    shown = cli("jobs", "show", "deadbeef")
    assert shown.returncode == 1 and "line 1 is not a ledger write" in shown.stderr
    assert damaged.read_text() == '{"write": "drop", "values": {}}\n'  # left as it was


def test_a_journal_written_before_sweeps_still_replays(tmp_path: Path) -> None:
    """A job's start written by a Spotwise from before ``jobs.sweep`` and ``jobs.trial``
    (ledger schema 5) goes in with both empty."""
    from spotwise.executor.ledger.journal import ADDED_JOB_COLUMNS, LedgerWrite, Write, apply_writes

    ledger = Ledger(tmp_path / "market.duckdb", INFO)
    start = next(w for w in ledger._writes if w.write is Write.START)
    old = {k: v for k, v in start.values.items() if k not in ADDED_JOB_COLUMNS}
    old["job_id"] = "before-sweeps"
    line = json.dumps({"write": "start", "values": old})
    write = LedgerWrite.from_line(line)
    with open_operational(tmp_path / "market.duckdb") as store:
        apply_writes(store, [write])
        row = store.query("SELECT sweep, trial, status FROM jobs WHERE job_id = 'before-sweeps'")
    assert row.iloc[0].to_dict() == {"sweep": None, "trial": None, "status": "running"}


@pytest.mark.slow  # CLI subprocesses
def test_jobs_list_and_show_answer_while_another_process_writes_the_ledger_and_reads_the_store(
    store_file: Path, tmp_path: Path, operational_store: str
) -> None:
    """`jobs list` and `jobs show` answer while another process holds a write on the ledger's
    file and a connection to the store file (a dashboard's, a collector's): readers wait for
    no writer."""
    if operational_store != "file":
        pytest.skip("the ledger lives in PostgreSQL: there is no local file to share")
    MarketStore.open(store_file).close()
    ledger = Ledger(store_file, INFO)
    record_some(ledger)
    ledger.finish(JobStatus.COMPLETED)
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sqlite3, sys, time; c = duckdb.connect(sys.argv[1], read_only=True); "
            "w = sqlite3.connect(sys.argv[2], isolation_level=None); w.execute('BEGIN IMMEDIATE'); "
            "w.execute(\"DELETE FROM ledger\"); print('holding', flush=True); time.sleep(120)",
            str(store_file),
            str(operational_path(store_file)),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert reader.stdout is not None and reader.stdout.readline() == "holding\n"
        with (  # a write meanwhile waits for it
            pytest.raises(StoreError, match="busy"),
            SqliteStore.open(store_file, wait_s=0.2) as writer,
        ):
            writer.execute("DELETE FROM jobs")
        env = {**os.environ, "SPOTWISE_STORE": str(store_file), "SPOTWISE_STORE_WAIT_S": "1"}
        for args in (("list", "--json"), ("show", ledger.job_id, "--json")):
            ran = subprocess.run(
                [sys.executable, "-m", "spotwise", "jobs", *args],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert ran.returncode == 0, ran.stderr
            assert ledger.job_id in ran.stdout
    finally:
        reader.kill()
        reader.wait()


REPLAY_AND_REMOVE = """
import fcntl, os, sys, time
path, writer = sys.argv[1], sys.argv[2]
fd = os.open(path, os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
def writer_has_it_open():
    for name in os.listdir(f"/proc/{writer}/fd"):
        try:
            if os.readlink(f"/proc/{writer}/fd/{name}") == path:
                return True
        except OSError:
            pass
    return False
while not writer_has_it_open():
    time.sleep(0.01)
os.unlink(path)  # replayed: what it held is in the store
os.close(fd)
"""


def test_a_journal_replayed_and_removed_before_its_writer_locked_it_is_made_anew(
    tmp_path: Path,
) -> None:
    """Another process may take a journal's lock between its writer creating it and locking
    it, replay it and remove it: the writer's lines then go to a new journal at the same path,
    never to the removed file."""
    from spotwise.executor.ledger.journal import Journal, LedgerWrite, Write

    path = journal_path(tmp_path / "market.duckdb", "0123456789ab")
    path.parent.mkdir(mode=0o700)
    path.touch(mode=0o600)
    replayer = subprocess.Popen(
        [sys.executable, "-c", REPLAY_AND_REMOVE, str(path), str(os.getpid())],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert replayer.stdout is not None and replayer.stdout.readline() == "locked\n"
    journal = Journal(path)
    write = LedgerWrite(Write.PROCESS_GROUP, {"worker_pgid": 7, "job_id": "0123456789ab"})
    try:
        # opened, it waits for the lock; the replayer removes the file once it sees it open
        journal.append([write])
        assert replayer.wait(timeout=30) == 0
        assert read_journal(path) == [write]
    finally:
        journal.close()

"""The operational tables' SQLite file: readers beside a writer, times back as UTC, a store of
an older Spotwise copied over once, private files, read-only connections, busy writes."""

from __future__ import annotations

import stat
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest

from spotwise.executor.ledger import schema as ledger_schema  # noqa: F401  (registers jobs and ledger)
from spotwise.pricing.errors import StoreError
from spotwise.pricing.local_operational import SqliteStore, operational_path
from spotwise.pricing.schemas import SCHEMAS
from spotwise.pricing.store import MarketStore
from tests.conftest import CliRun

JOB = (
    "INSERT INTO jobs (job_id, name, command, launcher, started, status, compute_hours, "
    "deadline_hours, on_demand_price, checkpoint_usd_per_gb_month) "
    "VALUES (?, 'n', 'c', 'local', ?, 'running', 1, 2, 3, 0.02)"
)
ENTRY = "INSERT INTO ledger (job_id, seq, ts, kind) VALUES (?, ?, ?, 'notice')"

HOLD_A_WRITE = """
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN IMMEDIATE")
con.execute("INSERT INTO ledger (job_id, seq, ts, kind) VALUES ('held', 1, '2026-01-01', 'x')")
print("holding", flush=True)
sys.stdin.readline()
"""


def test_a_reader_reads_while_another_process_holds_a_write_and_a_writer_waits_for_it(
    store_file: Path,
) -> None:
    with SqliteStore.open(store_file) as store:
        store.execute(JOB, ["a", "2026-12-07T10:00:00+00:00"])
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_A_WRITE, str(operational_path(store_file))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        with SqliteStore.open(store_file, read_only=True, wait_s=0.0) as reader:
            assert [r["job_id"] for r in reader.records("SELECT job_id FROM jobs")] == ["a"]
            # the other process's write is not committed: a reader never sees half of one
            assert reader.records("SELECT * FROM ledger") == []
        with SqliteStore.open(store_file, wait_s=0.2) as writer:
            with pytest.raises(StoreError, match="busy, try again") as refused:
                writer.execute(ENTRY, ["a", 1, "2026-12-07T10:00:00+00:00"])
            assert not refused.value.permanent
            assert writer.records("SELECT * FROM ledger") == []
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    with SqliteStore.open(store_file, wait_s=5.0) as writer:
        writer.execute(ENTRY, ["a", 1, "2026-12-07T10:00:00+00:00"])
        assert len(writer.records("SELECT * FROM ledger")) == 1


COUNT_ENTRIES = """
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("PRAGMA journal_mode=WAL")
print(con.execute("SELECT count(*) FROM ledger").fetchone()[0])
con.close()
"""


def test_a_commit_survives_this_process_opening_the_store_again_and_another_closing_it(
    store_file: Path,
) -> None:
    """Several connections in one process (a fleet's jobs are threads) and another process that
    closes its own: every commit is there for a new process to read. Opening the store must not
    open and close the database file itself, which drops this process's locks on it, so the
    other process, closing, took itself for the last, checkpointed and deleted the WAL under
    the next commit (a ledger entry lost in the soak)."""
    database = str(operational_path(store_file))

    def entries_seen_by_another_process() -> int:
        counted = subprocess.run(
            [sys.executable, "-c", COUNT_ENTRIES, database],
            capture_output=True,
            text=True,
            check=True,
        )
        return int(counted.stdout)

    with SqliteStore.open(store_file) as first:
        first.execute(ENTRY, ["a", 1, "2026-12-07T10:00:00+00:00"])
        SqliteStore.open(store_file).close()  # another of this process's connections
        assert entries_seen_by_another_process() == 1
        first.execute(ENTRY, ["a", 2, "2026-12-07T10:00:01+00:00"])
        assert entries_seen_by_another_process() == 2


def test_times_come_back_as_utc_timestamps_named_aliased_or_computed(store_file: Path) -> None:
    started = datetime(2026, 12, 7, 11, 30, tzinfo=UTC)
    with SqliteStore.open(store_file) as store:
        store.execute(JOB, ["a", started])
        store.execute(JOB, ["b", pd.Timestamp("2026-12-07 12:00:00.25+01:00")])
        row = store.records("SELECT started FROM jobs WHERE job_id = 'a'")[0]
        assert row["started"] == started and row["started"].tzinfo is not None
        frame = store.query(
            "SELECT job_id, started AS since, max(started) AS newest FROM jobs GROUP BY job_id "
            "ORDER BY job_id"
        )
        for column in ("since", "newest"):
            assert isinstance(frame[column].dtype, pd.DatetimeTZDtype), column
            assert str(frame[column].dt.tz) == "UTC"
        assert frame["since"].tolist() == [
            pd.Timestamp(started),
            pd.Timestamp("2026-12-07 11:00:00.25", tz="UTC"),
        ]
        later = store.records(
            "SELECT job_id FROM jobs WHERE started > ?", [datetime(2026, 12, 7, 10, 45, tzinfo=UTC)]
        )
        assert [r["job_id"] for r in later] == ["a", "b"]


def test_an_older_stores_jobs_ledger_and_forecasts_are_copied_over_once(store_file: Path) -> None:
    with MarketStore.open(store_file) as old:
        old.execute(JOB, ["old", "2026-12-01T08:00:00+00:00"])
        old.execute(ENTRY, ["old", 1, "2026-12-01T09:00:00+00:00"])
        old.execute(ENTRY, ["old", 2, "2026-12-01T10:00:00+00:00"])
        old.execute(
            "INSERT INTO forecasts (unique_id, ds, model, horizon, mean, created_at) "
            "VALUES ('pool', '2026-12-02T00:00:00+00:00', 'arima', 1, 0.9, "
            "'2026-12-01T00:00:00+00:00')"
        )
    assert not operational_path(store_file).exists()
    with SqliteStore.open(store_file) as store:
        jobs = store.query("SELECT job_id, started FROM jobs")
        assert jobs["job_id"].tolist() == ["old"]
        assert jobs["started"].iloc[0] == pd.Timestamp("2026-12-01 08:00", tz="UTC")
        assert store.records("SELECT seq FROM ledger ORDER BY seq") == [{"seq": 1}, {"seq": 2}]
        assert store.records("SELECT model, mean FROM forecasts") == [
            {"model": "arima", "mean": 0.9}
        ]
        assert store.schema_versions() == {name: s.version for name, s in SCHEMAS.items()}
    with SqliteStore.open(store_file) as again:  # built already: nothing copied twice
        assert len(again.records("SELECT * FROM ledger")) == 2


def test_the_file_its_log_and_its_folder_are_only_the_owners(store_file: Path) -> None:
    with SqliteStore.open(store_file) as store:
        store.execute(JOB, ["a", "2026-12-07T10:00:00+00:00"])
        database = operational_path(store_file)
        made = [database, database.with_name(database.name + "-wal")]
        for path in made:
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        assert stat.S_IMODE(database.parent.stat().st_mode) == 0o700


def test_a_read_only_connection_refuses_a_write_and_a_failed_batch_leaves_nothing(
    store_file: Path,
) -> None:
    with SqliteStore.open(store_file, read_only=True) as reader:
        with pytest.raises(StoreError, match="refused the write") as refused:
            reader.execute(JOB, ["a", "2026-12-07T10:00:00+00:00"])
        assert refused.value.permanent
    with SqliteStore.open(store_file) as store:
        with pytest.raises(StoreError, match="nothing was stored"):
            store.execute_all(
                [
                    (JOB, ["a", "2026-12-07T10:00:00+00:00"]),
                    (JOB, ["a", "2026-12-07T10:00:00+00:00"]),  # the same key again
                ]
            )
        assert store.records("SELECT * FROM jobs") == []


def test_upserts_replace_by_key_and_forecasts_replace_each_series_models_run(
    store_file: Path,
) -> None:
    observed = pd.Timestamp("2026-12-07 10:00", tz="UTC")
    scores = pd.DataFrame(
        {
            "source": "aws-sps",
            "provider": "aws",
            "region": "us-east-1",
            "zone": ["us-east-1a", "us-east-1b"],
            "instance_type": "p3.2xlarge",
            "observed": observed,
            "score": [3, 7],
        }
    )
    with SqliteStore.open(store_file) as store:
        assert store.upsert({"placement_scores": scores}) == {"placement_scores": 2}
        assert store.upsert({"placement_scores": scores.assign(score=[9, 9])}) == {
            "placement_scores": 0
        }
        assert store.query("SELECT score FROM placement_scores")["score"].tolist() == [9, 9]

        def forecasts(model: str, means: list[float]) -> pd.DataFrame:
            return pd.DataFrame(
                {
                    "unique_id": "pool",
                    "ds": pd.date_range("2026-12-08", periods=len(means), freq="h", tz="UTC"),
                    "model": model,
                    "horizon": range(1, len(means) + 1),
                    "mean": means,
                    "lo": None,
                    "hi": None,
                    "level": None,
                    "p_preempt": None,
                    "created_at": observed,
                }
            )

        store.replace_forecasts(forecasts("arima", [1.0, 2.0, 3.0]))
        store.replace_forecasts(forecasts("naive", [5.0]))
        assert store.replace_forecasts(forecasts("arima", [4.0])) == 1
        rows = store.query("SELECT model, mean, ds FROM forecasts ORDER BY model")
        assert rows[["model", "mean"]].values.tolist() == [["arima", 4.0], ["naive", 5.0]]
        assert rows["ds"].iloc[0] == pd.Timestamp("2026-12-08", tz="UTC")


def test_a_file_that_is_not_a_database_is_one_clear_error_and_stays_as_it_was(
    store_file: Path, cli: CliRun
) -> None:
    database = operational_path(store_file)
    database.parent.mkdir(parents=True)
    database.write_text("not a database")
    with pytest.raises(StoreError, match="move it aside") as refused:
        SqliteStore.open(store_file)
    assert refused.value.permanent
    listed = cli("jobs", "list")
    assert listed.returncode == 1 and "Traceback" not in listed.stderr
    assert "is not a database" in listed.stderr and str(database) in listed.stderr
    assert database.read_text() == "not a database"


def many_forecasts(series: int, horizons: int = 24) -> pd.DataFrame:
    """One model's forecasts of ``series`` pools, ``horizons`` hours each."""
    return pd.DataFrame(
        {
            "unique_id": [f"pool-{i}" for i in range(series) for _ in range(horizons)],
            "ds": list(pd.date_range("2026-12-08", periods=horizons, freq="h", tz="UTC")) * series,
            "model": "arima",
            "horizon": list(range(1, horizons + 1)) * series,
            "mean": 1.0,
            "lo": 0.5,
            "hi": 1.5,
            "level": 80.0,
            "p_preempt": None,
            "created_at": pd.Timestamp("2026-12-07 10:00", tz="UTC"),
        }
    )


def test_replacing_forecasts_holds_the_file_in_proportion_to_their_rows(tmp_path: Path) -> None:
    """Every other writer (a supervisor's ledger among them) waits while forecasts are
    replaced: eight times the rows take about eight times as long, not sixty-four (matching
    each old row against every new one held the file 3.5 s for 7 000 forecasts, longer than a
    ledger write waits). The best of two tries each, so a busy host's pauses do not count."""

    def replacing_s(store: Path, frame: pd.DataFrame) -> float:
        with SqliteStore.open(store) as writer:
            writer.replace_forecasts(frame)  # the rows that it replaces
            tries = []
            for _ in range(2):
                began = time.perf_counter()
                writer.replace_forecasts(frame)
                tries.append(time.perf_counter() - began)
            assert writer.records("SELECT count(*) AS n FROM forecasts")[0]["n"] == len(frame)
        return min(tries)

    small = replacing_s(tmp_path / "small" / "market.duckdb", many_forecasts(50))
    large = replacing_s(tmp_path / "large" / "market.duckdb", many_forecasts(400))
    assert large / small < 20, (small, large)

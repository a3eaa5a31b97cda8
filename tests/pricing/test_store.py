"""The DuckDB store: schema versions, idempotent upserts, transactions, export."""

from __future__ import annotations

import stat
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from spotwise.executor.ledger.schema import LEDGER
from spotwise.pricing.errors import StoreError
from spotwise.pricing.frames import validate
from spotwise.pricing.schemas import MARKET, SCHEMAS, TABLES, exportable_tables
from spotwise.pricing.store import MarketStore
from tests.conftest import CliRun, hold_store


def prices(*values: float, source: str = "test") -> pd.DataFrame:
    ts = pd.date_range("2024-01-01", periods=len(values), freq="h", tz="UTC")
    return validate(
        "prices",
        pd.DataFrame(
            {
                "source": source,
                "provider": "aws",
                "region": "us-east-1",
                "zone": "us-east-1a",
                "instance_type": "p3.2xlarge",
                "market": "spot",
                "ts": ts,
                "price": list(values),
            }
        ),
        origin="test",
    )


CURRENT = {"market": MARKET.version, "ledger": LEDGER.version}


def test_new_store_has_every_table_at_the_current_schema_version(store_file: Path) -> None:
    assert set(SCHEMAS) == {"market", "ledger"}  # each package registers its own tables
    with MarketStore.open(store_file) as store:
        assert store.schema_versions() == CURRENT
        assert set(store.summary().tables) == set(TABLES)
        assert set(exportable_tables()) == {*TABLES, "jobs", "ledger"}


def test_a_store_from_before_each_package_kept_its_own_schema_is_migrated(
    store_file: Path,
) -> None:
    """A store of the one-number layout at version 2 (market tables, ledger without the
    columns of its version 2) keeps its rows and gains the new columns."""
    store_file.parent.mkdir(parents=True)
    con = duckdb.connect(str(store_file))
    con.execute(MARKET.migrations[0])
    con.execute(LEDGER.migrations[0])
    con.execute("CREATE TABLE schema_version (version INTEGER)")
    con.execute("INSERT INTO schema_version VALUES (1), (2)")
    con.execute(
        "INSERT INTO jobs VALUES ('j1', 'old', 'cmd', 'local', now(), NULL, 'completed', "
        "1, 2, 3.06, 0.023)"
    )
    con.close()
    with pytest.raises(StoreError, match=r"ledger tables of version 1.*open it once for writing"):
        MarketStore.open(store_file, read_only=True)
    with MarketStore.open(store_file) as store:
        assert store.schema_versions() == CURRENT
        jobs = store.records("SELECT job_id, host FROM jobs")
    assert jobs == [{"job_id": "j1", "host": None}]
    with MarketStore.open(store_file) as store:  # a local job was a replay
        assert store.records("SELECT simulated FROM jobs") == [{"simulated": True}]
    with MarketStore.open(store_file, read_only=True) as store:
        assert store.schema_versions() == CURRENT


def test_upserting_the_same_rows_twice_changes_nothing(store_file: Path) -> None:
    with MarketStore.open(store_file) as store:
        assert store.upsert({"prices": prices(1.0, 2.0, 3.0)}) == {"prices": 3}
        before = store.summary()
        assert store.upsert({"prices": prices(1.0, 2.0, 3.0)}) == {"prices": 0}
        assert store.summary() == before


HOLD_TO_READ = """
import sys
import time
import duckdb
con = duckdb.connect(sys.argv[1], read_only=True)  # no process can write while it is open
print("reading", flush=True)
sys.stdin.readline()
"""


def test_rows_the_store_holds_already_are_written_without_holding_it(store_file: Path) -> None:
    """A collector's overlapping window or a file loaded again writes nothing, so it never waits
    for a reader or keeps readers out; a changed row still needs the store to itself."""
    with MarketStore.open(store_file, wait_s=0.3) as store:
        store.upsert({"prices": prices(1.0, 2.0)})
        time.sleep(0.1)  # past the linger: the file is let go
        reader = subprocess.Popen(
            [sys.executable, "-c", HOLD_TO_READ, str(store_file)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert reader.stdout is not None and reader.stdout.readline() == "reading\n"
            assert store.upsert({"prices": prices(1.0, 2.0)}) == {"prices": 0}
            with pytest.raises(StoreError, match="in use by another process"):
                store.upsert({"prices": prices(1.0, 2.5)})
        finally:
            assert reader.stdin is not None
            reader.stdin.close()
            reader.wait(timeout=30)
        assert store.upsert({"prices": prices(1.0, 2.5)}) == {"prices": 0}
        assert store.query("SELECT price FROM prices ORDER BY ts")["price"].tolist() == [1.0, 2.5]


def test_times_within_a_microsecond_are_one_key_and_a_second_load_adds_nothing(
    store_file: Path,
) -> None:
    """The store keeps microseconds: a trace's computed times may carry nanoseconds, which must
    neither make two rows of one stored key nor look new when the file is loaded again."""
    frame = prices(1.0, 2.0)
    frame["ts"] = frame["ts"] + pd.to_timedelta([400, 700], unit="ns")
    frame.loc[1, "ts"] = frame.loc[0, "ts"] + pd.Timedelta(100, unit="ns")  # same microsecond
    with MarketStore.open(store_file) as store:
        assert store.upsert({"prices": frame}) == {"prices": 1}
        assert store.upsert({"prices": frame}) == {"prices": 0}
        assert store.query("SELECT price FROM prices")["price"].tolist() == [2.0]


def test_upsert_replaces_a_changed_value_under_the_same_key(store_file: Path) -> None:
    with MarketStore.open(store_file) as store:
        store.upsert({"prices": prices(1.0, 2.0)})
        # one row as stored, one changed, one new: the new one is the one added
        assert store.upsert({"prices": prices(1.0, 2.5, 4.0)}) == {"prices": 1}
        assert store.query("SELECT price FROM prices ORDER BY ts")["price"].tolist() == [
            1.0,
            2.5,
            4.0,
        ]
        # a batch naming a key twice keeps its last row
        twice = pd.concat([prices(9.0), prices(7.0)], ignore_index=True)
        assert store.upsert({"prices": twice}) == {"prices": 0}
        assert store.query("SELECT price FROM prices ORDER BY ts")["price"].tolist() == [
            7.0,
            2.5,
            4.0,
        ]


def test_a_failing_upsert_leaves_every_table_as_it_was(store_file: Path) -> None:
    with MarketStore.open(store_file) as store:
        store.upsert({"prices": prices(1.0)})
        before = store.summary()
        broken = pd.DataFrame(
            {  # skips validation: fails inside DuckDB, after prices went in
                "source": ["x"],
                "provider": ["aws"],
                "region": ["r"],
                "instance_type": ["t"],
                "observed": [pd.Timestamp("2024-01-01", tz="UTC")],
                "interruption_band": ["high"],
                "savings_pct": [50.0],
            }
        )
        with pytest.raises(
            StoreError, match=r"Could not convert string 'high'.*nothing was stored"
        ):
            store.upsert({"prices": [prices(7.0, 8.0, 9.0, source="other")], "bands": broken})
        assert store.summary() == before


def test_store_newer_than_the_code_is_refused(store_file: Path) -> None:
    with MarketStore.open(store_file) as store:
        store.query(f"UPDATE schemas SET version = {LEDGER.version + 1} WHERE name = 'ledger'")
    with pytest.raises(StoreError, match="newer than this Spotwise"):
        MarketStore.open(store_file)


def test_an_empty_duckdb_file_is_migrated_in_place(store_file: Path) -> None:
    store_file.parent.mkdir(parents=True)
    duckdb.connect(str(store_file)).close()
    with MarketStore.open(store_file) as store:
        assert store.schema_versions() == CURRENT


def test_a_new_store_and_the_folder_made_for_it_are_private(tmp_path: Path) -> None:
    """Prices, ledgers and job commands are the owner's: a new store is 0600, in a 0700
    folder when Spotwise makes the folder; a folder the user made keeps its mode."""
    made = tmp_path / "share" / "spotwise" / "market.duckdb"
    MarketStore.open(made).close()
    assert stat.S_IMODE(made.stat().st_mode) == 0o600
    assert stat.S_IMODE(made.parent.stat().st_mode) == 0o700
    assert [p.name for p in made.parent.iterdir()] == ["market.duckdb"]  # no leftovers
    theirs = tmp_path / "shared"
    theirs.mkdir(mode=0o755)
    MarketStore.open(theirs / "market.duckdb").close()
    assert stat.S_IMODE((theirs / "market.duckdb").stat().st_mode) == 0o600
    assert stat.S_IMODE(theirs.stat().st_mode) == 0o755


def test_a_write_ahead_log_left_from_another_store_is_named_and_kept(tmp_path: Path) -> None:
    store, other = tmp_path / "market.duckdb", tmp_path / "other.duckdb"
    MarketStore.open(store).close()
    writer = duckdb.connect(str(other))
    writer.execute("CREATE TABLE t AS SELECT 1 AS x")  # committed, in the log until closed
    stale = tmp_path / "market.duckdb.wal"
    stale.write_bytes((tmp_path / "other.duckdb.wal").read_bytes())
    writer.close()
    with pytest.raises(StoreError, match=r"market\.duckdb\.wal belongs to another copy") as refused:
        MarketStore.open(store, wait_s=0)
    assert refused.value.permanent and "Move that .wal file away" in str(refused.value)
    assert stale.exists()  # nothing is thrown away for the user
    stale.unlink()
    MarketStore.open(store).close()


def test_reading_a_missing_store_says_how_to_create_it(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="spotwise data load"):
        MarketStore.open(tmp_path / "none.duckdb", read_only=True)


def test_export_writes_every_row_to_parquet(store_file: Path, tmp_path: Path) -> None:
    with MarketStore.open(store_file) as store:
        store.upsert({"prices": prices(1.0, 2.0, 3.0)})
        assert store.export_parquet("prices", tmp_path / "out" / "p.parquet") == 3
        with pytest.raises(StoreError, match="unknown table"):
            store.export_parquet("nope", tmp_path / "x.parquet")
    back = pd.read_parquet(tmp_path / "out" / "p.parquet")
    assert back["price"].tolist() == [1.0, 2.0, 3.0]
    assert not (tmp_path / "x.parquet").exists()


def test_newest_is_the_latest_time_of_the_matching_series(store_file: Path) -> None:
    with MarketStore.open(store_file) as store:
        assert store.newest("prices", {"instance_type": "p3.2xlarge"}) is None
        store.upsert({"prices": prices(1.0, 2.0, 3.0)})
        assert store.newest("prices", {"instance_type": "p3.2xlarge"}) == pd.Timestamp(
            "2024-01-01 02:00", tz="UTC"
        )


@pytest.mark.slow
def test_an_open_waits_for_a_store_another_process_holds_then_gives_up(
    store_file: Path,
) -> None:
    import time

    MarketStore.open(store_file).close()
    holder = hold_store(store_file, seconds=2)
    try:
        with pytest.raises(StoreError, match="in use by another process") as refused:
            MarketStore.open(store_file, wait_s=0.3)
        assert f"held by PID {holder.pid}: " in str(refused.value)  # names the holder
        assert "import duckdb" in str(refused.value)  # and what it runs
        began = time.monotonic()
        with MarketStore.open(store_file, wait_s=30) as store:  # the holder lets go in ~2 s
            assert store.schema_versions() == CURRENT
        assert time.monotonic() - began < 20
    finally:
        holder.kill()
        holder.wait()


def test_a_read_only_command_brings_an_older_store_up_to_date_first(
    store_file: Path, cli_in_process: CliRun
) -> None:
    store_file.parent.mkdir(parents=True)
    con = duckdb.connect(str(store_file))
    con.execute(MARKET.migrations[0])
    con.execute(LEDGER.migrations[0])
    con.execute("CREATE TABLE schemas (name VARCHAR PRIMARY KEY, version INTEGER)")
    con.execute("INSERT INTO schemas VALUES ('market', 1), ('ledger', 1)")
    con.close()
    result = cli_in_process("data", "summary", "--json")
    assert result.returncode == 0, result.stderr  # not "open it once for writing"
    with MarketStore.open(store_file, read_only=True) as store:
        assert store.schema_versions() == CURRENT


def _open_store_in(path: Path, *, read_only: bool, held: bool = False) -> subprocess.Popen[str]:
    """Another process that opens the store with :meth:`MarketStore.open`, reads it once and
    keeps it open, inside :meth:`MarketStore.held` if ``held`` (returns once it has read)."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import contextlib, sys, time\n"
            "import spotwise.executor.ledger.schema\n"
            "from spotwise.pricing.store import MarketStore\n"
            "store = MarketStore.open(sys.argv[1], read_only=sys.argv[2] == 'read')\n"
            "with store.held() if sys.argv[3] == 'held' else contextlib.nullcontext():\n"
            "    store.records('SELECT count(*) AS n FROM prices')\n"
            "    print('open', flush=True)\n"
            "    time.sleep(600)\n",
            str(path),
            "read" if read_only else "write",
            "held" if held else "open",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
    return holder


@pytest.mark.parametrize("read_only", [True, False], ids=["reader", "writer"])
def test_a_store_another_process_keeps_open_is_written_at_once(
    store_file: Path, read_only: bool
) -> None:
    """A dashboard, a `plan` or a supervisor keeps its store open for minutes: others write
    and read meanwhile, waiting at most for its call in progress (a second allowed here)."""
    MarketStore.open(store_file).close()
    holder = _open_store_in(store_file, read_only=read_only)
    try:
        with MarketStore.open(store_file, wait_s=1) as store:
            store.upsert({"prices": prices(1.0, 2.0)})
        with MarketStore.open(store_file, read_only=True, wait_s=1) as store:
            assert store.records("SELECT count(*) AS n FROM prices") == [{"n": 2}]
    finally:
        holder.kill()
        holder.wait()


def test_held_keeps_the_file_for_the_block(store_file: Path) -> None:
    """Inside another process's `held()` block, a write waits (and here, allowed no wait,
    fails naming the holder)."""
    MarketStore.open(store_file).close()
    holder = _open_store_in(store_file, read_only=False, held=True)
    try:
        with pytest.raises(
            StoreError, match=f"in use by another process .held by PID {holder.pid}"
        ):
            MarketStore.open(store_file, wait_s=0)
    finally:
        holder.kill()
        holder.wait()


def test_a_closed_store_refuses_calls_and_says_to_open_it_again(store_file: Path) -> None:
    store = MarketStore.open(store_file)
    store.close()
    with pytest.raises(StoreError, match="was closed: open it again"):
        store.records("SELECT 1")


def test_the_write_ahead_log_a_write_leaves_is_private(store_file: Path) -> None:
    """DuckDB makes its log as the umask allows (0644); the store's writes are the owner's."""
    import os

    MarketStore.open(store_file).close()
    wal = store_file.with_name(store_file.name + ".wal")
    old = os.umask(0o022)
    try:
        store = MarketStore.open(store_file)
        with store.held():
            store.upsert({"prices": prices(1.0, 2.0)})
            assert wal.exists()  # committed, not yet folded into the file
            assert stat.S_IMODE(wal.stat().st_mode) == 0o600
        store.close()
    finally:
        os.umask(old)


def test_every_call_s_wait_goes_to_the_wait_log_only_its_owner_reads(
    store_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    log = tmp_path / "waits.log"
    monkeypatch.setenv("SPOTWISE_STORE_WAIT_LOG", str(log))
    import time

    with MarketStore.open(store_file) as store:
        store.upsert({"prices": prices(1.0)})
        time.sleep(0.2)  # past the linger: the read opens the file again
        store.records("SELECT count(*) AS n FROM prices")
    lines = [line.split() for line in log.read_text().splitlines()]
    assert len(lines) == 4  # the open, the read of what is stored already, the write, the read
    assert {pid for pid, _, _ in lines} == {str(os.getpid())}
    assert all(0 <= float(seconds) < 30 for _, seconds, _ in lines)
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


WRITER = """
import sys
import time
from pathlib import Path
from spotwise.pricing.store import MarketStore
store = MarketStore(Path(sys.argv[1]), read_only=False, wait_s=30.0)
with store.held():
    store.execute("CREATE TABLE IF NOT EXISTS marks (n INTEGER)")
    store.execute("INSERT INTO marks VALUES (1)")
print("written", flush=True)
"""
READER = """
import sys
import time
from pathlib import Path
from spotwise.pricing.store import MarketStore
print("opening", flush=True)
store = MarketStore(Path(sys.argv[1]), read_only=True, wait_s=30.0)
found = store.records("SELECT count(*) AS n FROM duckdb_tables() WHERE table_name = 'marks'")
print("marks" if found[0]["n"] else "no marks", flush=True)
"""


@pytest.mark.slow  # three processes
def test_a_writer_kept_at_the_gate_goes_before_readers_that_come_after_it(
    store_file: Path,
) -> None:
    """Readers take the store's gate many times a second, each for an instant: a writer that
    could not get it for a moment says it waits, and a reader arriving then lets it go first
    (so a stream of readers cannot keep a supervisor's ledger write out for seconds)."""
    import fcntl
    import os
    import time

    from spotwise.pricing.store import READERS_YIELD_S, WRITER_QUEUES_AFTER_S

    MarketStore.open(store_file).close()
    gate = os.open(store_file.with_name(store_file.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(gate, fcntl.LOCK_SH)  # a reader mid-open holds the gate
    run = [sys.executable, "-c"]
    writer = subprocess.Popen([*run, WRITER, str(store_file)], stdout=subprocess.PIPE, text=True)
    reader = None
    try:
        queue = store_file.with_name(store_file.name + ".writers")
        deadline = time.monotonic() + 60
        while not queue.exists() or _free(queue):  # the writer says it waits
            assert time.monotonic() < deadline and writer.poll() is None
            time.sleep(0.01)
        reader = subprocess.Popen(
            [*run, READER, str(store_file)], stdout=subprocess.PIPE, text=True
        )
        assert reader.stdout is not None and reader.stdout.readline() == "opening\n"
        time.sleep(min(0.1, READERS_YIELD_S / 4))  # the reader has reached the gate
    finally:
        os.close(gate)  # the first reader lets go
    assert writer.communicate(timeout=60)[0] == "written\n"
    assert reader.communicate(timeout=60)[0] == "marks\n"  # it read after the writer's write
    assert reader.returncode == 0 == writer.returncode
    assert WRITER_QUEUES_AFTER_S < READERS_YIELD_S


def _free(path: Path) -> bool:
    import fcntl
    import os

    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True

"""The embedded market store: one DuckDB file with the canonical tables, which any number of
processes share (each holds the file only while one call runs).

Schema changes are numbered migrations applied in order inside a transaction; the file
records its version, and a store newer than this code is refused. Writes are idempotent
upserts keyed by each frame's key (:data:`spotwise.pricing.frames.SPECS`): writing the same rows
twice changes nothing, and a changed value replaces the old one. One call to
:meth:`MarketStore.upsert` is one transaction: all of its frames land, or none. pandas is
imported when rows go in or come out as frames; opening and summarising a store do without.
"""

from __future__ import annotations

import fcntl
import logging
import os
import random
import re
import tempfile
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.pricing.errors import StoreBehind, StoreError
from spotwise.pricing.frames import SPECS, one_row_per_key
from spotwise.pricing.schemas import SCHEMAS, TABLES, check_versions, exportable_tables

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

log = logging.getLogger("spotwise.store")


def _from_one_version(version: int) -> dict[str, int]:
    """Schema versions of a store written before each package kept its own: one number, whose
    first migration built the market tables and the next two the executor's ledger."""
    return {"market": min(version, 1), "ledger": max(0, version - 1)}


FORECAST_COLUMNS = (
    "unique_id",
    "ds",
    "model",
    "horizon",
    "mean",
    "lo",
    "hi",
    "level",
    "p_preempt",
    "created_at",
)
"""The columns of the ``forecasts`` table."""


def upsert_sql(table: str) -> tuple[str, str]:
    """The SQL of a keyed upsert from a table ``staging`` holding the batch, one row per key
    (DuckDB and PostgreSQL alike): delete the stored rows it changes, then insert its rows not
    stored as they are. The rows it adds are those inserted less those deleted. A batch that
    repeats stored rows (a collector's overlapping window, a file loaded again) writes nothing,
    so the store is held for two reads of the batch only."""
    spec = SPECS[table]
    on = " AND ".join(f"t.{k} = s.{k}" for k in spec.key)
    changed = " OR ".join(
        f"t.{c} IS DISTINCT FROM s.{c}" for c in spec.columns if c not in spec.key
    )
    columns = ", ".join(spec.columns)
    return (
        f"DELETE FROM {table} t USING staging s WHERE {on}"
        + (f" AND ({changed})" if changed else ""),
        f"INSERT INTO {table} ({columns}) SELECT {columns} FROM staging s "
        f"WHERE NOT EXISTS (SELECT 1 FROM {table} t WHERE {on})",
    )


REPLACE_FORECASTS_SQL = (
    "DELETE FROM forecasts f USING (SELECT DISTINCT unique_id, model FROM staging) s "
    "WHERE f.unique_id = s.unique_id AND f.model = s.model",
    f"INSERT INTO forecasts ({', '.join(FORECAST_COLUMNS)}) "
    f"SELECT {', '.join(FORECAST_COLUMNS)} FROM staging",
)
"""Replace each (series, model)'s forecasts by those in ``staging``."""


@dataclass(frozen=True, slots=True)
class SourceSpan:
    """One source's rows in one table: how many, in how many series, over what time."""

    rows: int
    series: int
    start: str | None
    """The first time (ISO 8601, UTC)."""
    end: str | None
    """The last time (ISO 8601, UTC)."""
    relative_time: bool
    """The times are hours from the start of a trace whose files carry no date."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, as ``data summary --json`` prints it."""
        return {
            "rows": self.rows,
            "series": self.series,
            "start": self.start,
            "end": self.end,
            "relative_time": self.relative_time,
        }


@dataclass(frozen=True, slots=True)
class DatabaseSummary:
    """The operational database (without its password), its schema versions and rows per
    operational table."""

    store: str
    schemas: Mapping[str, int]
    tables: Mapping[str, int]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, as ``data summary --json`` prints it."""
        return {"store": self.store, "schemas": dict(self.schemas), "tables": dict(self.tables)}


@dataclass(frozen=True, slots=True)
class StoreSummary:
    """A store file, its schema versions, rows per table, and each source's rows per table;
    with the operational database's summary when the operational tables live in one."""

    store: str
    schemas: Mapping[str, int]
    tables: Mapping[str, int]
    sources: Mapping[str, Mapping[str, SourceSpan]]
    """Each source's tables, by source name (sorted), then table."""
    operational: DatabaseSummary | StoreSummary | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, as ``data summary --json`` prints it (the keys in this order)."""
        summary: dict[str, Any] = {
            "store": self.store,
            "schemas": dict(self.schemas),
            "tables": dict(self.tables),
            "sources": {
                source: {table: span.to_dict() for table, span in per_table.items()}
                for source, per_table in self.sources.items()
            },
        }
        if self.operational is not None:
            summary["operational"] = self.operational.to_dict()
        return summary


_T = TypeVar("_T")


def open_with_backoff(
    connect: Callable[[], _T],
    errors: tuple[type[Exception], ...],
    *,
    refusal: Callable[[Exception], StoreError],
    waiting: Callable[[Exception], str],
    wait_s: float,
    first_pause: float,
    max_pause: float = 1.0,
    clock: Clock = SYSTEM_CLOCK,
) -> _T:
    """``connect()``, retried with doubling, jittered pauses (at most ``max_pause``) for up to
    ``wait_s`` seconds while it fails with one of ``errors`` that ``refusal`` does not call
    permanent; once it has waited a second, the log says what it waits for (``waiting``).

    Raises:
        StoreError: ``refusal``'s error for a permanent failure, or for the last try.
    """
    start = clock.monotonic()
    deadline = start + wait_s
    pause = first_pause
    said = False
    while True:
        try:
            return connect()
        except errors as exc:
            error = refusal(exc)
            now = clock.monotonic()
            if error.permanent or now + pause > deadline:
                raise error from exc
            if not said and now - start >= 1.0:
                log.warning("waiting up to %.0f s for %s", wait_s, waiting(exc))
                said = True
            clock.sleep(pause * (0.5 + _JITTER.random()))
            pause = min(pause * 2, max_pause)


_JITTER = random.Random(os.getpid())
"""Spreads the pauses of processes that wait for one file, so they do not retry in step."""


def store_wait_log() -> Path | None:
    """``$SPOTWISE_STORE_WAIT_LOG``: where each call's wait goes (None: nowhere)."""
    from spotwise.core.settings import current

    return current().store_wait_log


def log_wait(log_file: Path, seconds: float) -> None:
    """Append one call's wait to ``log_file``: the process, the seconds, and the command's
    first two words (one short line: appends do not interleave)."""
    import sys

    command = "_".join(re.sub(r"\W", "", word)[:20] for word in sys.argv[1:3]) or "-"
    with suppress(OSError):
        fd = os.open(log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{os.getpid()} {seconds:.6f} {command}\n".encode())
        finally:
            os.close(fd)


def resolved_wait_s(wait_s: float | None) -> float:
    """``wait_s``, or ``$SPOTWISE_STORE_WAIT_S`` when None."""
    if wait_s is not None:
        return wait_s
    from spotwise.core.settings import current

    return current().store_wait_s


LINGER_S = 0.02
"""How long a call's connection waits for the next call before letting go of the file."""
WRITER_QUEUES_AFTER_S = 0.1
"""How long a writer tries for the store's gate before it says it waits (``PATH.writers``):
readers then let it go first, for up to :data:`READERS_YIELD_S`."""
READERS_YIELD_S = 0.5
"""How long a reader lets the writers that wait for the file go first before it takes its
turn anyway: readers open the file many times a second, and without yielding they kept a
waiting writer out for seconds; with no bound, a stream of writers could keep them out."""
_STORES: weakref.WeakSet[MarketStore] = weakref.WeakSet()
"""This process's stores: one that opens a file read-only lets another's writable connection to
it go first (DuckDB opens a file one way per process), and the other way round."""
WAITS: deque[float] = deque(maxlen=100_000)
"""Seconds each of this process's calls waited for (and spent opening) the store file, newest
last: what ``spotwise bench store`` reports."""


class MarketStore:
    """A DuckDB file holding the market tables (open with :meth:`open`, then :meth:`close`).

    DuckDB lets one process write a file at a time, and no process read it meanwhile. So a
    store holds its file only while a call runs (milliseconds): every process that opens the
    same file proceeds at once, and one waits at most for another's single call, never for its
    lifetime. :meth:`held` keeps the file across several calls where that is worth it.
    """

    def __init__(
        self, path: Path, *, read_only: bool, wait_s: float, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.path = path
        self.read_only = read_only
        self._wait_s = wait_s
        self._clock = clock
        self._held: duckdb.DuckDBPyConnection | None = None
        self._lingering: duckdb.DuckDBPyConnection | None = None
        self._generation = 0
        self._lock = threading.RLock()
        self._closed = False
        self._wait_log = store_wait_log()
        self._gate_path = path.with_name(path.name + ".lock")
        self._writers_path = path.with_name(path.name + ".writers")
        _STORES.add(self)

    @classmethod
    def open(
        cls,
        path: Path | str,
        *,
        read_only: bool = False,
        wait_s: float | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> MarketStore:
        """The store at ``path``, created and migrated if needed. Each call waits for the file
        with backoff for up to ``wait_s`` seconds (default ``$SPOTWISE_STORE_WAIT_S``, else
        30) while another process's call holds it.

        Raises:
            StoreError: when the file stays locked, is not a DuckDB file, or is newer than
                this code.
        """
        path = Path(path)
        if read_only and not path.exists():
            raise StoreError(f"no store at {path}: run `spotwise data load` first")
        store = cls(path, read_only=read_only, wait_s=resolved_wait_s(wait_s), clock=clock)
        with store.held():
            if read_only:
                store._check_versions(store.schema_versions(), writable=False)
            else:
                store._migrate()
        return store

    @classmethod
    def open_to_read(cls, path: Path | str, *, wait_s: float | None = None) -> MarketStore:
        """Open read-only (so other readers can too); an older Spotwise's store is brought up
        to date first, in one short writable open."""
        try:
            return cls.open(path, read_only=True, wait_s=wait_s)
        except StoreBehind:
            cls.open(path, wait_s=wait_s).close()
            return cls.open(path, read_only=True, wait_s=wait_s)

    def close(self) -> None:
        """Let go of the file, if held; later calls are refused."""
        with self._lock:
            for con in (self._held, self._lingering):
                if con is not None:
                    con.close()
            self._held = self._lingering = None
            self._closed = True

    def __enter__(self) -> MarketStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def held(self) -> Iterator[MarketStore]:
        """Hold the file for the block: its calls see one another's writes and no other
        process's, and others wait for the whole block (keep it short)."""
        with self._lock:
            if self._held is not None:
                yield self
                return
            con = self._lingering or self._connect()
            self._lingering = None
            self._held = con
            try:
                yield self
            finally:
                self._held = None
                con.close()

    @contextmanager
    def _connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for one call: the held one; else the one the last call left, if it
        ended within :data:`LINGER_S` and no writer queues at the gate; else a new one. A
        database error comes out as a :class:`StoreError` naming the store."""
        with self._lock:
            con = self._held
            if con is None:
                con, self._lingering = self._lingering, None
                if con is not None and self._writer_waits():
                    con.close()  # let the writer in; this call queues behind it
                    con = None
                if con is None:
                    con = self._connect()
            failed = True
            try:
                yield con
                _finish_results(con)
                failed = False
            except duckdb.Error as exc:
                first = str(exc).splitlines()[0] if str(exc) else repr(exc)
                raise StoreError(
                    f"the store {self.path} could not answer ({first}). Is it a Spotwise store "
                    "of this version? `spotwise data summary` shows what it holds"
                ) from exc
            finally:
                if con is not self._held:
                    if failed:
                        con.close()  # a call that failed leaves nothing for the next one
                    else:
                        self._linger(con)

    def _linger(self, con: duckdb.DuckDBPyConnection) -> None:
        """Keep ``con`` for a call that follows within :data:`LINGER_S` (a page's or a plan's
        queries come in bursts: each would otherwise open the file again), then let go."""
        self._lingering = con
        self._generation += 1
        timer = threading.Timer(LINGER_S, self._let_go, args=(self._generation,))
        timer.daemon = True
        timer.start()

    def _let_go(self, generation: int | None = None) -> None:
        """Close the lingering connection (if no call has come since ``generation``)."""
        if not self._lock.acquire(blocking=generation is not None):
            return
        try:
            if generation in (None, self._generation) and self._lingering is not None:
                self._lingering.close()
                self._lingering = None
        finally:
            self._lock.release()

    def _writer_waits(self) -> bool:
        """Whether a writer (another process's) waits for the file: it has said so (it holds
        ``PATH.writers`` shared), or it holds the store's gate."""
        return _held_by_other(self._writers_path, fcntl.LOCK_EX) or _held_by_other(
            self._gate_path, fcntl.LOCK_SH
        )

    def _let_writers_go_first(self) -> None:
        """Wait while writers wait for the file, for up to :data:`READERS_YIELD_S`: a reader
        that went ahead would keep them out for its call."""
        deadline = self._clock.monotonic() + READERS_YIELD_S
        pause = 0.005
        while _held_by_other(self._writers_path, fcntl.LOCK_EX):
            if self._clock.monotonic() + pause > deadline:
                return
            self._clock.sleep(pause * (0.5 + _JITTER.random()))
            pause = min(pause * 2, 0.05)

    @contextmanager
    def _writers_queue(self) -> Iterator[None]:
        """A writer's place among the writers kept waiting at the gate (``PATH.writers``, held
        shared with the others until it has the gate): readers arriving meanwhile let them go
        first, and lingering readers let go of the file."""
        try:
            fd = os.open(self._writers_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            yield  # a read-only folder: no queue, only the gate
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)  # waits only for a reader's instant look
            yield
        finally:
            os.close(fd)  # lets go of the lock too

    def _connect(self) -> duckdb.DuckDBPyConnection:
        """Open the file, waiting (with backoff) while another process's call holds it; a
        writer queues at the store's gate first, so that readers arriving after it wait for
        its turn instead of keeping the file from it for good."""
        if self._closed:
            raise StoreError(f"the store {self.path} was closed: open it again")
        path, read_only = self.path, self.read_only

        def connect() -> duckdb.DuckDBPyConnection:
            if not read_only and not path.exists():
                _create_private(path)
            for other in list(_STORES):  # one process opens a file one way at a time
                if other is not self and other.path == path and other.read_only != read_only:
                    other._let_go()
            return duckdb.connect(str(path), read_only=read_only)

        began = self._clock.monotonic()
        if read_only:
            self._let_writers_go_first()
        with self._gate(exclusive=not read_only):
            con = open_with_backoff(
                connect,
                (duckdb.Error, OSError),
                refusal=lambda exc: _open_error(path, exc),
                waiting=lambda exc: f"the store {path} ({_open_error(path, exc)})",
                wait_s=max(0.0, self._wait_s - (self._clock.monotonic() - began)),
                first_pause=0.005,
                max_pause=0.05,
                clock=self._clock,
            )
        waited = self._clock.monotonic() - began
        WAITS.append(waited)
        if self._wait_log is not None:
            log_wait(self._wait_log, waited)
        try:
            con.execute("SET TimeZone = 'UTC'")
        except BaseException:
            con.close()
            raise
        return con

    @contextmanager
    def _gate(self, *, exclusive: bool) -> Iterator[None]:
        """The store's gate (``PATH.lock``, a file lock) for the time it takes to open the
        file: a writer holds it alone, readers together. Without a gate file (a read-only
        folder) there is no queue, only the wait."""
        try:
            fd = os.open(self._gate_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            yield
            return
        mode = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
        began = self._clock.monotonic()

        def take(wait_s: float) -> None:
            open_with_backoff(
                lambda: fcntl.flock(fd, mode),
                (BlockingIOError,),
                refusal=lambda _: StoreError(
                    f"the store {self.path} is in use by other processes (a writer waits for "
                    "its turn). Wait for them to finish, or pass another --store"
                ),
                waiting=lambda _: f"the store {self.path} (writers queue for it)",
                wait_s=wait_s,
                first_pause=0.005,
                max_pause=0.05,
                clock=self._clock,
            )

        try:
            if not exclusive:
                take(self._wait_s)
            else:
                try:
                    take(min(WRITER_QUEUES_AFTER_S, self._wait_s))
                except StoreError:  # readers keep taking the gate: queue, so they yield
                    with self._writers_queue():
                        take(max(0.0, self._wait_s - (self._clock.monotonic() - began)))
            yield
        finally:
            os.close(fd)  # lets go of the lock too

    def _has_table(self, con: duckdb.DuckDBPyConnection, name: str) -> bool:
        row = con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name]
        ).fetchone()
        return bool(row and row[0])

    def schema_versions(self) -> dict[str, int]:
        """The version of each package's tables recorded in the file (none in a new file)."""
        with self._connection() as con:
            if self._has_table(con, "schemas"):
                rows = con.execute("SELECT name, version FROM schemas").fetchall()
                return {str(name): int(version) for name, version in rows}
            if self._has_table(con, "schema_version"):
                row = con.execute("SELECT max(version) FROM schema_version").fetchone()
                return _from_one_version(int(row[0]) if row and row[0] is not None else 0)
            return {}

    def _check_versions(self, found: dict[str, int], *, writable: bool) -> None:
        check_versions(found, SCHEMAS, str(self.path), writable=writable)

    def _migrate(self) -> None:
        found = self.schema_versions()
        self._check_versions(found, writable=True)
        pending = [s for s in SCHEMAS.values() if found.get(s.name, 0) < s.version]
        with self._transaction() as con:
            if not pending and self._has_table(con, "schemas"):
                return
            con.execute(
                "CREATE TABLE IF NOT EXISTS schemas (name VARCHAR PRIMARY KEY, version INTEGER)"
            )
            if self._has_table(con, "schema_version"):  # the one-number layout, from before
                for name, version in found.items():
                    con.execute("INSERT INTO schemas VALUES (?, ?)", [name, version])
                con.execute("DROP TABLE schema_version")
            for schema in pending:
                for version in range(found.get(schema.name, 0), schema.version):
                    con.execute(schema.migrations[version])
                con.execute(
                    "INSERT INTO schemas VALUES (?, ?) "
                    "ON CONFLICT (name) DO UPDATE SET version = excluded.version",
                    [schema.name, schema.version],
                )

    @contextmanager
    def _transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One transaction: all of the block's writes, or (on any error) none of them; a
        database error comes out as a :class:`StoreError`."""
        with self._connection() as con:
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
                con.execute("COMMIT")  # a full disk or a read-only file may refuse it here
            except duckdb.Error as exc:
                _rollback(con)
                cause: BaseException = exc
                while isinstance(cause.__context__, duckdb.Error):  # the first error, not echo
                    cause = cause.__context__
                first = str(cause).splitlines()[0] if str(cause) else repr(cause)
                known = _cause(first)
                raise StoreError(
                    f"the store {self.path} refused the write ({first}); nothing was stored"
                    + (f". {known.fix}" if known else ""),
                    permanent=known is not None and known.permanent,
                ) from exc
            except BaseException:
                _rollback(con)
                raise
            finally:
                _private_wal(self.path)

    def upsert(self, frames: Mapping[str, list[pd.DataFrame] | pd.DataFrame]) -> dict[str, int]:
        """Write validated frames in one transaction; return the new (not already stored) rows
        per table."""
        import pyarrow as pa

        batches = {  # made before the store is held, as Arrow: DuckDB scans it in place
            table: pa.Table.from_pandas(one_row_per_key(table, parts), preserve_index=False)
            for table, parts in frames.items()
        }
        added = {table: 0 for table, batch in batches.items() if batch.num_rows}
        batches = self._not_stored(batches)
        if not any(batch.num_rows for batch in batches.values()):
            return added  # all of it is stored already: nothing to hold the store for
        with self._transaction() as con:
            for table, batch in batches.items():
                if batch.num_rows == 0:
                    continue
                con.register("staging", batch)
                try:
                    deleted, inserted = (_count(con.execute(sql)) for sql in upsert_sql(table))
                finally:
                    con.unregister("staging")
                added[table] += inserted - deleted
        return added

    def _not_stored(self, batches: dict[str, pa.Table]) -> dict[str, pa.Table]:
        """The rows of each batch the store does not hold as they are, found by a reader (other
        readers go on meanwhile): a batch the store holds already (a collector's overlapping
        window, a file loaded again) is then written without holding the store at all. Within
        :meth:`held`, or when no reader can open it, the batches as they are."""
        if self._held is not None:
            return batches
        reader = MarketStore(self.path, read_only=True, wait_s=self._wait_s, clock=self._clock)
        try:  # its tables are this store's, brought up to date when it was opened
            with reader, reader.held():
                return {t: reader._unstored_rows(t, b) for t, b in batches.items()}
        except StoreError:
            return batches  # the write says what keeps the store

    def _unstored_rows(self, table: str, batch: pa.Table) -> pa.Table:
        """``batch``'s rows not in ``table`` as they are."""
        if batch.num_rows == 0:
            return batch
        same = " AND ".join(f"t.{c} = s.{c}" for c in SPECS[table].columns)  # a hash anti-join
        with self._connection() as con:
            con.register("staging", batch)
            try:
                return con.sql(
                    f"SELECT s.* FROM staging s ANTI JOIN {table} t ON {same}"
                ).to_arrow_table()
            finally:
                con.unregister("staging")

    def replace_forecasts(self, frame: pd.DataFrame) -> int:
        """Write forecasts in one transaction, replacing each (series, model)'s previous ones;
        return the rows written."""
        with self._transaction() as con:
            con.register("staging", frame.loc[:, list(FORECAST_COLUMNS)])
            try:
                for sql in REPLACE_FORECASTS_SQL:
                    con.execute(sql)
            finally:
                con.unregister("staging")
        return len(frame)

    def remove_source(self, source: str) -> dict[str, int]:
        """Delete every row of ``source`` from the market tables, in one transaction; return
        the rows removed per table (none: the source is not in the store)."""
        removed: dict[str, int] = {}
        with self._transaction() as con:
            for table in SPECS:
                row = con.execute(
                    f"SELECT count(*) FROM {table} WHERE source = ?", [source]
                ).fetchone()
                if row and row[0]:
                    con.execute(f"DELETE FROM {table} WHERE source = ?", [source])
                    removed[table] = int(row[0])
        return removed

    def newest(self, table: str, where: Mapping[str, Any]) -> pd.Timestamp | None:
        """Newest time in ``table`` among rows whose columns equal ``where``'s values."""
        spec = SPECS[table]
        clause = " AND ".join(f"{column} = ?" for column in where) or "TRUE"
        with self._connection() as con:
            row = con.execute(
                f"SELECT max({spec.time_column}) FROM {table} WHERE {clause}",
                list(where.values()),
            ).fetchone()
        if not row or row[0] is None:
            return None
        import pandas as pd

        return pd.Timestamp(row[0]).tz_convert("UTC")

    def execute(self, sql: str, params: list[Any] | None = None) -> None:
        """Run one write statement in its own transaction."""
        with self._transaction() as con:
            con.execute(sql, params or [])

    def execute_all(self, statements: Sequence[tuple[str, list[Any]]]) -> None:
        """Run write statements in order, in one transaction: all of them or none."""
        with self._transaction() as con:
            for sql, params in statements:
                con.execute(sql, params)

    def query(self, sql: str, params: list[Any] | None = None) -> pd.DataFrame:
        """Run a read query and return its rows. The rows leave the file as Arrow (fast), and
        become a frame after the file is let go (the slow part, 10x the read for big tables)."""
        with self._connection() as con:
            table = con.sql(sql, params=params or None).to_arrow_table()
        return _to_frame(table)

    def records(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        """Run a read query and return its rows as dicts (no pandas needed)."""
        with self._connection() as con:
            cursor = con.execute(sql, params or [])
            names = [column[0] for column in cursor.description or []]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def summary(self) -> StoreSummary:
        """Rows per table; rows, series and time span per source and table."""
        with self.held(), self._connection() as con:
            tables = {t: int(_scalar(con, f"SELECT count(*) FROM {t}")) for t in TABLES}
            sources: dict[str, dict[str, SourceSpan]] = {}
            for table, spec in SPECS.items():
                series = ", ".join(spec.series)
                stats = con.execute(
                    f"SELECT source, count(*), count(DISTINCT ({series})), "
                    f"min({spec.time_column}), max({spec.time_column}) FROM {table} "
                    "GROUP BY source ORDER BY source"
                ).fetchall()
                for source, rows, n_series, start, end in stats:
                    sources.setdefault(source, {})[table] = SourceSpan(
                        rows=int(rows),
                        series=int(n_series),
                        start=_iso(start),
                        end=_iso(end),
                        relative_time=is_relative_time(start),
                    )
            schemas = self.schema_versions()
        return StoreSummary(
            store=str(self.path),
            schemas=schemas,
            tables=tables,
            sources=dict(sorted(sources.items())),
        )

    def export_parquet(self, table: str, target: Path) -> int:
        """Write one table to a Parquet file (atomically); return its row count.

        Raises:
            StoreError: for an unknown table.
        """
        tables = exportable_tables()
        if table not in tables:
            raise StoreError(f"unknown table {table!r}: choose one of {', '.join(tables)}")
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.partial")
        path_literal = str(partial).replace("'", "''")
        with self.held(), self._connection() as con:
            con.execute(f"COPY (SELECT * FROM {table}) TO '{path_literal}' (FORMAT parquet)")
            rows = int(_scalar(con, f"SELECT count(*) FROM {table}"))
        partial.replace(target)
        return rows


_CONVERTERS = threading.local()
"""Each thread's in-memory DuckDB, which turns Arrow tables into frames as the file would."""


def _to_frame(table: Any) -> pd.DataFrame:
    """An Arrow table as the frame DuckDB's own ``df()`` makes of the same rows."""
    converter = getattr(_CONVERTERS, "connection", None)
    if converter is None:
        converter = duckdb.connect(":memory:")
        converter.execute("SET TimeZone = 'UTC'")
        _CONVERTERS.connection = converter
    return converter.from_arrow(table).df()


def _scalar(con: duckdb.DuckDBPyConnection, sql: str) -> Any:
    row = con.execute(sql).fetchone()
    return row[0] if row else None


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    """Undo the open transaction; one that a failed commit already ended is left be."""
    with suppress(duckdb.Error):
        con.execute("ROLLBACK")


def _private_wal(path: Path) -> None:
    """Make the store's write-ahead log (``path.wal``), if there is one, only its owner's:
    DuckDB creates it as the umask allows (0644) when a write commits, and a write a full disk
    refused leaves it behind."""
    wal = path.with_name(path.name + ".wal")
    with suppress(OSError):
        if wal.stat().st_mode & 0o077:
            wal.chmod(0o600)


def _finish_results(con: duckdb.DuckDBPyConnection) -> None:
    """Run what is left of the call's last ``execute`` (a ``fetchone`` reads one row of it)
    to its end, so the next call on the same connection starts clean; DuckDB 2 refuses new
    work on a connection with an unfinished result."""
    complete = getattr(con, "complete", None)
    if complete is not None:
        complete()


def _held_by_other(path: Path, mode: int) -> bool:
    """Whether another holder keeps ``path``'s file lock from a ``mode`` lock taken now (and
    let go at once): False when there is no such file."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _create_private(path: Path) -> None:
    """Create an empty store at ``path`` that only its owner can read: the file 0600, and its
    folder 0700 when this creates the folder (a folder the user named keeps its mode). DuckDB
    creates files as the umask allows (0644), so the file is made in a private folder beside it
    and linked into place; if another process got there first, its store stands."""
    if not path.parent.is_dir():  # a file there: mkdir names it
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.parent.chmod(0o700)  # mkdir's mode yields to the umask; chmod does not
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".new-store-") as private:
        made = Path(private) / path.name
        duckdb.connect(str(made)).close()
        made.chmod(0o600)
        with suppress(FileExistsError):
            os.link(made, path)


@dataclass(frozen=True, slots=True)
class _Cause:
    """A cause of a refused open or write: what it is, what to do, whether waiting heals it."""

    label: str
    fix: str
    permanent: bool


_CAUSES = {
    "No space left on device": _Cause(
        "its disk is full", "Free space on its disk, or pass a --store on another disk", False
    ),
    "Read-only file system": _Cause(
        "its disk is read-only", "Pass a --store on a writable disk", True
    ),
    "read-only mode": _Cause(
        "it is open read-only", "Open it writable, or pass another --store", True
    ),
    "Permission denied": _Cause(
        "permission denied", "Fix the folder's permissions or pass a writable --store", True
    ),
}
"""The causes DuckDB names in its errors (by the words it uses)."""


def _cause(text: str) -> _Cause | None:
    """Which of :data:`_CAUSES` ``text`` names, if any."""
    return next((cause for words, cause in _CAUSES.items() if words in text), None)


def _open_error(path: Path, exc: Exception) -> StoreError:
    """Why a store would not open, told apart: a lock another process holds (it may be
    released) from a permission or format problem (it will not heal by waiting)."""
    text = str(exc)
    if "different configuration than existing connections" in text:
        return StoreError(  # this process's other store lets go within LINGER_S: wait for it
            f"the store {path} is open the other way (read-only or writable) in this process: "
            "close that store first"
        )
    if "Conflicting lock" in text or "Could not set lock" in text:
        return StoreError(
            f"the store {path} is in use by another process ({_holder(text)}). Wait for it to "
            "finish, close it, or pass another --store"
        )
    cause = _CAUSES["Permission denied"] if isinstance(exc, PermissionError) else _cause(text)
    if cause is not None:
        return StoreError(
            f"cannot write the store {path}: {cause.label} ({text.splitlines()[0]}). {cause.fix}",
            permanent=cause.permanent,
        )
    if "WAL does not match database file" in text:
        return StoreError(
            f"cannot open the store {path}: its write-ahead log {path}.wal belongs to another "
            "copy of the store (it stays behind when the store file is deleted or replaced). "
            "Move that .wal file away and open the store again",
            permanent=True,
        )
    return StoreError(
        f"cannot open the store {path}: {text.splitlines()[0] if text else exc!r}. Is it a "
        "Spotwise store? Pass another --store",
        permanent=True,
    )


def _holder(lock_error: str) -> str:
    """The process holding the store, as DuckDB names it (PID), with its command line when
    this machine shows it."""
    found = re.search(r"\(PID (\d+)\)", lock_error)
    if not found:
        return lock_error.splitlines()[0]
    pid = found.group(1)
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return f"held by PID {pid}"
    command = " ".join(a.decode(errors="replace") for a in argv if a)
    return f"held by PID {pid}: {command[:200]}"


def _count(result: duckdb.DuckDBPyConnection) -> int:
    """The rows a DELETE or INSERT changed (DuckDB answers it as a one-row result)."""
    row = result.fetchone()
    return int(row[0]) if row else 0


RELATIVE_TIME_BEFORE = datetime(1971, 1, 1, tzinfo=UTC)
"""Times before this are offsets from the Unix epoch, not dates: the traces whose files have
no date start there (:data:`spotwise.pricing.sources.traces.EPOCH`)."""


def is_relative_time(value: Any) -> bool:
    """Whether a stored time is an offset of a trace with no calendar date."""
    if value is None:
        return False
    stamp = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    stamp = stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)
    return stamp < RELATIVE_TIME_BEFORE


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    stamp = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return stamp.astimezone(UTC).isoformat()

"""The operational tables on this machine: jobs, ledger, forecasts and placement scores in a
SQLite file beside the store (``NAME.operational.sqlite`` next to ``NAME.duckdb``), in WAL mode.

DuckDB lets one process write a file at a time and no reader in while it does; SQLite's
write-ahead log lets any number of processes read while one writes, and a write holds the
file for the milliseconds of its transaction. So supervisors, the scheduled forecasts, the
API, ``jobs`` commands and the dashboard share the ledger at once, with no server to run (the
embedded default MLflow, Prefect and Dagster use too), while the market data and its
analytics stay in DuckDB. :class:`SqliteStore` answers the calls the operational code makes of
a store (``execute``, ``execute_all``, ``query``, ``records``, ``upsert``,
``replace_forecasts``) with the same SQL, and builds its tables from the same registered
schemas and migrations. The first open of a store whose DuckDB file holds jobs, ledger
entries, forecasts or placement scores (a store of an older Spotwise) copies them over, in the
transaction that builds the tables.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.pricing.errors import StoreError, first_line
from spotwise.pricing.frames import SPECS, one_row_per_key
from spotwise.pricing.schemas import OPERATIONAL_TABLES, SCHEMAS, check_versions
from spotwise.pricing.store import (
    FORECAST_COLUMNS,
    WAITS,
    DatabaseSummary,
    log_wait,
    resolved_wait_s,
    store_wait_log,
)

if TYPE_CHECKING:
    import pandas as pd

TIME_TYPE = "TIMESTAMPTZ"
"""The declared type of the tables' times: stored as ISO 8601 text in UTC, read back as
timezone-aware datetimes."""

_ISO_TIME = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(\+00:00|Z)$")


def operational_path(store_path: Path) -> Path:
    """The SQLite file of the operational tables beside the store file ``store_path``."""
    return store_path.with_name(f"{store_path.stem}.operational.sqlite")


def _iso(value: datetime) -> str:
    """A time as the text the tables hold: ISO 8601 in UTC (a naive time is taken as UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat()


def _time(raw: bytes) -> datetime | str:
    """A stored time back as a timezone-aware datetime (text that is not one stays text)."""
    text = raw.decode()
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return text
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


sqlite3.register_adapter(datetime, _iso)
sqlite3.register_converter(TIME_TYPE, _time)


class SqliteStore:
    """The operational tables in a SQLite file in WAL mode (open with :meth:`open`)."""

    def __init__(self, connection: sqlite3.Connection, path: Path, database: Path) -> None:
        self._con = connection
        self.path = path
        """The local store file: pending ledger journals live next to it."""
        self.database = database
        """The SQLite file."""
        self._wait_log = store_wait_log()

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        read_only: bool = False,
        wait_s: float | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> SqliteStore:
        """Open (creating it, only its owner's) the operational file beside the store file
        ``path`` and bring its tables up to date; ``read_only``, the connection then refuses
        writes. A write waits up to ``wait_s`` seconds (default ``$SPOTWISE_STORE_WAIT_S``)
        for another process's transaction to end.

        Raises:
            StoreError: when the file cannot be opened or made, or holds tables newer than
                this code.
        """
        database = operational_path(path)
        began = clock.monotonic()
        try:
            _create_private(database)
            con = sqlite3.connect(
                database,
                timeout=resolved_wait_s(wait_s),
                isolation_level=None,  # transactions are this class's, begun explicitly
                detect_types=sqlite3.PARSE_DECLTYPES,
                check_same_thread=False,
            )
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(
                f"cannot open the operational store {database}: {first_line(exc)}. Check "
                "that its folder exists and is yours",
                permanent=True,
            ) from exc
        store = cls(con, path, database)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")  # WAL: durable at each checkpoint
            store._migrate()
            if read_only:
                con.execute("PRAGMA query_only=ON")
        except sqlite3.Error as exc:
            con.close()
            busy = "locked" in str(exc) or "busy" in str(exc)
            raise StoreError(
                f"cannot open the operational store {database}: {first_line(exc)}"
                + (
                    ": another process kept it busy, try again"
                    if busy
                    else ". If it is not a Spotwise store, move it aside (a new one is made)"
                ),
                permanent=not busy,
            ) from exc
        except BaseException:
            con.close()
            raise
        store._waited(clock.monotonic() - began)
        return store

    def close(self) -> None:
        """Close the connection."""
        self._con.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __str__(self) -> str:
        return str(self.database)

    def _waited(self, seconds: float) -> None:
        WAITS.append(seconds)
        if self._wait_log is not None:
            log_wait(self._wait_log, seconds)

    def schema_versions(self) -> dict[str, int]:
        """The version of each package's tables recorded in the file (none when new)."""
        if not self._has_table("schemas"):
            return {}
        rows = self._con.execute("SELECT name, version FROM schemas").fetchall()
        return {str(name): int(version) for name, version in rows}

    def summary(self) -> DatabaseSummary:
        """The file, its schema versions and rows per operational table."""
        tables = {
            table: int(self._con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
            for table in OPERATIONAL_TABLES
            if self._has_table(table)
        }
        return DatabaseSummary(
            store=str(self.database), schemas=self.schema_versions(), tables=tables
        )

    def _has_table(self, name: str) -> bool:
        row = self._con.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", [name]
        ).fetchone()
        return bool(row and row[0])

    def _migrate(self) -> None:
        found = self.schema_versions()
        check_versions(found, SCHEMAS, str(self.database), writable=True)
        if all(found.get(s.name, 0) == s.version for s in SCHEMAS.values()):
            return
        with self._transaction():
            found = self.schema_versions()  # another process may have built them meanwhile
            check_versions(found, SCHEMAS, str(self.database), writable=True)
            new = not found
            self._con.execute(
                "CREATE TABLE IF NOT EXISTS schemas (name VARCHAR PRIMARY KEY, version INTEGER)"
            )
            for schema in SCHEMAS.values():
                start = found.get(schema.name, 0)
                if start == schema.version:
                    continue
                for version in range(start, schema.version):
                    for statement in _statements(schema.migrations[version]):
                        self._con.execute(statement)
                self._con.execute(
                    "INSERT INTO schemas VALUES (?, ?) "
                    "ON CONFLICT (name) DO UPDATE SET version = excluded.version",
                    [schema.name, schema.version],
                )
            if new:
                self._copy_from_store_file()

    def _copy_from_store_file(self) -> None:
        """Copy the operational rows an older Spotwise kept in the DuckDB store file."""
        if not self.path.exists():
            return
        from spotwise.pricing.store import MarketStore

        with MarketStore.open_to_read(self.path) as old:
            for table in OPERATIONAL_TABLES:
                rows = old.query(f"SELECT * FROM {table}")
                if not rows.empty:
                    self._insert(table, _rows(rows, list(rows.columns)), list(rows.columns))

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction (``BEGIN IMMEDIATE``: it waits for the file's write lock
        first): all of the block's writes or none; a database error comes out as a
        :class:`StoreError` (not lasting when the file stayed busy)."""
        began = SYSTEM_CLOCK.monotonic()
        try:
            self._con.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self._refused(exc) from exc
        self._waited(SYSTEM_CLOCK.monotonic() - began)
        try:
            yield
            self._con.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            raise self._refused(exc) from exc
        except BaseException:
            self._rollback()
            raise

    def _rollback(self) -> None:
        if self._con.in_transaction:
            self._con.execute("ROLLBACK")

    def _refused(self, exc: sqlite3.Error) -> StoreError:
        first = first_line(exc)
        busy = "locked" in first or "busy" in first
        return StoreError(
            f"the operational store {self.database} refused the write ({first}); nothing was "
            "stored" + (": another process kept it busy, try again" if busy else ""),
            permanent=not busy,
        )

    def execute(self, sql: str, params: list[Any] | None = None) -> None:
        """Run one write statement in its own transaction."""
        self.execute_all([(sql, params or [])])

    def execute_all(self, statements: Sequence[tuple[str, list[Any]]]) -> None:
        """Run write statements in order, in one transaction: all of them or none."""
        with self._transaction():
            for sql, params in statements:
                self._con.execute(sql, _plain_params(params))

    def records(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        """Run a read query and return its rows as dicts."""
        names, rows = self._read(sql, params)
        return [dict(zip(names, row, strict=True)) for row in rows]

    def query(self, sql: str, params: list[Any] | None = None) -> pd.DataFrame:
        """Run a read query and return its rows (times as UTC timestamps, as DuckDB's)."""
        import pandas as pd

        names, rows = self._read(sql, params)
        frame = pd.DataFrame.from_records(rows, columns=names)
        for column in names:
            values = frame[column].dropna()
            if values.empty:
                continue
            if values.map(lambda v: isinstance(v, datetime)).all() or (
                values.map(lambda v: isinstance(v, str) and bool(_ISO_TIME.match(v))).all()
            ):
                frame[column] = pd.to_datetime(frame[column], utc=True, format="ISO8601")
        return frame

    def _read(self, sql: str, params: list[Any] | None) -> tuple[list[str], list[Any]]:
        """A read query's column names and rows."""
        try:
            cursor = self._con.execute(sql, _plain_params(params or []))
            return [column[0] for column in cursor.description or []], cursor.fetchall()
        except sqlite3.Error as exc:
            raise StoreError(
                f"the operational store {self.database} could not answer a read ({first_line(exc)})"
            ) from exc

    def upsert(self, frames: Mapping[str, list[pd.DataFrame] | pd.DataFrame]) -> dict[str, int]:
        """Write validated frames in one transaction, replacing rows with the same key; return
        the new rows per table."""

        batches = []  # made before the transaction: the file is held for SQLite's work only
        for table, parts in frames.items():
            batch = one_row_per_key(table, parts)
            if not batch.empty:
                batches.append((table, _rows(batch, SPECS[table].columns)))
        added: dict[str, int] = {}
        with self._transaction():
            for table, rows in batches:
                spec = SPECS[table]
                self._stage(table, rows, spec.columns)
                staged = _staged(spec.key)
                row = self._con.execute(f"SELECT count(*) FROM {table} WHERE {staged}").fetchone()
                existing = int(row[0]) if row else 0
                self._con.execute(f"DELETE FROM {table} WHERE {staged}")
                self._from_staging(table, spec.columns)
                added[table] = added.get(table, 0) + len(rows) - existing
        return added

    def replace_forecasts(self, frame: pd.DataFrame) -> int:
        """Write forecasts in one transaction, replacing each (series, model)'s previous ones;
        return the rows written."""
        rows = _rows(frame, FORECAST_COLUMNS)  # made before the transaction, as upserts'
        with self._transaction():
            self._stage("forecasts", rows, FORECAST_COLUMNS)
            self._con.execute(f"DELETE FROM forecasts WHERE {_staged(('unique_id', 'model'))}")
            self._from_staging("forecasts", FORECAST_COLUMNS)
        return len(frame)

    def _stage(self, table: str, rows: list[list[Any]], columns: Sequence[str]) -> None:
        """Copy ``rows`` (of ``columns``) into a temporary ``staging`` table shaped like
        ``table`` (dropped by :meth:`_from_staging`)."""
        names = ", ".join(columns)
        self._con.execute("DROP TABLE IF EXISTS temp.staging")
        self._con.execute(f"CREATE TEMP TABLE staging AS SELECT {names} FROM {table} LIMIT 0")
        self._insert("staging", rows, columns)

    def _from_staging(self, table: str, columns: Sequence[str]) -> None:
        names = ", ".join(columns)
        self._con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM staging")
        self._con.execute("DROP TABLE temp.staging")

    def _insert(self, table: str, rows: list[list[Any]], columns: Sequence[str]) -> None:
        """Insert ``rows`` (of ``columns``) into ``table`` (in the caller's transaction)."""
        marks = ", ".join("?" for _ in columns)
        self._con.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)


def _rows(frame: pd.DataFrame, columns: Sequence[str]) -> list[list[Any]]:
    """``frame``'s ``columns`` as the rows sqlite3 inserts (missing values as None)."""
    import pandas as pd

    values = frame.loc[:, list(columns)].astype(object)
    values = values.where(pd.notna(values), None)
    return [[_plain(v) for v in row] for row in values.itertuples(index=False, name=None)]


def _staged(key: Sequence[str]) -> str:
    """The condition that a row's ``key`` is among the ``staging`` table's: SQLite builds the
    staged keys' index once, so a write holds the file for time in proportion to its rows (a
    correlated ``EXISTS`` scanned the staged rows again for each row of the table: 3.5 s to
    replace 7 000 forecasts, while every other writer, a supervisor's ledger among them,
    waited)."""
    names = ", ".join(key)
    return f"({names}) IN (SELECT {names} FROM staging)"


def _statements(script: str) -> list[str]:
    """A migration's statements, one by one (none holds a ``;`` in its text)."""
    return [s.strip() for s in script.split(";") if s.strip()]


def _plain_params(params: Sequence[Any]) -> list[Any]:
    return [_plain(v) for v in params]


def _plain(value: Any) -> Any:
    """A pandas or numpy value as the Python value sqlite3 writes (times as ISO 8601 UTC)."""
    if hasattr(value, "to_pydatetime"):
        return _iso(value.to_pydatetime())
    if isinstance(value, datetime):
        return _iso(value)
    if hasattr(value, "item"):
        return value.item()
    return value


def _create_private(path: Path) -> None:
    """Make ``path`` (and its folder) if missing, readable by its owner only: SQLite gives its
    ``-wal`` and ``-shm`` files the database file's permissions.

    An existing file is never opened here: closing any descriptor of a database file drops the
    POSIX locks every connection of this process holds on it, and another process could then
    take itself for the last one, checkpoint and delete the WAL under this process's next
    commit (https://sqlite.org/howtocorrupt.html, 2.2). A new file is made under a name of its
    own and linked into place, so no connection can have it open while it is closed."""
    if path.exists():
        return
    if not path.parent.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.parent.chmod(0o700)
    made = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.new")
    os.close(os.open(made, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    try:
        os.link(made, path)
    except FileExistsError:  # another process or thread made it meanwhile
        pass
    finally:
        made.unlink()

"""The embedded market store: one DuckDB file with the canonical tables.

Schema changes are numbered migrations applied in order inside a transaction; the file
records its version, and a store newer than this code is refused. Writes are idempotent
upserts keyed by each frame's key (:data:`spotwise.pricing.frames.SPECS`): writing the same rows
twice changes nothing, and a changed value replaces the old one. One call to
:meth:`MarketStore.upsert` is one transaction: all of its frames land, or none. pandas is
imported when rows go in or come out as frames; opening and summarising a store do without.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.pricing.errors import StoreBehind, StoreError
from spotwise.pricing.frames import SPECS

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger("spotwise.store")


@dataclass(frozen=True, slots=True)
class Schema:
    """One package's tables in the store, and the migrations that build them: migration ``i``
    takes the package's tables from version ``i`` to ``i + 1``."""

    name: str
    migrations: tuple[str, ...]
    tables: tuple[str, ...]

    @property
    def version(self) -> int:
        """The version the migrations take the tables to (their count)."""
        return len(self.migrations)


SCHEMAS: dict[str, Schema] = {}
"""Every schema a store opened by this process holds (each package registers its own)."""


def register_schema(schema: Schema) -> Schema:
    """Make every store this process opens hold ``schema``'s tables (migrating them)."""
    known = SCHEMAS.setdefault(schema.name, schema)
    if known != schema:
        raise ValueError(f"a different schema {schema.name!r} is registered already")
    return schema


MARKET = register_schema(
    Schema(
        "market",
        (
            """
    CREATE TABLE prices (source VARCHAR NOT NULL, provider VARCHAR NOT NULL,
        region VARCHAR NOT NULL, zone VARCHAR NOT NULL, instance_type VARCHAR NOT NULL,
        market VARCHAR NOT NULL, ts TIMESTAMPTZ NOT NULL, price DOUBLE PRECISION NOT NULL);
    CREATE TABLE availability (source VARCHAR NOT NULL, provider VARCHAR NOT NULL,
        zone VARCHAR NOT NULL, instance_type VARCHAR NOT NULL, ts TIMESTAMPTZ NOT NULL,
        available_nodes INTEGER NOT NULL, target_nodes INTEGER NOT NULL);
    CREATE TABLE events (source VARCHAR NOT NULL, provider VARCHAR NOT NULL,
        zone VARCHAR NOT NULL, instance_type VARCHAR NOT NULL, node VARCHAR NOT NULL,
        ts TIMESTAMPTZ NOT NULL, event VARCHAR NOT NULL);
    CREATE TABLE bands (source VARCHAR NOT NULL, provider VARCHAR NOT NULL,
        region VARCHAR NOT NULL, instance_type VARCHAR NOT NULL, observed TIMESTAMPTZ NOT NULL,
        interruption_band INTEGER NOT NULL, savings_pct DOUBLE PRECISION NOT NULL);
    CREATE TABLE placement_scores (source VARCHAR NOT NULL, provider VARCHAR NOT NULL,
        region VARCHAR NOT NULL, zone VARCHAR NOT NULL, instance_type VARCHAR NOT NULL,
        observed TIMESTAMPTZ NOT NULL, score INTEGER NOT NULL);
    CREATE TABLE forecasts (unique_id VARCHAR NOT NULL, ds TIMESTAMPTZ NOT NULL,
        model VARCHAR NOT NULL, horizon INTEGER NOT NULL, mean DOUBLE PRECISION,
        lo DOUBLE PRECISION, hi DOUBLE PRECISION, level DOUBLE PRECISION,
        p_preempt DOUBLE PRECISION, created_at TIMESTAMPTZ NOT NULL);
    """,
            # the SKU(s) a catalog price was built from (GCP Billing, Azure Retail), beside
            # the price row with the same key
            """
    CREATE TABLE price_skus (source VARCHAR NOT NULL, provider VARCHAR NOT NULL,
        region VARCHAR NOT NULL, zone VARCHAR NOT NULL, instance_type VARCHAR NOT NULL,
        market VARCHAR NOT NULL, ts TIMESTAMPTZ NOT NULL, sku VARCHAR NOT NULL);
    """,
        ),
        (
            "prices",
            "availability",
            "events",
            "bands",
            "placement_scores",
            "forecasts",
            "price_skus",
        ),
    )
)
TABLES = MARKET.tables
"""The market tables (the data contracts of :mod:`spotwise.pricing.frames`)."""


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


def upsert_sql(table: str) -> tuple[str, str, str]:
    """The SQL of a keyed upsert from a table ``staging`` holding the batch: count the stored
    rows it replaces, delete them, insert the batch (DuckDB and PostgreSQL alike)."""
    spec = SPECS[table]
    on = " AND ".join(f"t.{k} = s.{k}" for k in spec.key)
    columns = ", ".join(spec.columns)
    return (
        f"SELECT count(*) FROM {table} t JOIN staging s ON {on}",
        f"DELETE FROM {table} t USING staging s WHERE {on}",
        f"INSERT INTO {table} ({columns}) SELECT {columns} FROM staging",
    )


REPLACE_FORECASTS_SQL = (
    "DELETE FROM forecasts f USING (SELECT DISTINCT unique_id, model FROM staging) s "
    "WHERE f.unique_id = s.unique_id AND f.model = s.model",
    f"INSERT INTO forecasts ({', '.join(FORECAST_COLUMNS)}) "
    f"SELECT {', '.join(FORECAST_COLUMNS)} FROM staging",
)
"""Replace each (series, model)'s forecasts by those in ``staging``."""


def check_versions(
    found: dict[str, int], schemas: Mapping[str, Schema], where: str, *, writable: bool
) -> None:
    """Refuse a store (at versions ``found``) newer than this code; read-only, refuse one that
    is behind it (:class:`StoreBehind`).

    Raises:
        StoreError: naming the store ``where`` and what to do.
    """
    behind = []
    for schema in schemas.values():
        version = found.get(schema.name, 0)
        if version > schema.version:
            raise StoreError(
                f"the store {where} has {schema.name} tables of version {version}, newer than "
                f"this Spotwise ({schema.version}): upgrade Spotwise",
                permanent=True,
            )
        if version < schema.version:
            behind.append(
                f"{schema.name} tables of version {version}, this Spotwise needs {schema.version}"
            )
    if behind and not writable:
        raise StoreBehind(f"the store {where} has {'; '.join(behind)}: open it once for writing")


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


def exportable_tables() -> tuple[str, ...]:
    """Every table of every registered schema."""
    return tuple(t for schema in SCHEMAS.values() for t in schema.tables)


_T = TypeVar("_T")


def open_with_backoff(
    connect: Callable[[], _T],
    errors: tuple[type[Exception], ...],
    *,
    refusal: Callable[[Exception], StoreError],
    waiting: Callable[[Exception], str],
    wait_s: float,
    first_pause: float,
    clock: Clock = SYSTEM_CLOCK,
) -> _T:
    """``connect()``, retried with doubling pauses (at most 1 s) for up to ``wait_s`` seconds
    while it fails with one of ``errors`` that ``refusal`` does not call permanent; when the
    wait may be long, the log says once what it waits for (``waiting``).

    Raises:
        StoreError: ``refusal``'s error for a permanent failure, or for the last try.
    """
    deadline = clock.monotonic() + wait_s
    pause = first_pause
    while True:
        try:
            return connect()
        except errors as exc:
            error = refusal(exc)
            if error.permanent or clock.monotonic() + pause > deadline:
                raise error from exc
            if pause == first_pause and wait_s >= 1:
                log.warning("waiting up to %.0f s for %s", wait_s, waiting(exc))
            clock.sleep(pause)
            pause = min(pause * 2, 1.0)


def resolved_wait_s(wait_s: float | None) -> float:
    """``wait_s``, or ``$SPOTWISE_STORE_WAIT_S`` when None."""
    if wait_s is not None:
        return wait_s
    from spotwise.core.settings import current

    return current().store_wait_s


class MarketStore:
    """A DuckDB file holding the market tables (open with :meth:`open`, then :meth:`close`)."""

    def __init__(self, connection: duckdb.DuckDBPyConnection, path: Path) -> None:
        self._con = connection
        self.path = path

    @classmethod
    def open(
        cls,
        path: Path | str,
        *,
        read_only: bool = False,
        wait_s: float | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> MarketStore:
        """Open (creating and migrating if needed) the store at ``path``. While another
        process holds it, retry with backoff for up to ``wait_s`` seconds (default
        ``$SPOTWISE_STORE_WAIT_S``, else 30), saying once what it waits for.

        Raises:
            StoreError: when the file stays locked, is not a DuckDB file, or is newer than
                this code.
        """
        path = Path(path)
        if read_only and not path.exists():
            raise StoreError(f"no store at {path}: run `spotwise data load` first")

        def connect() -> duckdb.DuckDBPyConnection:
            if not read_only and not path.exists():
                _create_private(path)
            return duckdb.connect(str(path), read_only=read_only)

        con = open_with_backoff(
            connect,
            (duckdb.Error, OSError),
            refusal=lambda exc: _open_error(path, exc),
            waiting=lambda exc: f"the store {path}: {exc}",
            wait_s=resolved_wait_s(wait_s),
            first_pause=0.02,
            clock=clock,
        )
        con.execute("SET TimeZone = 'UTC'")
        store = cls(con, path)
        try:
            if read_only:
                store._check_versions(store.schema_versions(), writable=False)
            else:
                store._migrate()
        except BaseException:
            con.close()
            raise
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
        """Close the connection."""
        self._con.close()

    def __enter__(self) -> MarketStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _has_table(self, name: str) -> bool:
        row = self._con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name]
        ).fetchone()
        return bool(row and row[0])

    def schema_versions(self) -> dict[str, int]:
        """The version of each package's tables recorded in the file (none in a new file)."""
        if self._has_table("schemas"):
            rows = self._con.execute("SELECT name, version FROM schemas").fetchall()
            return {str(name): int(version) for name, version in rows}
        if self._has_table("schema_version"):
            row = self._con.execute("SELECT max(version) FROM schema_version").fetchone()
            return _from_one_version(int(row[0]) if row and row[0] is not None else 0)
        return {}

    def _check_versions(self, found: dict[str, int], *, writable: bool) -> None:
        check_versions(found, SCHEMAS, str(self.path), writable=writable)

    def _migrate(self) -> None:
        found = self.schema_versions()
        self._check_versions(found, writable=True)
        pending = [s for s in SCHEMAS.values() if found.get(s.name, 0) < s.version]
        if not pending and self._has_table("schemas"):
            return
        with self._transaction():
            self._con.execute(
                "CREATE TABLE IF NOT EXISTS schemas (name VARCHAR PRIMARY KEY, version INTEGER)"
            )
            if self._has_table("schema_version"):  # the one-number layout, from before
                for name, version in found.items():
                    self._con.execute("INSERT INTO schemas VALUES (?, ?)", [name, version])
                self._con.execute("DROP TABLE schema_version")
            for schema in pending:
                for version in range(found.get(schema.name, 0), schema.version):
                    self._con.execute(schema.migrations[version])
                self._con.execute(
                    "INSERT INTO schemas VALUES (?, ?) "
                    "ON CONFLICT (name) DO UPDATE SET version = excluded.version",
                    [schema.name, schema.version],
                )

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One transaction: all of the block's writes, or (on any error) none of them; a
        database error comes out as a :class:`StoreError`."""
        self._con.execute("BEGIN TRANSACTION")
        try:
            yield
            self._con.execute("COMMIT")  # a full disk or a read-only file may refuse it here
        except duckdb.Error as exc:
            self._rollback()
            cause: BaseException = exc
            while isinstance(cause.__context__, duckdb.Error):  # the first error, not its echo
                cause = cause.__context__
            first = str(cause).splitlines()[0] if str(cause) else repr(cause)
            known = _cause(first)
            raise StoreError(
                f"the store {self.path} refused the write ({first}); nothing was stored"
                + (f". {known.fix}" if known else ""),
                permanent=known is not None and known.permanent,
            ) from exc
        except BaseException:
            self._rollback()
            raise

    def _rollback(self) -> None:
        """Undo the open transaction; one that a failed commit already ended is left be."""
        with suppress(duckdb.Error):
            self._con.execute("ROLLBACK")

    def upsert(self, frames: Mapping[str, list[pd.DataFrame] | pd.DataFrame]) -> dict[str, int]:
        """Write validated frames in one transaction; return the new (not already stored) rows
        per table."""
        added: dict[str, int] = {}
        with self._transaction():
            for table, parts in frames.items():
                batch = parts if not isinstance(parts, list) else _concat(parts)
                if batch.empty:
                    continue
                spec = SPECS[table]
                batch = batch.drop_duplicates(list(spec.key), keep="last")
                self._con.register("staging", batch.loc[:, list(spec.columns)])
                try:
                    count, delete, insert = upsert_sql(table)
                    row = self._con.execute(count).fetchone()
                    existing = int(row[0]) if row else 0
                    self._con.execute(delete)
                    self._con.execute(insert)
                finally:
                    self._con.unregister("staging")
                added[table] = added.get(table, 0) + len(batch) - existing
        return added

    def replace_forecasts(self, frame: pd.DataFrame) -> int:
        """Write forecasts in one transaction, replacing each (series, model)'s previous ones;
        return the rows written."""
        with self._transaction():
            self._con.register("staging", frame.loc[:, list(FORECAST_COLUMNS)])
            try:
                for sql in REPLACE_FORECASTS_SQL:
                    self._con.execute(sql)
            finally:
                self._con.unregister("staging")
        return len(frame)

    def remove_source(self, source: str) -> dict[str, int]:
        """Delete every row of ``source`` from the market tables, in one transaction; return
        the rows removed per table (none: the source is not in the store)."""
        removed: dict[str, int] = {}
        with self._transaction():
            for table in SPECS:
                row = self._con.execute(
                    f"SELECT count(*) FROM {table} WHERE source = ?", [source]
                ).fetchone()
                if row and row[0]:
                    self._con.execute(f"DELETE FROM {table} WHERE source = ?", [source])
                    removed[table] = int(row[0])
        return removed

    def newest(self, table: str, where: Mapping[str, Any]) -> pd.Timestamp | None:
        """Newest time in ``table`` among rows whose columns equal ``where``'s values."""
        spec = SPECS[table]
        clause = " AND ".join(f"{column} = ?" for column in where) or "TRUE"
        row = self._con.execute(
            f"SELECT max({spec.time_column}) FROM {table} WHERE {clause}", list(where.values())
        ).fetchone()
        if not row or row[0] is None:
            return None
        import pandas as pd

        return pd.Timestamp(row[0]).tz_convert("UTC")

    def execute(self, sql: str, params: list[Any] | None = None) -> None:
        """Run one write statement in its own transaction."""
        with self._transaction():
            self._con.execute(sql, params or [])

    def execute_all(self, statements: Sequence[tuple[str, list[Any]]]) -> None:
        """Run write statements in order, in one transaction: all of them or none."""
        with self._transaction():
            for sql, params in statements:
                self._con.execute(sql, params)

    def query(self, sql: str, params: list[Any] | None = None) -> pd.DataFrame:
        """Run a read query and return its rows."""
        return self._con.execute(sql, params or []).df()

    def records(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        """Run a read query and return its rows as dicts (no pandas needed)."""
        cursor = self._con.execute(sql, params or [])
        names = [column[0] for column in cursor.description or []]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def summary(self) -> StoreSummary:
        """Rows per table; rows, series and time span per source and table."""
        tables = {t: int(self._scalar(f"SELECT count(*) FROM {t}")) for t in TABLES}
        sources: dict[str, dict[str, SourceSpan]] = {}
        for table, spec in SPECS.items():
            series = ", ".join(spec.series)
            stats = self._con.execute(
                f"SELECT source, count(*), count(DISTINCT ({series})), min({spec.time_column}),"
                f" max({spec.time_column}) FROM {table} GROUP BY source ORDER BY source"
            ).fetchall()
            for source, rows, n_series, start, end in stats:
                sources.setdefault(source, {})[table] = SourceSpan(
                    rows=int(rows),
                    series=int(n_series),
                    start=_iso(start),
                    end=_iso(end),
                    relative_time=is_relative_time(start),
                )
        return StoreSummary(
            store=str(self.path),
            schemas=self.schema_versions(),
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
        self._con.execute(f"COPY (SELECT * FROM {table}) TO '{path_literal}' (FORMAT parquet)")
        partial.replace(target)
        return int(self._scalar(f"SELECT count(*) FROM {table}"))

    def _scalar(self, sql: str) -> Any:
        row = self._con.execute(sql).fetchone()
        return row[0] if row else None


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


def _concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    import pandas as pd

    return pd.concat(parts, ignore_index=True)


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

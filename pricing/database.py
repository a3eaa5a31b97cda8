"""The operational tables in PostgreSQL: jobs, ledger, forecasts and placement scores shared by
processes on many machines (``SPOTWISE_OPERATIONAL_STORE=postgresql://…``), while the market
data and its analytics stay in the local DuckDB file.

:class:`PostgresStore` answers the calls the operational code makes of
:class:`~spotwise.pricing.store.MarketStore` (``execute``, ``execute_all``, ``query``,
``records``, ``upsert``, ``replace_forecasts``) with the same SQL: ``?`` parameters
become psycopg's, and the tables come from the same registered schemas and migrations, so a
database and a DuckDB file hold the same tables at the same versions. The market tables exist
there too and stay empty. Migrations run under an advisory lock, so two processes that open a
new database at once do not both build it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.pricing.errors import StoreError, first_line
from spotwise.pricing.frames import SPECS, one_row_per_key
from spotwise.pricing.schemas import OPERATIONAL_TABLES, SCHEMAS, check_versions
from spotwise.pricing.store import (
    FORECAST_COLUMNS,
    REPLACE_FORECASTS_SQL,
    DatabaseSummary,
    open_with_backoff,
    resolved_wait_s,
    upsert_sql,
)

if TYPE_CHECKING:
    import pandas as pd
    import psycopg

log = logging.getLogger("spotwise.store")

_MIGRATION_LOCK = 0x5370_6F74
"""The advisory lock key migrations hold ("Spot")."""


def redacted(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


def _placeholders(sql: str) -> str:
    """DuckDB's ``?`` parameters as psycopg's ``%s``; a ``?`` in quoted text stays, and every
    literal ``%`` is doubled (psycopg reads them even inside quotes)."""
    parts = re.split(r"('(?:[^']|'')*')", sql)
    return "".join(
        part.replace("%", "%%")
        if part.startswith("'")
        else part.replace("%", "%%").replace("?", "%s")
        for part in parts
    )


def _unreachable(url: str, exc: Exception) -> StoreError:
    """The error for a server that does not answer (passing) or refuses the login or database
    (permanent)."""
    first = first_line(exc)
    lasting = any(w in first for w in ("authentication", "does not exist", "role"))
    return StoreError(
        f"cannot reach the operational store {redacted(url)}: {first}. Check "
        "SPOTWISE_OPERATIONAL_STORE and that the server is up",
        permanent=lasting,
    )


class PostgresStore:
    """A PostgreSQL database holding the operational tables (open with :meth:`open`)."""

    def __init__(self, connection: psycopg.Connection[Any], url: str, path: Path) -> None:
        self._con = connection
        self.url = url
        self.path = path
        """The local store file: pending ledger journals live next to it."""

    @classmethod
    def open(
        cls, url: str, path: Path, *, wait_s: float | None = None, clock: Clock = SYSTEM_CLOCK
    ) -> PostgresStore:
        """Connect to ``url`` (retrying for up to ``wait_s`` seconds, default
        ``$SPOTWISE_STORE_WAIT_S``, while the server does not answer) and bring its tables up
        to date; ``path`` is the local store file the journals sit beside.

        Raises:
            StoreError: when the server stays unreachable, refuses the login, or holds tables
                newer than this code.
        """
        import psycopg

        con = open_with_backoff(
            lambda: psycopg.connect(url, autocommit=True, connect_timeout=10),
            (psycopg.OperationalError,),
            refusal=lambda exc: _unreachable(url, exc),
            waiting=lambda exc: f"{redacted(url)}: {first_line(exc)}",
            wait_s=resolved_wait_s(wait_s),
            first_pause=0.05,
            clock=clock,
        )
        con.execute("SET TIME ZONE 'UTC'")
        store = cls(con, url, path)
        try:
            store._migrate()
        except BaseException:
            con.close()
            raise
        return store

    def close(self) -> None:
        """Close the connection."""
        self._con.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __str__(self) -> str:
        return redacted(self.url)

    def schema_versions(self) -> dict[str, int]:
        """The version of each package's tables recorded in the database (none when new)."""
        if not self._scalar("SELECT to_regclass('schemas') IS NOT NULL"):
            return {}
        rows = self._con.execute("SELECT name, version FROM schemas").fetchall()
        return {str(name): int(version) for name, version in rows}

    def summary(self) -> DatabaseSummary:
        """The database (without its password), its schema versions and rows per operational
        table."""
        tables = {}
        for table in OPERATIONAL_TABLES:
            if self._scalar(f"SELECT to_regclass('{table}') IS NOT NULL"):
                tables[table] = int(self._scalar(f"SELECT count(*) FROM {table}"))
        return DatabaseSummary(
            store=redacted(self.url), schemas=self.schema_versions(), tables=tables
        )

    def _migrate(self) -> None:
        with self._transaction():
            self._con.execute("SELECT pg_advisory_xact_lock(%s)", [_MIGRATION_LOCK])
            found = self.schema_versions()
            check_versions(found, SCHEMAS, redacted(self.url), writable=True)
            self._con.execute(
                "CREATE TABLE IF NOT EXISTS schemas (name VARCHAR PRIMARY KEY, version INTEGER)"
            )
            for schema in SCHEMAS.values():
                start = found.get(schema.name, 0)
                if start == schema.version:
                    continue
                for version in range(start, schema.version):
                    self._con.execute(schema.migrations[version])
                self._con.execute(
                    "INSERT INTO schemas VALUES (%s, %s) "
                    "ON CONFLICT (name) DO UPDATE SET version = excluded.version",
                    [schema.name, schema.version],
                )

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One transaction: all of the block's writes or none; a database error comes out as
        a :class:`StoreError`."""
        import psycopg

        try:
            with self._con.transaction():
                yield
        except psycopg.Error as exc:
            first = first_line(exc)
            raise StoreError(
                f"the operational store {redacted(self.url)} refused the write ({first}); "
                "nothing was stored"
            ) from exc

    def execute(self, sql: str, params: list[Any] | None = None) -> None:
        """Run one write statement in its own transaction."""
        self.execute_all([(sql, params or [])])

    def execute_all(self, statements: Sequence[tuple[str, list[Any]]]) -> None:
        """Run write statements in order, in one transaction: all of them or none."""
        with self._transaction():
            for sql, params in statements:
                self._con.execute(_placeholders(sql), params)

    def records(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        """Run a read query and return its rows as dicts."""
        cursor = self._con.execute(_placeholders(sql), params or [])
        names = [column.name for column in cursor.description or []]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def query(self, sql: str, params: list[Any] | None = None) -> pd.DataFrame:
        """Run a read query and return its rows (times as UTC timestamps, as DuckDB's)."""
        import pandas as pd

        cursor = self._con.execute(_placeholders(sql), params or [])
        names = [column.name for column in cursor.description or []]
        frame = pd.DataFrame.from_records(cursor.fetchall(), columns=names)
        for column in names:
            if frame[column].map(lambda v: hasattr(v, "tzinfo")).any():
                frame[column] = pd.to_datetime(frame[column], utc=True)
        return frame

    def upsert(self, frames: Mapping[str, list[pd.DataFrame] | pd.DataFrame]) -> dict[str, int]:
        """Write validated frames in one transaction, replacing rows with the same key; return
        the new rows per table."""

        added: dict[str, int] = {}
        with self._transaction():
            for table, parts in frames.items():
                batch = one_row_per_key(table, parts)
                if batch.empty:
                    continue
                spec = SPECS[table]
                self._stage(table, batch, spec.columns)
                deleted, inserted = (self._con.execute(sql).rowcount for sql in upsert_sql(table))
                self._con.execute("DROP TABLE staging")
                added[table] = added.get(table, 0) + inserted - deleted
        return added

    def replace_forecasts(self, frame: pd.DataFrame) -> int:
        """Write forecasts in one transaction, replacing each (series, model)'s previous ones;
        return the rows written."""
        with self._transaction():
            self._stage("forecasts", frame, FORECAST_COLUMNS)
            for sql in REPLACE_FORECASTS_SQL:
                self._con.execute(sql)
            self._con.execute("DROP TABLE staging")
        return len(frame)

    def _stage(self, table: str, frame: pd.DataFrame, columns: Sequence[str]) -> None:
        """Copy ``frame``'s ``columns`` into a temporary ``staging`` table (dropped after use)
        shaped like ``table``."""
        import pandas as pd

        names = ", ".join(columns)
        self._con.execute(
            f"CREATE TEMP TABLE staging ON COMMIT DROP AS SELECT {names} FROM {table} LIMIT 0"
        )
        rows = frame.loc[:, list(columns)].astype(object)
        rows = rows.where(pd.notna(rows), None)
        with self._con.cursor().copy(f"COPY staging ({names}) FROM STDIN") as copy:
            for values in rows.itertuples(index=False, name=None):
                copy.write_row([_plain(v) for v in values])

    def _scalar(self, sql: str) -> Any:
        row = self._con.execute(sql).fetchone()
        return row[0] if row else None


def _plain(value: Any) -> Any:
    """A pandas or numpy value as the Python value psycopg writes."""
    if hasattr(value, "to_pydatetime"):
        return value.to_pydatetime()
    if hasattr(value, "item"):
        return value.item()
    return value

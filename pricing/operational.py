"""Where the operational tables live: jobs, ledger, forecasts and placement scores.

By default they live in a SQLite file in WAL mode beside the local DuckDB store file
(:mod:`~spotwise.pricing.local_operational`), so every process of this machine reads and
writes them at once. With ``SPOTWISE_OPERATIONAL_STORE=postgresql://…`` they live in that
PostgreSQL database instead, so supervisors, the scheduled forecasts, the API and the
dashboard on many machines share one ledger. The market data and its analytics stay in each
machine's DuckDB file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from spotwise.pricing.schemas import OPERATIONAL_TABLES

if TYPE_CHECKING:
    import pandas as pd

    from spotwise.pricing.database import PostgresStore
    from spotwise.pricing.local_operational import SqliteStore
    from spotwise.pricing.store import DatabaseSummary, StoreSummary

__all__ = [
    "OPERATIONAL_TABLES",
    "OperationalStore",
    "export_parquet",
    "open_operational",
    "upsert_frames",
]


class OperationalStore(Protocol):
    """What the operational code asks of a store, answered by DuckDB and PostgreSQL alike."""

    @property
    def path(self) -> Path:
        """The local store file (pending ledger journals live next to it)."""
        ...

    def execute(self, sql: str, params: list[Any] | None = None) -> None:
        """Run one statement with ``?`` parameters."""
        ...

    def execute_all(self, statements: Sequence[tuple[str, list[Any]]]) -> None:
        """Run the statements in one transaction."""
        ...

    def query(self, sql: str, params: list[Any] | None = None) -> pd.DataFrame:
        """The rows of a query as a frame."""
        ...

    def records(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        """The rows of a query as dicts keyed by column."""
        ...

    def upsert(self, frames: Mapping[str, list[pd.DataFrame] | pd.DataFrame]) -> dict[str, int]:
        """Insert or replace rows by each table's key in one transaction; new rows per table."""
        ...

    def replace_forecasts(self, frame: pd.DataFrame) -> int:
        """Write forecasts, replacing each (series, model)'s previous ones; the rows written."""
        ...

    def summary(self) -> StoreSummary | DatabaseSummary:
        """Rows per operational table."""
        ...

    def close(self) -> None:
        """Close the connection."""
        ...


def operational_url() -> str | None:
    """The PostgreSQL database of the operational tables (None: the SQLite file beside the
    store file)."""
    from spotwise.core.settings import current

    return current().operational_store


def open_operational(
    store_path: Path, *, read_only: bool = False, wait_s: float | None = None
) -> SqliteStore | PostgresStore:
    """The operational tables' store: the PostgreSQL database when one is configured, else the
    SQLite file beside the store file at ``store_path`` (``read_only``: its connection refuses
    writes). Readers wait for no writer in either."""
    from spotwise.pricing.database import PostgresStore
    from spotwise.pricing.local_operational import SqliteStore

    url = operational_url()
    if url is not None:
        return PostgresStore.open(url, store_path, wait_s=wait_s)
    return SqliteStore.open(store_path, read_only=read_only, wait_s=wait_s)


def operational_exists(store_path: Path) -> bool:
    """Whether there is an operational store to read: a database always is; else its SQLite
    file, or a store file whose operational rows its first open copies over."""
    from spotwise.pricing.local_operational import operational_path

    if operational_url() is not None:
        return True
    return operational_path(store_path).exists() or store_path.exists()


def upsert_frames(
    store_path: Path, frames: Mapping[str, list[pd.DataFrame] | pd.DataFrame]
) -> dict[str, int]:
    """Write market frames to the store file and operational ones (placement scores) to the
    operational store, one transaction each."""
    from spotwise.pricing.store import MarketStore

    market = {t: f for t, f in frames.items() if t not in OPERATIONAL_TABLES}
    operational = {t: f for t, f in frames.items() if t in OPERATIONAL_TABLES}
    with MarketStore.open(store_path) as store:
        added = store.upsert(market)
    with open_operational(store_path) as store:
        added.update(store.upsert(operational))
    return added


def export_parquet(store: OperationalStore, table: str, target: Path) -> int:
    """Write the operational ``table`` of ``store`` to a Parquet file (atomically); return its
    row count.

    Raises:
        StoreError: for a table that is not an operational one.
    """
    from spotwise.pricing.errors import StoreError

    if table not in OPERATIONAL_TABLES:
        raise StoreError(
            f"{table!r} is not an operational table: choose one of {', '.join(OPERATIONAL_TABLES)}"
        )
    frame = store.query(f"SELECT * FROM {table}")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    frame.to_parquet(partial, index=False)
    partial.replace(target)
    return len(frame)

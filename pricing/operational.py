"""Where the operational tables live: jobs, ledger, forecasts and placement scores.

By default they share the local DuckDB store file with the market data. With
``SPOTWISE_OPERATIONAL_STORE=postgresql://…`` they live in that PostgreSQL database instead,
so supervisors, the scheduled forecasts, the API and the dashboard on many machines share one
ledger, while the market data and its analytics stay in each machine's DuckDB file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from spotwise.pricing.schemas import OPERATIONAL_TABLES

if TYPE_CHECKING:
    import pandas as pd

    from spotwise.pricing.database import PostgresStore
    from spotwise.pricing.store import DatabaseSummary, MarketStore, StoreSummary

__all__ = ["OPERATIONAL_TABLES", "OperationalStore", "open_operational", "upsert_frames"]


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
        """Rows per table (and, of a store file, rows, series and time span per source and
        table)."""
        ...

    def close(self) -> None:
        """Close the connection."""
        ...


def operational_url() -> str | None:
    """The PostgreSQL database of the operational tables (None: the local store file)."""
    from spotwise.core.settings import current

    return current().operational_store


def open_operational(
    store_path: Path, *, read_only: bool = False, wait_s: float | None = None
) -> MarketStore | PostgresStore:
    """The operational tables' store: the PostgreSQL database when one is configured, else the
    store file at ``store_path`` (read-only when asked: other readers can share it)."""
    from spotwise.pricing.database import PostgresStore
    from spotwise.pricing.store import MarketStore

    url = operational_url()
    if url is not None:
        return PostgresStore.open(url, store_path, wait_s=wait_s)
    if read_only:
        return MarketStore.open_to_read(store_path, wait_s=wait_s)
    return MarketStore.open(store_path, wait_s=wait_s)


def operational_exists(store_path: Path) -> bool:
    """Whether there is an operational store to read (a database always is)."""
    return operational_url() is not None or store_path.exists()


def upsert_frames(
    store_path: Path, frames: Mapping[str, list[pd.DataFrame] | pd.DataFrame]
) -> dict[str, int]:
    """Write market frames to the store file and operational ones (placement scores) to the
    operational store: in one transaction when they are the same file, else one each."""
    from spotwise.pricing.store import MarketStore

    if operational_url() is None:
        with MarketStore.open(store_path) as store:
            return store.upsert(frames)
    market = {t: f for t, f in frames.items() if t not in OPERATIONAL_TABLES}
    operational = {t: f for t, f in frames.items() if t in OPERATIONAL_TABLES}
    with MarketStore.open(store_path) as store:
        added = store.upsert(market)
    with open_operational(store_path) as store:
        added.update(store.upsert(operational))
    return added

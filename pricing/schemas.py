"""The tables every store holds, as each package registers them: their schemas, numbered
migrations and versions (no database driver needed to read them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from spotwise.pricing.errors import StoreBehind, StoreError


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


def exportable_tables() -> tuple[str, ...]:
    """Every table of every registered schema."""
    return tuple(t for schema in SCHEMAS.values() for t in schema.tables)


OPERATIONAL_TABLES = ("jobs", "ledger", "forecasts", "placement_scores")
"""The tables that live in the operational database when one is configured (the market tables
there stay empty)."""

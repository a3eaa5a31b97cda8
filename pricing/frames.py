"""The canonical long frames of docs/design.md ("Data contracts") and their validators.

Every loader and collector hands its frames to :func:`validate` before anything is stored.
Besides the contract columns, each stored row carries ``source`` (which loader or collector
produced it) so the store can summarise and replace data per source. pandas and NumPy are
imported when a frame is validated, so reading the contracts (as the CLI does) costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.pricing.clouds.registry import PROFILES
from spotwise.pricing.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

PROVIDERS = frozenset(PROFILES)
MARKETS = frozenset({"spot", "on_demand"})
EVENTS = frozenset({"launched", "preempted", "notice", "rebalance"})
FUTURE_MARGIN = timedelta(hours=24)
"""How far past the present a row's time may lie (clock skew between machines)."""
MAX_NODES = 100_000
"""Plausibility bound of a pool's node count."""
MAX_PRICE_USD_PER_HOUR = 1000.0
"""Plausibility bound of any price (the dearest instances cost a few hundred USD an hour)."""
ROW = "_row"
"""Optional column a loader adds: the row's position in its file, for error messages."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameSpec:
    """Columns, key and time column of one canonical frame."""

    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    time_column: str
    series: tuple[str, ...]


SPECS: dict[str, FrameSpec] = {
    spec.name: spec
    for spec in (
        FrameSpec(
            name="prices",
            columns=(
                "source",
                "provider",
                "region",
                "zone",
                "instance_type",
                "market",
                "ts",
                "price",
            ),
            key=("source", "provider", "region", "zone", "instance_type", "market", "ts"),
            time_column="ts",
            series=("provider", "region", "zone", "instance_type", "market"),
        ),
        FrameSpec(
            name="availability",
            columns=(
                "source",
                "provider",
                "zone",
                "instance_type",
                "ts",
                "available_nodes",
                "target_nodes",
            ),
            key=("source", "provider", "zone", "instance_type", "ts"),
            time_column="ts",
            series=("provider", "zone", "instance_type"),
        ),
        FrameSpec(
            name="events",
            columns=("source", "provider", "zone", "instance_type", "node", "ts", "event"),
            key=("source", "provider", "zone", "instance_type", "node", "ts", "event"),
            time_column="ts",
            series=("provider", "zone", "instance_type"),
        ),
        FrameSpec(
            name="bands",
            columns=(
                "source",
                "provider",
                "region",
                "instance_type",
                "observed",
                "interruption_band",
                "savings_pct",
            ),
            key=("source", "provider", "region", "instance_type", "observed"),
            time_column="observed",
            series=("provider", "region", "instance_type"),
        ),
        FrameSpec(
            name="placement_scores",
            columns=("source", "provider", "region", "zone", "instance_type", "observed", "score"),
            key=("source", "provider", "region", "zone", "instance_type", "observed"),
            time_column="observed",
            series=("provider", "region", "zone", "instance_type"),
        ),
        FrameSpec(
            # the provider's SKU(s) a price row was built from (a catalog price: GCP Billing,
            # Azure Retail), one row per price row it names (same key)
            name="price_skus",
            columns=(
                "source",
                "provider",
                "region",
                "zone",
                "instance_type",
                "market",
                "ts",
                "sku",
            ),
            key=("source", "provider", "region", "zone", "instance_type", "market", "ts"),
            time_column="ts",
            series=("provider", "region", "zone", "instance_type", "market"),
        ),
    )
}
"""Market tables a loader or collector may write (forecasts are written by forecasting)."""


def unique_id(provider: str, zone_or_region: str, instance_type: str, market: str) -> str:
    """The series id of docs/design.md ("Data contracts"):
    ``provider:zone-or-region:instance_type:market``."""
    return f"{provider}:{zone_or_region}:{instance_type}:{market}"


def region_of_zone(provider: str, zone: str) -> str:
    """Region of an availability zone (``us-east-1a`` → ``us-east-1``, ``us-central1-a`` →
    ``us-central1``)."""
    profile = PROFILES.get(provider, PROFILES["aws"])  # a zone and one letter, as AWS's
    return profile.region_of(zone)


def utc_now(clock: Clock = SYSTEM_CLOCK) -> pd.Timestamp:
    """The present on ``clock`` as a UTC timestamp (what stores and validators call now), to the
    microsecond: what the stores and ``datetime`` hold (a float's nanoseconds would make every
    ``to_pydatetime`` warn)."""
    import pandas as pd

    return pd.Timestamp(clock.time(), unit="s", tz="UTC").floor("us")


def validate(
    table: str,
    frame: pd.DataFrame,
    *,
    origin: str,
    where: str = "row {}",
    names: Mapping[str, str] | None = None,
    now: pd.Timestamp | None = None,
) -> pd.DataFrame:
    """Check one frame against its contract; return it with contract columns only, in order.

    Exact duplicate rows collapse to one; rows sharing a key with different values are an
    error.

    Args:
        table: the frame's name in :data:`SPECS`.
        frame: the rows; may hold a ``_row`` column locating each row in its file.
        origin: the file or API the rows came from, for error messages.
        where: how to name a row's location, formatted with its ``_row`` value.
        names: the file's own names of contract columns, for error messages.
        now: the present (default: the system clock); no row may lie past it by more than
            :data:`FUTURE_MARGIN`.

    Raises:
        InputError: on the first missing column, missing value, bad value or conflicting
            duplicate, naming the row and the field.
    """
    spec = SPECS[table]
    _require_columns(spec, frame, origin)
    check = _Checker(frame.copy(), origin, where, names or {})
    _check_common(spec, check)
    _check_times(spec, check, now)
    table_rules = _TABLE_RULES.get(table)
    if table_rules is not None:
        table_rules(check)
    return _without_duplicates(spec, check)


def _require_columns(spec: FrameSpec, frame: pd.DataFrame, origin: str) -> None:
    """Fail when the frame lacks a contract column."""
    missing = [c for c in spec.columns if c not in frame.columns]
    if missing:
        raise InputError(
            origin,
            "",
            f"{spec.name} rows lack column(s) {missing}",
            "Check the file's header or pass the right --format",
        )


def _check_common(spec: FrameSpec, check: _Checker) -> None:
    """Rules of every frame: no missing value, text where text belongs, a known provider."""
    frame = check.frame
    for column in spec.columns:
        check.require(
            frame[column].notna(), column, "missing value", "Fill in the value or remove the row"
        )
    for column in _TEXT_COLUMNS:
        if column in spec.columns:
            check.require(
                frame[column].map(lambda v: isinstance(v, str)),
                column,
                "not text",
                "Give a text value",
            )
    check.require(
        frame["provider"].isin(PROVIDERS),
        "provider",
        f"provider must be one of {sorted(PROVIDERS)}",
        "Fix the provider name",
    )


_TEXT_COLUMNS = ("source", "provider", "region", "zone", "instance_type", "node", "sku")


def _check_times(spec: FrameSpec, check: _Checker, now: pd.Timestamp | None) -> None:
    """Times are UTC-aware and none lies past ``now`` by more than :data:`FUTURE_MARGIN`."""
    import pandas as pd

    stamps = check.frame[spec.time_column]
    if not isinstance(stamps.dtype, pd.DatetimeTZDtype) or str(stamps.dt.tz) != "UTC":
        raise InputError(
            check.origin,
            f"field {spec.time_column!r}",
            "timestamps are not UTC-aware",
            "Give ISO-8601 times with a Z or +00:00 suffix",
        )
    latest = (now or utc_now()) + FUTURE_MARGIN
    check.require(
        stamps <= latest,
        spec.time_column,
        f"time is in the future (after {latest:%Y-%m-%d %H:%M}Z, now plus "
        f"{FUTURE_MARGIN.total_seconds() / 3600:.0f} h)",
        "Fix the clock or the date: a future time would stop collection from resuming",
    )


def _check_prices(check: _Checker) -> None:
    """A known market and a positive, plausible price."""
    check.require(
        check.frame["market"].isin(MARKETS),
        "market",
        f"market must be one of {sorted(MARKETS)}",
        "Fix the market",
    )
    price = check.number("price")
    check.require(
        price > 0,
        "price",
        "price must be a positive number of USD per hour",
        "Fix or remove that row, then load again",
    )
    check.require(
        price <= MAX_PRICE_USD_PER_HOUR,
        "price",
        f"price above {MAX_PRICE_USD_PER_HOUR:,.0f} USD per instance-hour is not plausible "
        "(the dearest cloud instances cost a few hundred)",
        "Check the unit (USD per instance-hour) and the value",
    )


def _check_availability(check: _Checker) -> None:
    """Whole, plausible node counts, no more available than the target."""
    available, target = check.number("available_nodes"), check.number("target_nodes")
    for column, values in (("available_nodes", available), ("target_nodes", target)):
        check.require(values % 1 == 0, column, "node counts must be whole numbers", "Fix the count")
    check.require(available >= 0, "available_nodes", "node count is negative", "Fix the count")
    check.require(target >= 1, "target_nodes", "target must be at least one node", "Fix the target")
    check.require(
        target <= MAX_NODES,
        "target_nodes",
        f"target above {MAX_NODES:,} nodes is not plausible",
        "Fix the target",
    )
    check.require(
        available <= target,
        "available_nodes",
        "more nodes available than the target",
        "Fix the count or the target",
    )


def _check_events(check: _Checker) -> None:
    """A known event name."""
    check.require(
        check.frame["event"].isin(EVENTS),
        "event",
        f"event must be one of {sorted(EVENTS)}",
        "Fix the event name",
    )


def _check_bands(check: _Checker) -> None:
    """Bands 0..4 and savings of at most 100 %."""
    check.require(
        check.number("interruption_band").isin([0, 1, 2, 3, 4]),
        "interruption_band",
        "band must be 0..4",
        "Fix the band",
    )
    # A saving may be negative: the advisor reports spot above on-demand as it is.
    check.require(
        check.number("savings_pct") <= 100,
        "savings_pct",
        "saving must be at most 100 %",
        "Fix the saving",
    )


def _check_placement_scores(check: _Checker) -> None:
    """Scores 1..10."""
    check.require(
        check.number("score").between(1, 10),
        "score",
        "placement score must be 1..10",
        "Fix the score",
    )


_TABLE_RULES: dict[str, Callable[[_Checker], None]] = {
    "prices": _check_prices,
    "availability": _check_availability,
    "events": _check_events,
    "bands": _check_bands,
    "placement_scores": _check_placement_scores,
}
"""The rules of each frame beyond the common ones."""


def one_row_per_key(table: str, parts: list[pd.DataFrame] | pd.DataFrame) -> pd.DataFrame:
    """A batch for ``table``'s store: its columns in order, times at the stores' precision
    (microseconds: two times within one are one key), one row per key (the last one given)."""
    import pandas as pd

    spec = SPECS[table]
    batch = pd.concat(parts, ignore_index=True) if isinstance(parts, list) else parts
    batch = batch.loc[:, list(spec.columns)]
    times = [c for c in spec.columns if isinstance(batch[c].dtype, pd.DatetimeTZDtype)]
    if times:
        batch = batch.assign(**{c: batch[c].dt.floor("us") for c in times})
    return batch.drop_duplicates(list(spec.key), keep="last")


def _without_duplicates(spec: FrameSpec, check: _Checker) -> pd.DataFrame:
    """The contract columns in order, exact duplicates collapsed; rows sharing a key with
    other values are an error."""
    out = check.frame.loc[:, list(spec.columns)]
    shares_key = out.duplicated(list(spec.key), keep=False)
    if shares_key.any():
        check.require(
            ~(shares_key & ~out.duplicated(keep=False)),
            spec.key[-1],
            f"another row has the same {list(spec.key)} but other values",
            "Keep one of them",
        )
        out = out[~out.duplicated(keep="first")]
    return out.reset_index(drop=True)


class _Checker:
    """Raises an :class:`InputError` naming the first row that breaks a rule."""

    def __init__(
        self, frame: pd.DataFrame, origin: str, where: str, names: Mapping[str, str]
    ) -> None:
        import numpy as np
        import pandas as pd

        self.frame = frame
        self.names = names
        self.origin = origin
        self.where = where
        self.rows = (
            frame[ROW]
            if ROW in frame.columns
            else pd.Series(np.arange(len(frame)), index=frame.index)
        )

    def require(self, ok: pd.Series, column: str, problem: str, hint: str) -> None:
        """Fail on the first row where ``ok`` is false."""
        import numpy as np

        bad = np.flatnonzero(~ok.to_numpy(dtype=bool))
        if bad.size == 0:
            return
        i = bad[0]
        more = f" ({bad.size} rows like it)" if bad.size > 1 else ""
        raise InputError(
            self.origin,
            f"{self.where.format(self.rows.iloc[i])}, field {self.names.get(column, column)!r}",
            f"{problem}, got {_show(self.frame[column].iloc[i])}{more}",
            f"{hint}; nothing was stored",
        )

    def number(self, column: str) -> pd.Series:
        """The column as finite numbers; a text that is not a number is an error."""
        import numpy as np
        import pandas as pd

        values = pd.to_numeric(self.frame[column], errors="coerce")
        self.require(values.notna(), column, "not a number", "Give a number")
        self.require(
            pd.Series(np.isfinite(values.to_numpy(dtype=float)), index=values.index),
            column,
            "not a finite number",
            "Give a finite number",
        )
        self.frame[column] = values
        return values


def _show(value: object) -> str:
    """A value as a person would write it in the file."""
    return repr(value) if isinstance(value, str) else str(value)

"""The risk rows of the ``forecasts`` table: the model label ``spotwise forecast run`` writes
them under, and the one read of a pool's MTBF from them. Light to import (no forecasting model
comes with it): the training guard reads it at run time."""

from __future__ import annotations

from typing import TYPE_CHECKING

from spotwise.pricing.forecast.risk_forecasters import SHIPPED_RISK

if TYPE_CHECKING:
    from spotwise.pricing.operational import OperationalStore

RISK_MODEL = f"risk-{SHIPPED_RISK.label}"
"""The model label of the risk rows: the configuration's (``risk-survival-v1``), so rows of an
older configuration are never read as this one's."""


def latest_mtbf_hours(store: OperationalStore, pool: str) -> float | None:
    """The expected hours of a spot run started in ``pool`` (``provider:zone:instance_type:spot``)
    by its newest :data:`RISK_MODEL` row; None when there is none, or it is not a positive
    number."""
    rows = store.query(
        "SELECT mean FROM forecasts WHERE unique_id = ? AND model = ? "
        "ORDER BY created_at DESC LIMIT 1",
        [pool, RISK_MODEL],
    )
    if rows.empty:
        return None
    mean = float(rows["mean"].iloc[0])
    return mean if mean > 0 else None  # NaN is not > 0 either

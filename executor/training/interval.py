"""The checkpoint interval at run time: Young/Daly from the measured stall and the hazard."""

from __future__ import annotations

from pathlib import Path

from spotwise.policy.cost import daly_interval

DEFAULT_MTBF_S = 3600.0
DEFAULT_INTERVAL_S = 60.0


def checkpoint_interval_s(
    *, stall_s: float | None, persist_s: float | None, mtbf_s: float | None
) -> float:
    """Daly's interval for the measured blocking time and the MTBF, never shorter than one
    background persist (a second save would wait for the first); 60 s before any is measured."""
    if stall_s is None:
        return DEFAULT_INTERVAL_S
    mtbf = mtbf_s if mtbf_s is not None else DEFAULT_MTBF_S
    interval_h = daly_interval(max(stall_s, 1e-3) / 3600.0, mtbf / 3600.0)
    return max(interval_h * 3600.0, persist_s or 0.0)


def forecast_mtbf_s(store_path: str, pool: str) -> float | None:
    """The mean time to preemption (seconds) that ``spotwise forecast run`` last wrote for
    ``pool`` (``provider:zone:instance_type:spot``), or None when there is none (or no store
    to read)."""
    from spotwise.pricing.errors import StoreError
    from spotwise.pricing.forecast.risk_rows import latest_mtbf_hours
    from spotwise.pricing.operational import open_operational

    try:
        store = open_operational(Path(store_path), read_only=True)
    except StoreError:
        return None
    with store:
        hours = latest_mtbf_hours(store, pool)
    return None if hours is None else hours * 3600.0

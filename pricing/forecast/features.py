"""Causal features of spot availability for preemption-risk models.

Every feature at tick t uses ticks <= t only: availability over several recent windows, the
time since the pool was last unavailable, losses in the last day, the time of day and week,
the other pools' state now and over the last hour, and the pool's Spot Advisor interruption
band (0: <5 % … 4: >20 %; from a snapshot taken before the trace starts; unknown = 2).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

WINDOWS_HOURS = (1.0, 6.0, 24.0, 168.0)
FEATURES = (
    *(f"avail_{w:g}h" for w in WINDOWS_HOURS),
    "hours_since_down",
    "losses_24h",
    "hour_sin",
    "hour_cos",
    "dow_sin",
    "dow_cos",
    "others_now",
    "others_1h",
    "advisor_band",
)
UNKNOWN_BAND = 2.0


def _trailing_mean(x: np.ndarray, window: int) -> np.ndarray:
    """Mean of x over the last ``window`` ticks (fewer at the start)."""
    cum = np.concatenate([[0.0], np.cumsum(x, dtype=float)])
    idx = np.arange(1, len(x) + 1)
    lo = np.maximum(0, idx - window)
    return (cum[idx] - cum[lo]) / (idx - lo)


def _hours_since_down(available: np.ndarray, gap_s: float, cap_h: float = 24.0 * 7) -> np.ndarray:
    """Hours since the last unavailable tick (capped when never seen)."""
    ticks = np.arange(len(available))
    last_down = np.where(~available, ticks, -1)
    last_down = np.maximum.accumulate(last_down)
    hours = np.where(last_down >= 0, (ticks - last_down) * gap_s / 3600.0, cap_h)
    return np.minimum(hours, cap_h)


def pool_features(
    available: np.ndarray,
    gap_s: float,
    start: pd.Timestamp,
    bands: Sequence[float | None] | None = None,
) -> pd.DataFrame:
    """Features of every tick of every pool: rows (pool, tick), columns :data:`FEATURES`.

    Args:
        available: bool [pools, ticks].
        gap_s: seconds between ticks.
        start: the clock time of tick 0 (UTC).
        bands: each pool's Spot Advisor band (None: unknown).
    """
    pools, ticks = available.shape
    per_hour = 3600.0 / gap_s
    times = start + pd.to_timedelta(np.arange(ticks) * gap_s, unit="s")
    hour = (times.hour + times.minute / 60.0).to_numpy()
    dow = times.day_of_week.to_numpy() + hour / 24.0
    frames = []
    total_now = available.sum(axis=0)
    for p in range(pools):
        a = available[p].astype(float)
        losses = np.r_[0.0, ((available[p][:-1]) & (~available[p][1:])).astype(float)]
        others = (total_now - available[p]) / max(1, pools - 1)
        columns = {
            f"avail_{w:g}h": _trailing_mean(a, max(1, round(w * per_hour))) for w in WINDOWS_HOURS
        }
        since_down = _hours_since_down(available[p], gap_s)
        columns.update(
            {
                "hours_since_down": np.log1p(since_down),
                "losses_24h": _trailing_mean(losses, round(24 * per_hour)) * round(24 * per_hour),
                "hour_sin": np.sin(2 * np.pi * hour / 24),
                "hour_cos": np.cos(2 * np.pi * hour / 24),
                "dow_sin": np.sin(2 * np.pi * dow / 7),
                "dow_cos": np.cos(2 * np.pi * dow / 7),
                "others_now": others,
                "others_1h": _trailing_mean(others, max(1, round(per_hour))),
                "advisor_band": np.full(
                    ticks, UNKNOWN_BAND if bands is None or bands[p] is None else bands[p]
                ),
            }
        )
        frame = pd.DataFrame(columns)
        frame["pool"] = p
        frame["tick"] = np.arange(ticks)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def lose_within(available: np.ndarray, horizon: int) -> np.ndarray:
    """bool [pools, ticks]: the pool becomes unavailable at some tick in (t, t + horizon]
    (False where t + horizon is past the end; mask those out)."""
    pools, ticks = available.shape
    down = (~available).astype(int)
    cum = np.concatenate([np.zeros((pools, 1), dtype=int), np.cumsum(down, axis=1)], axis=1)
    t = np.arange(ticks)
    end = np.minimum(t + horizon, ticks - 1)
    return (cum[:, end + 1] - cum[:, t + 1]) > 0

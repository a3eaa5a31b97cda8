"""The total-cost model: compute + checkpoint storage + recovery, and the checkpoint interval.

``total = compute + storage + recovery`` (docs/design.md, "Cost model"): compute is the hours on
each market times its price; storage is checkpoint GB × $/GB-month × retention plus request
charges; recovery is, per interruption, the work lost since the last durable checkpoint plus the
restart time, paid at the price of the instance that redoes it. The checkpoint interval is
Young's ``sqrt(2·δ·M)`` or Daly's higher-order form; the expected run time under a preemption
hazard is Daly's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from spotwise.policy.errors import PolicyError

HOURS_PER_MONTH = 730.0


@dataclass(frozen=True, slots=True, kw_only=True)
class CostBreakdown:
    """A job's cost by category, against running all of its work on demand."""

    compute: float
    storage: float
    recovery: float
    on_demand: float
    """What the same work costs on demand alone (the baseline)."""

    @property
    def total(self) -> float:
        """Compute, storage and recovery together."""
        return self.compute + self.storage + self.recovery

    @property
    def saved(self) -> float:
        """Dollars saved against the on-demand baseline."""
        return self.on_demand - self.total

    @property
    def saved_pct(self) -> float:
        """Percent saved against the on-demand baseline (0 when it is 0)."""
        return 100.0 * self.saved / self.on_demand if self.on_demand else 0.0

    def as_dict(self) -> dict[str, float]:
        """Rounded to cents (and 0.1 %) for reports."""
        return {
            "compute": round(self.compute, 2),
            "storage": round(self.storage, 2),
            "recovery": round(self.recovery, 2),
            "total": round(self.total, 2),
            "on_demand": round(self.on_demand, 2),
            "saved_pct": round(self.saved_pct, 1),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class StorageTerms:
    """Checkpoint storage: size, price, how long it is kept, and request charges."""

    checkpoint_gb: float = 0.0
    usd_per_gb_month: float = 0.023
    retention_months: float = 1.0
    requests: float = 0.0
    usd_per_1k_requests: float = 0.005

    def cost(self) -> float:
        """Dollars for keeping the checkpoints and for the requests."""
        return (
            self.checkpoint_gb * self.usd_per_gb_month * self.retention_months
            + self.requests / 1000.0 * self.usd_per_1k_requests
        )


def total_cost(
    *,
    spot_hours: float,
    spot_price: float,
    on_demand_price: float,
    on_demand_hours: float = 0.0,
    interruptions: float = 0.0,
    recovery_hours_each: float = 0.0,
    recovery_price: float | None = None,
    storage: StorageTerms | None = None,
) -> CostBreakdown:
    """Cost of a job that ran ``spot_hours`` on spot and ``on_demand_hours`` on demand.

    Args:
        interruptions: preemptions suffered.
        recovery_hours_each: work lost plus restart time per interruption.
        recovery_price: price paid while redoing it (default: the spot price).
        storage: checkpoint storage terms (default: none).
    """
    for name, value in (
        ("spot_hours", spot_hours),
        ("on_demand_hours", on_demand_hours),
        ("interruptions", interruptions),
        ("recovery_hours_each", recovery_hours_each),
    ):
        if value < 0:
            raise PolicyError(f"{name} must be >= 0, got {value}")
    redo_price = spot_price if recovery_price is None else recovery_price
    return CostBreakdown(
        compute=spot_hours * spot_price + on_demand_hours * on_demand_price,
        storage=storage.cost() if storage else 0.0,
        recovery=interruptions * recovery_hours_each * redo_price,
        on_demand=(spot_hours + on_demand_hours) * on_demand_price,
    )


def young_interval(checkpoint_hours: float, mtbf_hours: float) -> float:
    """Young's checkpoint interval ``sqrt(2·δ·M)`` in hours."""
    _check_interval_inputs(checkpoint_hours, mtbf_hours)
    return math.sqrt(2.0 * checkpoint_hours * mtbf_hours)


def daly_interval(checkpoint_hours: float, mtbf_hours: float) -> float:
    """Daly's higher-order checkpoint interval in hours (M when δ >= 2M)."""
    _check_interval_inputs(checkpoint_hours, mtbf_hours)
    delta, m = checkpoint_hours, mtbf_hours
    if delta >= 2.0 * m:
        return m
    x = math.sqrt(delta / (2.0 * m))
    return math.sqrt(2.0 * delta * m) * (1.0 + x / 3.0 + x * x / 9.0) - delta


def _check_interval_inputs(checkpoint_hours: float, mtbf_hours: float) -> None:
    if checkpoint_hours <= 0 or mtbf_hours <= 0:
        raise PolicyError(
            f"checkpoint time and MTBF must be positive, got {checkpoint_hours} h and "
            f"{mtbf_hours} h"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SpotRun:
    """Expected course of ``work_hours`` on spot under a constant preemption hazard."""

    wall_hours: float
    checkpoint_hours: float
    """Time spent blocked writing checkpoints."""
    recovery_hours: float
    """Work redone plus restarts."""
    interruptions: float


def expected_spot_run(
    *,
    work_hours: float,
    mtbf_hours: float,
    checkpoint_hours: float,
    restart_hours: float,
    interval_hours: float,
) -> SpotRun:
    """Daly's expected wall time with checkpoints every ``interval_hours``:
    ``(W/T)·M·e^(R/M)·(e^((T+δ)/M) − 1)``; an infinite MTBF means no preemption."""
    if interval_hours <= 0:
        raise PolicyError(f"the checkpoint interval must be positive, got {interval_hours} h")
    segments = work_hours / interval_hours
    overhead = segments * checkpoint_hours
    if math.isinf(mtbf_hours):
        return SpotRun(
            wall_hours=work_hours + overhead,
            checkpoint_hours=overhead,
            recovery_hours=0.0,
            interruptions=0.0,
        )
    m = mtbf_hours
    exponent = (interval_hours + checkpoint_hours) / m + restart_hours / m
    wall = (
        math.inf
        if exponent > 700
        else segments
        * m
        * (math.exp(restart_hours / m) * math.expm1((interval_hours + checkpoint_hours) / m))
    )
    return SpotRun(
        wall_hours=wall,
        checkpoint_hours=overhead,
        recovery_hours=max(0.0, wall - work_hours - overhead),
        interruptions=wall / m,
    )


def spot_late_probability(
    *,
    work_hours: float,
    deadline_hours: float,
    mtbf_hours: float,
    checkpoint_hours: float,
    restart_hours: float,
    interval_hours: float,
) -> float:
    """P(the work, run on spot alone, is not done by the deadline) under a constant hazard.

    Each of the W/T segments (T of work and δ of checkpoint) is retried until it runs
    unbroken; a try breaks after an exponential time shorter than the segment and costs that
    time plus the restart. The broken tries over the job are negative-binomial; given their
    number f, the time they cost is a sum of f bounded losses, taken as normal within its
    bounds (past 20,000 likely tries, the whole loss is taken as normal).
    """
    import numpy as np
    from scipy import special

    segment = interval_hours + checkpoint_hours
    segments = work_hours / interval_hours
    unbroken = segments * segment
    slack = deadline_hours - unbroken
    if math.isinf(mtbf_hours):
        return float(slack < 0)
    if slack < 0:
        return 1.0
    m = mtbf_hours
    whole = math.exp(-segment / m)  # P(a try runs the whole segment)
    if whole < 1e-12:
        return 1.0
    broken = -math.expm1(-segment / m)
    # one broken try loses Y = X + R, X exponential(m) cut at the segment length
    x1 = (m - (segment + m) * whole) / broken
    x2 = (2 * m * m - (segment**2 + 2 * segment * m + 2 * m * m) * whole) / broken
    y_mean, y_sd = x1 + restart_hours, math.sqrt(max(0.0, x2 - x1 * x1))
    # the broken tries: negative binomial (``segments`` successes, each try whole with
    # ``whole``), through scipy.special (a frozen scipy.stats distribution costs a millisecond)
    tries_mean = segments * broken / whole
    tries_var = tries_mean / whole
    most = math.ceil(tries_mean + 12 * math.sqrt(tries_var)) + 10
    if not most < 20_000:  # many broken tries: their total is normal (and this stays fast)
        lost_mean = tries_mean * y_mean
        lost_var = tries_mean * y_sd**2 + tries_var * y_mean**2
        return float(special.ndtr(-(slack - lost_mean) / math.sqrt(max(lost_var, 1e-12))))
    f = np.arange(0, most + 1)
    pmf = np.exp(
        special.gammaln(f + segments)
        - special.gammaln(segments)
        - special.gammaln(f + 1)
        + segments * math.log(whole)
        + f * math.log(broken)
    )
    beyond = float(special.betainc(most + 1, segments, broken))  # P(more than ``most``)
    loss_low, loss_high = f * restart_hours, f * (restart_hours + segment)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (slack - f * y_mean) / (y_sd * np.sqrt(f))
    over = np.where(f == 0, 0.0, special.ndtr(-z))
    over = np.where(slack < loss_low, 1.0, np.where(slack >= loss_high, 0.0, over))
    late = float(np.sum(pmf * over) + beyond)
    return min(1.0, max(0.0, late))


def expected_spot_cost(
    *,
    work_hours: float,
    spot_price: float,
    on_demand_price: float,
    mtbf_hours: float,
    checkpoint_hours: float,
    restart_hours: float,
    storage: StorageTerms | None = None,
) -> tuple[CostBreakdown, float]:
    """Expected cost of running the work on spot with Daly's interval; returns the cost and the
    interval in hours."""
    interval = (
        daly_interval(checkpoint_hours, mtbf_hours) if math.isfinite(mtbf_hours) else work_hours
    )
    run = expected_spot_run(
        work_hours=work_hours,
        mtbf_hours=mtbf_hours,
        checkpoint_hours=checkpoint_hours,
        restart_hours=restart_hours,
        interval_hours=interval,
    )
    cost = CostBreakdown(
        compute=(work_hours + run.checkpoint_hours) * spot_price,
        storage=storage.cost() if storage else 0.0,
        recovery=run.recovery_hours * spot_price,
        on_demand=work_hours * on_demand_price,
    )
    return cost, interval

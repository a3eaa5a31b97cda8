"""A training job in hours, and the same job in the ticks of a trace (docs/design.md, "Policy
benchmark semantics")."""

from __future__ import annotations

import math
from dataclasses import dataclass

from spotwise.policy.errors import PolicyError
from spotwise.pricing.quotes import REFERENCE_ON_DEMAND_USD, REFERENCE_SPOT_USD

MAX_JOB_HOURS = 100_000
"""The most hours a job's work or deadline may be (about 11 years): every way in (a request,
a fleet file, ``plan``) refuses more, so no sum over a job overflows."""


@dataclass(frozen=True, slots=True, kw_only=True)
class JobSpec:
    """What the job needs: compute hours by a deadline, the changeover time and the prices, and
    what a move costs beside its changeover: the checkpoint's gigabytes (read from the region
    that wrote it) and the price of a launch request."""

    compute_hours: float
    deadline_hours: float
    changeover_hours: float
    spot_price: float
    on_demand_price: float
    checkpoint_gb: float = 0.0
    request_usd: float = 0.0
    """$ a launch that lands is billed beside its hours (a minimum charge; 0: none)."""

    def __post_init__(self) -> None:
        for name in ("compute_hours", "deadline_hours", "spot_price", "on_demand_price"):
            if not getattr(self, name) > 0:
                raise PolicyError(f"{name} must be positive, got {getattr(self, name)}")
        for name in ("changeover_hours", "checkpoint_gb", "request_usd"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise PolicyError(f"{name} must be >= 0 and finite, got {value}")
        if self.deadline_hours < self.compute_hours + self.changeover_hours:
            raise PolicyError(
                f"the deadline ({self.deadline_hours} h) is shorter than the compute plus one "
                f"changeover ({self.compute_hours + self.changeover_hours} h): no schedule fits"
            )

    def ticks(self, gap_seconds: float) -> JobTicks:
        """The job on a trace with ``gap_seconds`` between ticks."""
        per_hour = 3600.0 / gap_seconds
        return JobTicks(
            work=round(self.compute_hours * per_hour),
            deadline=math.floor(self.deadline_hours * per_hour),
            changeover=round(self.changeover_hours * per_hour),
            deadline_exact=self.deadline_hours * per_hour,
            hours_per_tick=gap_seconds / 3600.0,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class JobTicks:
    """K productive ticks needed by tick T; a changeover lasts D ticks."""

    work: int
    """K = round(C·3600/g)."""
    deadline: int
    """T = floor(R·3600/g)."""
    changeover: int
    """D = round(d·3600/g)."""
    deadline_exact: float
    """R·3600/g before flooring, for uniform progress ep(t) = K·t/(R·3600/g)."""
    hours_per_tick: float


REFERENCE = JobSpec(
    compute_hours=48.0,
    deadline_hours=60.0,
    changeover_hours=0.2,
    spot_price=REFERENCE_SPOT_USD,
    on_demand_price=REFERENCE_ON_DEMAND_USD,
)
"""The reference job of the benchmarks: 48 h of V100 work in 60 h, 0.2 h changeover,
$0.918/h spot against $3.06/h on demand (p3.2xlarge)."""

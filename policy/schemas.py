"""The policy API's request and response bodies (pydantic models, the OpenAPI schema)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class JobTerms(BaseModel):
    """The job: work, deadline, changeover and prices."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    compute_hours: float = Field(gt=0, le=100_000, examples=[48.0])
    deadline_hours: float = Field(gt=0, le=100_000, examples=[60.0])
    changeover_hours: float = Field(default=0.2, ge=0, le=100, examples=[0.2])
    spot_price: float = Field(gt=0, le=10_000, examples=[0.918])
    on_demand_price: float = Field(gt=0, le=10_000, examples=[3.06])
    checkpoint_seconds: float = Field(default=30.0, ge=0.01, le=86_400)

    @model_validator(mode="after")
    def _fits(self) -> JobTerms:
        if self.deadline_hours < self.compute_hours + self.changeover_hours:
            raise ValueError(
                f"deadline_hours ({self.deadline_hours}) is shorter than compute_hours plus one "
                f"changeover ({self.compute_hours + self.changeover_hours}): no schedule fits"
            )
        return self


class PoolNow(BaseModel):
    """One pool at this moment."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    available: bool
    price: float | None = Field(default=None, gt=0, le=10_000)


class JobState(BaseModel):
    """Where the job stands."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    elapsed_hours: float = Field(ge=0, le=100_000)
    progress_hours: float = Field(ge=0, le=100_000)
    instance: Literal["none", "on-demand", "spot"] = "none"
    pool: str | None = Field(default=None, max_length=200)
    changeover_left_hours: float = Field(default=0.0, ge=0, le=100)

    @model_validator(mode="after")
    def _pool_with_spot(self) -> JobState:
        if (self.instance == "spot") != (self.pool is not None):
            raise ValueError("give pool exactly when instance is 'spot'")
        return self


class DecisionRequest(BaseModel):
    """Job, state and the pools' availability now → the next action."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    policy: str = Field(
        default="best",
        pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$",
        description="A policy this service serves (GET /healthz lists them); never a path.",
        examples=["best"],
    )
    job: JobTerms
    state: JobState
    pools: dict[str, PoolNow] = Field(min_length=1, max_length=64)


class Decision(BaseModel):
    """What to do now, and why."""

    action: Literal["wait", "on-demand", "spot"]
    pool: str | None
    market: Literal["spot", "on-demand"] | None
    bid: float | None
    checkpoint_interval_minutes: float | None
    expected_cost_usd: float
    reason: str


class PoolRank(BaseModel):
    """One pool's expected outcome for a job."""

    pool: str
    expected_cost_usd: float
    on_demand_cost_usd: float
    spot_share: float
    checkpoint_interval_hours: float
    mtbf_hours: float


class PoolForecast(BaseModel):
    """A pool's preemption-risk forecast from its availability history."""

    pool: str
    available_now: bool
    available_share: float
    mean_run_hours: float
    expected_hours_to_preemption: float | None
    preemption_probability_60min: float | None
    history_hours: float


class Health(BaseModel):
    status: Literal["ok"]
    pools: int
    policies: list[str]

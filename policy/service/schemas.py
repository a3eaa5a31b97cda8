"""The policy API's request and response bodies (pydantic models, the OpenAPI schema).

Every rule the service enforces is in the schema: a schema-valid request gets an answer. A
job whose deadline can no longer be met is answered (on-demand finishes soonest), not refused;
the state is ``none``/``on-demand`` without a pool, or ``spot`` with one (a discriminated
union); the pool names are the service's own (added to the schema by :mod:`.api`).
A job whose progress is past its work is answered ``done``.

The request bodies are strict: a number is a JSON number (``true`` or ``"48"`` is refused with a
422), a flag a JSON boolean. The query of ``GET /v1/pools`` (:class:`JobQuery`) is text by
nature, and read as numbers.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from spotwise.policy.job import MAX_JOB_HOURS

STRICT = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)
"""Bodies: no field the schema lacks, no NaN or Infinity, no type coerced (``true`` is no
number, ``"48"`` is no number, ``1`` is no boolean)."""


class JobTerms(BaseModel):
    """The job: work, deadline, changeover and prices."""

    model_config = STRICT

    compute_hours: float = Field(gt=0, le=MAX_JOB_HOURS, examples=[48.0])
    deadline_hours: float = Field(gt=0, le=MAX_JOB_HOURS, examples=[60.0])
    changeover_hours: float = Field(default=0.2, ge=0, le=100, examples=[0.2])
    spot_price: float = Field(ge=1e-4, le=10_000, examples=[0.918])
    on_demand_price: float = Field(ge=1e-4, le=10_000, examples=[3.06])
    checkpoint_seconds: float = Field(default=30.0, ge=0.01, le=86_400)

    @property
    def feasible(self) -> bool:
        """Whether the work and one changeover fit before the deadline."""
        return self.deadline_hours >= self.compute_hours + self.changeover_hours


class JobQuery(JobTerms):
    """The job as the query of ``GET /v1/pools`` gives it: text read as numbers."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=False)


class PoolNow(BaseModel):
    """One pool as the controller last saw it: available or not, and how long ago."""

    model_config = STRICT

    available: bool
    price: float | None = Field(default=None, ge=1e-4, le=10_000)
    seen_minutes_ago: float | None = Field(
        default=0.0,
        ge=0,
        le=1_000_000,
        description="How long ago ``available`` was seen: 0 = now; null = never seen (then "
        "``available`` is ignored). A controller that sees every pool sends 0 for all.",
    )


class IdleState(BaseModel):
    """Where the job stands: on no instance or on on-demand."""

    model_config = STRICT

    elapsed_hours: float = Field(ge=0, le=100_000)
    progress_hours: float = Field(
        ge=0,
        le=100_000,
        description="Hours of the job's work done. Past ``compute_hours`` the job is done and "
        "the answer is ``done``; at it, the job is placed as usual (its command has yet to "
        "end).",
    )
    instance: Literal["none", "on-demand"] = "none"
    changeover_left_hours: float = Field(default=0.0, ge=0, le=100)

    @property
    def pool(self) -> None:
        """No pool: the job is on no instance or on on-demand."""
        return None


class SpotState(BaseModel):
    """Where the job stands: on spot in ``pool`` (available now, since it runs there)."""

    model_config = STRICT

    elapsed_hours: float = Field(ge=0, le=100_000)
    progress_hours: float = Field(
        ge=0,
        le=100_000,
        description="Hours of the job's work done. Past ``compute_hours`` the job is done and "
        "the answer is ``done``; at it, the job is placed as usual (its command has yet to "
        "end).",
    )
    instance: Literal["spot"]
    pool: str = Field(min_length=1, max_length=200)
    changeover_left_hours: float = Field(default=0.0, ge=0, le=100)


def _instance(value: Any) -> str | None:
    """The state's tag: ``spot`` or ``idle`` (None for a value that is no state at all)."""
    if isinstance(value, dict):
        instance = value.get("instance", "none")
    elif isinstance(value, IdleState | SpotState):
        instance = value.instance
    else:
        return None
    return "spot" if instance == "spot" else "idle"


JobState = Annotated[
    Annotated[IdleState, Tag("idle")] | Annotated[SpotState, Tag("spot")],
    Discriminator(_instance),
]
"""Where the job stands: ``instance`` none or on-demand (no pool), or spot with its pool."""


class DecisionRequest(BaseModel):
    """Job, state and the pools' availability now → the next action."""

    model_config = STRICT

    policy: str = Field(
        default="best",
        pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$",
        description="A policy this service serves (GET /healthz lists them); never a path.",
        examples=["best"],
    )
    job: JobTerms
    state: JobState
    pools: dict[str, PoolNow] = Field(
        default_factory=dict,
        max_length=64,
        description="The pools to choose among, each as the controller saw it. Left out (or "
        "empty): every pool this service knows, each counted as available now at the job's "
        "``spot_price``. The job's own spot pool counts as available whether named or not.",
    )
    observe: Literal["all", "current", "probe"] = Field(
        default="all",
        description="What the controller sees: every pool now (all), or only the pool it runs "
        "in plus what its launch requests taught (current, probe); blind, a spot decision is a "
        "launch request naming ``request_pools``.",
    )
    probe_seconds: float = Field(default=60.0, ge=0, le=3_600)


class Decision(BaseModel):
    """What to do now, and why (``done``: the job's progress is past its work; nothing to
    run)."""

    action: Literal["wait", "on-demand", "spot", "done"]
    pool: str | None
    market: Literal["spot", "on-demand"] | None
    bid: float | None
    checkpoint_interval_minutes: float | None
    expected_cost_usd: float
    reason: str
    request_pools: list[str] = Field(
        default_factory=list,
        description="For spot: the pools to name in the launch request, in order of preference "
        "(an EC2 Fleet request); it lands in the cheapest available one.",
    )
    risk_model: str | None = Field(
        default=None,
        description="For spot: the risk forecast the decision read (its configuration's label, "
        "e.g. survival-v1), whose forecast run the reason, the checkpoint interval and the "
        "expected cost rest on.",
        examples=["survival-v1"],
    )


class PoolRank(BaseModel):
    """One pool's expected outcome for a job."""

    pool: str
    expected_cost_usd: float
    on_demand_cost_usd: float
    spot_share: float
    checkpoint_interval_hours: float
    mtbf_hours: float
    risk_model: str = Field(description="The risk forecast behind mtbf_hours (its label).")


class PoolForecast(BaseModel):
    """A pool's preemption-risk forecast from its availability history."""

    pool: str
    available_now: bool
    available_share: float
    mean_run_hours: float
    expected_hours_to_preemption: float | None
    preemption_probability_60min: float | None
    history_hours: float
    risk_model: str = Field(description="The risk forecast these numbers come from (its label).")


class Health(BaseModel):
    """Liveness, and this worker's places (each worker of ``--workers`` has its own)."""

    status: Literal["ok", "saturated"] = Field(
        description="saturated: every place is taken, or a request was turned away for want "
        "of one in the last 10 s; ok otherwise."
    )
    pools: int
    policies: list[str]
    saturated: bool
    in_flight: int = Field(description="Requests being served now.")
    max_in_flight: int = Field(description="Requests served at once (--max-in-flight).")
    max_per_client: int = Field(description="Of those, the most one client may hold.")
    shed: int = Field(description="Requests turned away (503) since start: every place taken.")
    shed_per_client: int = Field(
        description="Requests turned away (503) since start: their client held its share."
    )


class FieldError(BaseModel):
    """One way a request breaks the schema: where and what (never the input)."""

    loc: list[str]
    msg: str
    type: str


class Problem(BaseModel):
    """Why a request was not answered: one line, or (422) the schema errors."""

    detail: str | list[FieldError]

"""The scenario suite: every bundled trace set (:mod:`spotwise.policy.lab.trace_sets`) × job shapes
× changeovers × what the controller sees × how much history it has, with the set's pools
together (``every``) and one at a time (``each``).

Each trace set is cut at two thirds of its length: tuning and training use only jobs that end
before the cut (:data:`TRAIN`); the suite reports jobs that start after it (:data:`HELD_BACK`).
A set too short for a shape (the 32 h GCP set, the 11 h cluster logs) runs it shrunk to fit
twice in its held-back window, work and deadline alike (the slack keeps its share; the
changeover, a restart's time, does not shrink), with a job started every quarter deadline;
the class says so (``scale``). A shrunk shape whose slack is under three changeovers (the
safety net would run it on demand from the start: nothing to decide) is left out, and the JSON
lists it under ``skipped``.

A class's verdict is each policy's share of the greedy → omniscient gap it closes. A class
whose gap is under :data:`MATERIAL_GAP` is shown but left out of the averaged shares: there,
a share is noise and averaging it in hides the classes where a decision matters.

A cold start (history 0) still has a prior, and it comes only from other trace sets: pooled
over the training parts of every other set (leave one set out), what a store that collected
other clouds would say about a pool it has never seen.

The market classes (:mod:`spotwise.policy.lab.markets`) give a set's pools their own regions, spot
prices and on-demand prices from the bundled price files: 2 to 4 churny pools whose prices
differ 3.3× with the cheap ones coming and going, the same with 50 GB checkpoints moved between
regions, the same where a failed request ends what runs, and every pool at its own listing; at
1.2× and 1.5× deadlines, in ``probe`` with a cold start. There each policy is reported by its gap
to the bound in percent of the bound (``cost / omniscient − 1``), beside its share of the
greedy gap, with the requests it made and the moves.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from spotwise import policy
from spotwise.policy.job import REFERENCE, JobSpec
from spotwise.policy.lab.bench import kept_next_to, save_json
from spotwise.policy.lab.markets import MarketSpec
from spotwise.policy.observe import ObserveMode
from spotwise.policy.registry import BEST, reads_future
from spotwise.policy.simulate import (
    FLEET,
    TEARDOWN,
    JobResult,
    Provider,
    Visibility,
    job_starts,
    simulate,
)
from spotwise.policy.traces import TraceSet
from spotwise.pricing.forecast.prior import DEFAULT_PRIOR, PoolPrior

if TYPE_CHECKING:
    from spotwise.policy.lab.trace_sets import SetDescription
    from spotwise.policy.rl.catalog import ModelCatalog

Window = Literal["train", "held_back"]
TRAIN: Window = "train"
HELD_BACK: Window = "held_back"
Pools = Literal["every", "each"]
CUT = 2.0 / 3.0
"""Share of each trace set before the held-back cut."""
SHAPES: tuple[tuple[float, float], ...] = (
    (24.0, 28.0),
    (24.0, 36.0),
    (24.0, 48.0),
    (48.0, 52.0),
    (48.0, 60.0),
)
"""(compute hours, deadline hours) of the job shapes."""
TIGHT = ((24.0, 28.0), (48.0, 52.0))
"""The shapes whose slack is a twelfth of the work or less."""
QUICK_SHAPES = ((24.0, 28.0),)
CHANGEOVERS = (0.05, 0.2)
OBSERVE: tuple[ObserveMode, ...] = ("all", "probe")
HISTORY_HOURS = (0.0, 168.0)
START_EVERY_HOURS = 12.0
QUICK_START_EVERY_HOURS = 24.0
MARKET_SHAPES: tuple[tuple[float, float], ...] = ((24.0, 28.8), (24.0, 36.0))
"""(compute hours, deadline hours) of the market classes: 1.2× and 1.5× deadlines."""
QUICK_MARKET_SHAPES = ((24.0, 28.8),)
POLICIES = ("greedy", "uniform_progress", "risk_aware", "core", "core_flat", "ppo", "omniscient")
BASELINE, BOUND, PROGRESS = "greedy", "omniscient", "uniform_progress"
MATERIAL_GAP = 0.01
"""A class whose greedy → omniscient gap (in cost ratio) is below this has too little to win:
it is shown, but its share is left out of the averages."""
TOLERANCE = 0.005
"""How far above a baseline ``best`` may be in a class and still count as level with it."""
PROBE_SHARE = 0.45
"""The share of the gap ``best`` is to close over the material ``probe`` availability classes."""
CLASS_SHARE = 0.25
"""The share of the gap ``best`` is to close in each material ``probe`` class."""
LEARNED_REACH = 0.01
"""How far the learned policy's mean cost ratio may be above ``best``'s."""
MARKET_MEAN_GAP = 0.10
"""How far above the bound ``best`` may be on average over the market classes (a share of it)."""
MARKET_CLASS_GAP = 0.15
"""How far above the bound ``best`` may be in each market class."""
FORECAST_WORTH = 0.10
"""Share-points of the greedy gap the forecast is to close beyond the flat prior."""
FLAT = "core_flat"
"""The ablation: ``best`` with a flat prior instead of the forecast."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SuiteClass:
    """One scenario: a trace set, a job shape, a changeover, an observation mode, a history,
    and whether the set's pools run together or one at a time."""

    trace_set: str
    compute_hours: float
    deadline_hours: float
    changeover_hours: float
    observe: ObserveMode
    history_hours: float
    pools: Pools = "every"
    scale: float = 1.0
    """1, or the share the shape was shrunk by to fit the set's held-back window."""
    market: str = ""
    """The priced market's name (:class:`MarketSpec`), or "" for the set's availability at the
    reference prices."""
    on_demand_price: float = REFERENCE.on_demand_price
    checkpoint_gb: float = 0.0
    failed_request_ends: bool = False

    @property
    def key(self) -> str:
        """The class's one-line label: set, shape, changeover, observation, history, pools."""
        shape = f"{self.compute_hours:.3g}h/{self.deadline_hours:.3g}h"
        pools = "one pool at a time" if self.pools == "each" else "every pool"
        where = f"market {self.market}" if self.market else self.trace_set
        return (
            f"{where} {shape} d={self.changeover_hours:g}h {self.observe} "
            f"hist={self.history_hours:g}h {pools}"
        )

    @property
    def tight(self) -> bool:
        """Whether the shape is one of :data:`TIGHT` (shrunk or not)."""
        shape = (self.compute_hours / self.scale, self.deadline_hours / self.scale)
        return any(math.isclose(shape[0], c) and math.isclose(shape[1], r) for c, r in TIGHT)

    @property
    def provider(self) -> Provider:
        """The class's request terms: a failed request ends what runs, or keeps it."""
        return TEARDOWN if self.failed_request_ends else FLEET

    def spec(self) -> JobSpec:
        """The job of this class's shape, at the reference prices (a market's pools carry
        their own; its cheapest on-demand price is the job's)."""
        return JobSpec(
            compute_hours=self.compute_hours,
            deadline_hours=self.deadline_hours,
            changeover_hours=self.changeover_hours,
            spot_price=REFERENCE.spot_price,
            on_demand_price=self.on_demand_price,
            checkpoint_gb=self.checkpoint_gb,
        )


def held_back_hours(traces: TraceSet) -> float:
    """Hours of the set after its held-back cut."""
    return (traces.n_ticks - int(traces.n_ticks * CUT)) * traces.gap_seconds / 3600


def shape_scale(traces: TraceSet, deadline_hours: float) -> float:
    """1, or the share that makes a deadline fit twice into the set's held-back window."""
    return min(1.0, held_back_hours(traces) / (2 * deadline_hours))


def suite_markets(sets: dict[str, TraceSet], data: Path, *, quick: bool) -> Markets:
    """The priced markets of the bundled sets (:func:`~spotwise.policy.lab.markets.market_specs`),
    priced from the price files under ``data``."""
    from spotwise.policy.lab.markets import PriceFiles, market_specs, priced

    ends = {name: int(traces.n_ticks * CUT) for name, traces in sets.items()}
    files = PriceFiles(data)
    return {
        spec.name: (spec, priced(spec, sets[spec.trace_set], files, ends[spec.trace_set]))
        for spec in market_specs(sets, ends, files, quick=quick)
    }


def set_prior(name: str, sets: dict[str, TraceSet]) -> PoolPrior:
    """The prior of a job on set ``name``: pooled over the training parts (before the cut) of
    every other set; the default where there is none."""
    up_hours = starts = hours = 0.0
    others = [other for other in sets if other != name]
    for other in others:
        traces = sets[other]
        past = traces.available[:, : int(traces.n_ticks * CUT)].astype(np.int8)
        per_tick = traces.gap_seconds / 3600
        up_hours += float(past.sum()) * per_tick
        starts += float(np.sum(np.diff(past, axis=1, prepend=0) == 1))
        hours += past.size * per_tick
    if not others or hours == 0:
        return DEFAULT_PRIOR
    return PoolPrior(
        mean_run_hours=max(up_hours, 1e-3) / max(starts, 1.0),
        available_share=up_hours / hours,
        source=f"pooled over the training parts of the other trace sets ({', '.join(others)})",
    )


Markets = dict[str, tuple[MarketSpec, TraceSet]]
"""Priced markets by name: the spec and its priced pools."""


def classes(
    sets: dict[str, TraceSet], *, quick: bool, markets: Markets | None = None
) -> list[SuiteClass]:
    """Every class of the suite (``quick``: one tight shape and one changeover). Sets of one
    pool have only ``each`` classes; ``each`` classes are run in ``probe`` with a cold start
    (where claims are made; seeing one pool, ``all`` differs only in what a request costs).
    Each market of ``markets`` adds its classes (:data:`MARKET_SHAPES`)."""
    every = _all_classes(sets, quick=quick) + _market_classes(sets, markets or {}, quick=quick)
    return [c for c in every if _decidable(c)]


def skipped(sets: dict[str, TraceSet], *, quick: bool, markets: Markets | None = None) -> list[str]:
    """The shrunk classes left out: too little slack to decide anything."""
    every = _all_classes(sets, quick=quick) + _market_classes(sets, markets or {}, quick=quick)
    return sorted({c.key for c in every if not _decidable(c)})


def _market_classes(
    sets: dict[str, TraceSet], markets: Markets, *, quick: bool
) -> list[SuiteClass]:
    out = []
    for name, (spec, traces) in markets.items():
        od = float(min(p.on_demand_price or REFERENCE.on_demand_price for p in traces.pools))
        for c, r in QUICK_MARKET_SHAPES if quick else MARKET_SHAPES:
            s = shape_scale(sets[spec.trace_set], r)
            out.append(
                SuiteClass(
                    trace_set=spec.trace_set,
                    compute_hours=c * s,
                    deadline_hours=r * s,
                    changeover_hours=CHANGEOVERS[-1],
                    observe="probe",
                    history_hours=0.0,
                    scale=s,
                    market=name,
                    on_demand_price=od,
                    checkpoint_gb=spec.checkpoint_gb,
                    failed_request_ends=spec.failed_request_ends,
                )
            )
    return out


def _decidable(c: SuiteClass) -> bool:
    return c.deadline_hours - c.compute_hours >= 3 * c.changeover_hours


def _all_classes(sets: dict[str, TraceSet], *, quick: bool) -> list[SuiteClass]:
    shapes = QUICK_SHAPES if quick else SHAPES
    changeovers = CHANGEOVERS[-1:] if quick else CHANGEOVERS
    out = []
    for name, traces in sets.items():
        for (c, r), d in itertools.product(shapes, changeovers):
            s = shape_scale(traces, r)
            base = SuiteClass(
                trace_set=name,
                compute_hours=c * s,
                deadline_hours=r * s,
                changeover_hours=d,
                observe="probe",
                history_hours=0.0,
                scale=s,
            )
            if len(traces.pools) > 1:
                out += [
                    replace(base, observe=o, history_hours=h)
                    for o, h in itertools.product(OBSERVE, HISTORY_HOURS)
                ]
            out.append(replace(base, pools="each"))
    return out


def window_starts(
    traces: TraceSet,
    spec: JobSpec,
    window: Window,
    start_every_hours: float,
) -> list[int]:
    """Job starts of ``window``: after the cut (held back), or every job that ends before it."""
    job = spec.ticks(traces.gap_seconds)
    cut = int(traces.n_ticks * CUT)
    hours = traces.gap_seconds / 3600
    if window == HELD_BACK:
        return job_starts(
            traces.n_ticks, traces.gap_seconds, job.deadline, cut * hours, start_every_hours
        )
    return job_starts(cut, traces.gap_seconds, job.deadline, 0.0, start_every_hours)


@dataclass(frozen=True, slots=True)
class ClassResult:
    """Every policy's jobs in one class; for an ``each`` class, the pool each job ran in."""

    scenario: SuiteClass
    jobs: dict[str, list[JobResult]]
    job_pools: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Task:
    """The classes of one set, shape and changeover (and, for ``each``, one pool of them)."""

    scenarios: tuple[SuiteClass, ...]
    traces: TraceSet
    pool: str | None
    prior: PoolPrior
    policies: tuple[str, ...]
    window: Window
    start_every_hours: float
    models: ModelCatalog | None


def _run_task(task: _Task) -> list[tuple[SuiteClass, str | None, dict[str, list[JobResult]]]]:
    """A policy that reads the future sees the same jobs whatever the observation or history,
    so it runs once for all of the task's classes."""
    traces = task.traces if task.pool is None else task.traces.subset([task.pool])
    first = task.scenarios[0]
    spec = first.spec()
    every = task.start_every_hours
    if first.scale < 1:
        every = min(every * first.scale, first.deadline_hours / 4)
    starts = window_starts(traces, spec, task.window, every)

    def jobs_of(name: str, scenario: SuiteClass) -> list[JobResult]:
        seen = Visibility(
            observe=scenario.observe, history_hours=scenario.history_hours, prior=task.prior
        )
        provider = scenario.provider
        return [
            simulate(policy.load(name, task.models), traces, spec, s, None, seen, provider)
            for s in starts
        ]

    ahead = {n: jobs_of(n, task.scenarios[0]) for n in task.policies if reads_future(n)}
    return [
        (
            scenario,
            task.pool,
            {n: ahead[n] if n in ahead else jobs_of(n, scenario) for n in task.policies},
        )
        for scenario in task.scenarios
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyStats:
    """One policy's jobs in one class: mean and p90 cost ratio, misses, and the share of the
    greedy → omniscient gap it closes (None where there is no gap)."""

    mean_cost_ratio: float
    p90_cost_ratio: float
    miss_rate: float
    misses: int
    n_jobs: int
    gap_share: float | None = None
    gap_to_bound: float | None = None
    """Mean cost over the bound's, less 1 (0.1: 10 % above the omniscient bound)."""
    requests_per_hour: float = 0.0
    failed_requests_per_hour: float = 0.0
    moves_per_job: float = 0.0
    egress_share: float = 0.0
    """Of the cost: checkpoints moved between regions."""
    on_demand_asks: float = 0.0
    """The most any pool was asked per changeover of time on demand, over the jobs."""

    def to_dict(self) -> dict[str, float | int | None]:
        """The stats as the suite's JSON has them under a class's ``policies``."""
        return {
            "mean_cost_ratio": self.mean_cost_ratio,
            "p90_cost_ratio": self.p90_cost_ratio,
            "miss_rate": self.miss_rate,
            "misses": self.misses,
            "n_jobs": self.n_jobs,
            "gap_share": self.gap_share,
            "gap_to_bound": self.gap_to_bound,
            "requests_per_hour": self.requests_per_hour,
            "failed_requests_per_hour": self.failed_requests_per_hour,
            "moves_per_job": self.moves_per_job,
            "egress_share": self.egress_share,
            "on_demand_asks_per_changeover": self.on_demand_asks,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassRow:
    """One class of the summary: its scenario, the greedy → omniscient gap, each policy's stats
    and, for an ``each`` class, each policy's mean cost ratio per pool."""

    scenario: SuiteClass
    gap: float | None
    policies: dict[str, PolicyStats]
    per_pool: dict[str, dict[str, float]] | None = None

    @property
    def material(self) -> bool:
        """Whether the gap is :data:`MATERIAL_GAP` or more (its shares count in the averages)."""
        return self.gap is not None and self.gap >= MATERIAL_GAP

    def to_dict(self) -> dict[str, Any]:
        """The class as the suite's JSON lists it under ``classes``."""
        doc: dict[str, Any] = {
            "class": self.scenario.key,
            **asdict(self.scenario),
            "tight": self.scenario.tight,
            "gap": self.gap,
            "material": self.material,
            "policies": {name: stats.to_dict() for name, stats in self.policies.items()},
        }
        if self.per_pool is not None:
            doc["per_pool"] = self.per_pool
        return doc


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyOverall:
    """One policy over every class: its mean cost ratio, its gap shares (over the material
    classes, their ``probe`` ones, and those with a cold start), its worst class and pool."""

    mean_cost_ratio: float | None
    gap_share_material: float | None
    gap_share_probe: float | None
    gap_share_probe_cold: float | None
    min_gap_share_probe: float | None
    material_classes: int
    material_probe_classes: int
    worst_excess_over_greedy: float | None
    worst_excess_over_uniform_progress: float | None
    worst_pool_cost_ratio: float | None
    misses: int
    n_jobs: int
    market_classes: int = 0
    """Material market classes (a greedy → bound gap of :data:`MATERIAL_GAP` or more): those
    the market figures average over (in the others everything is at the bound)."""
    market_gap_to_bound: float | None = None
    """Mean over the material market classes of the gap to the bound (a share of the bound)."""
    worst_market_gap_to_bound: float | None = None
    market_gap_share: float | None = None
    requests_per_hour: float | None = None
    on_demand_asks: float | None = None

    def to_dict(self) -> dict[str, float | int | None]:
        """The policy's line under ``overall`` in the suite's JSON."""
        return {
            "market_classes": self.market_classes,
            "market_gap_to_bound": self.market_gap_to_bound,
            "worst_market_gap_to_bound": self.worst_market_gap_to_bound,
            "market_gap_share": self.market_gap_share,
            "requests_per_hour": self.requests_per_hour,
            "on_demand_asks_per_changeover": self.on_demand_asks,
            "mean_cost_ratio": self.mean_cost_ratio,
            "gap_share_material": self.gap_share_material,
            "gap_share_probe": self.gap_share_probe,
            "gap_share_probe_cold": self.gap_share_probe_cold,
            "min_gap_share_probe": self.min_gap_share_probe,
            "material_classes": self.material_classes,
            "material_probe_classes": self.material_probe_classes,
            "worst_excess_over_greedy": self.worst_excess_over_greedy,
            "worst_excess_over_uniform_progress": self.worst_excess_over_uniform_progress,
            "worst_pool_cost_ratio": self.worst_pool_cost_ratio,
            "misses": self.misses,
            "n_jobs": self.n_jobs,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """The targets on the suite for one policy (:func:`verdict`): the measures, and whether
    each target holds."""

    policy: str
    worst_excess_over_greedy: float | None
    worst_excess_over_uniform_progress: float | None
    probe_gap_share: float | None
    min_probe_gap_share: float | None
    worst_single_pool_tight_excess: float | None
    worst_pool_cost_ratio: float | None
    learned_minus_best: float | None
    missed_deadlines: int
    market_gap_to_bound: float | None = None
    worst_market_gap_to_bound: float | None = None
    forecast_worth: float | None = None
    """Share-points of the greedy gap closed over the material classes by ``best`` beyond the
    same with a flat prior (None: the ablation did not run)."""
    on_demand_asks: float | None = None

    @property
    def markets_met(self) -> bool:
        """Within :data:`MARKET_MEAN_GAP` of the bound on average over the market classes and
        :data:`MARKET_CLASS_GAP` in each."""
        return _at_most(self.market_gap_to_bound, MARKET_MEAN_GAP) and _at_most(
            self.worst_market_gap_to_bound, MARKET_CLASS_GAP
        )

    @property
    def forecast_matters(self) -> bool:
        """The forecast closes at least :data:`FORECAST_WORTH` more of the gap than a flat
        prior."""
        return self.forecast_worth is not None and self.forecast_worth >= FORECAST_WORTH

    @property
    def requests_kept(self) -> bool:
        """While on demand, no pool asked more than once a changeover."""
        return _at_most(self.on_demand_asks, 1.0)

    @property
    def within_rivals_everywhere(self) -> bool:
        """Within :data:`TOLERANCE` of greedy and of uniform progress in every class."""
        progress = self.worst_excess_over_uniform_progress
        return _at_most(self.worst_excess_over_greedy, TOLERANCE) and (
            progress is None or progress <= TOLERANCE
        )

    @property
    def no_missed_deadline(self) -> bool:
        """No job of the policy missed its deadline."""
        return self.missed_deadlines == 0

    @property
    def probe_share_met(self) -> bool:
        """At least :data:`PROBE_SHARE` of the gap closed over the material ``probe`` classes."""
        return self.probe_gap_share is not None and self.probe_gap_share >= PROBE_SHARE

    @property
    def every_probe_class_met(self) -> bool:
        """At least :data:`CLASS_SHARE` of the gap closed in each material ``probe`` class."""
        return self.min_probe_gap_share is not None and self.min_probe_gap_share >= CLASS_SHARE

    @property
    def single_pool_tight_met(self) -> bool:
        """In single-pool tight classes, within :data:`TOLERANCE` of the best rival."""
        return _at_most(self.worst_single_pool_tight_excess, TOLERANCE)

    @property
    def no_pool_above_limit(self) -> bool:
        """No pool of a single-pool class above a cost ratio of 1 + :data:`TOLERANCE`."""
        return _at_most(self.worst_pool_cost_ratio, 1 + TOLERANCE)

    @property
    def learned_within_reach(self) -> bool:
        """The learned policy within :data:`LEARNED_REACH` of the policy on the average."""
        return _at_most(self.learned_minus_best, LEARNED_REACH)

    def to_dict(self) -> dict[str, str | float | int | bool | None]:
        """The verdict as the suite's JSON has it: the targets by name, then the measures."""
        return {
            "policy": self.policy,
            "within_greedy_and_uniform_progress_plus_0.005_everywhere": (
                self.within_rivals_everywhere
            ),
            "no_missed_deadline": self.no_missed_deadline,
            "probe_gap_share_at_least_0.45": self.probe_share_met,
            "every_material_probe_class_at_least_0.25": self.every_probe_class_met,
            "single_pool_tight_within_0.005_of_the_best_rival": self.single_pool_tight_met,
            "no_pool_above_1.005": self.no_pool_above_limit,
            "learned_within_0.01_of_best": self.learned_within_reach,
            "markets_within_0.10_of_the_bound_and_0.15_in_each": self.markets_met,
            "forecast_closes_0.10_more_than_a_flat_prior": self.forecast_matters,
            "on_demand_at_most_one_ask_per_pool_per_changeover": self.requests_kept,
            "market_gap_to_bound": self.market_gap_to_bound,
            "worst_market_gap_to_bound": self.worst_market_gap_to_bound,
            "forecast_worth": self.forecast_worth,
            "on_demand_asks_per_changeover": self.on_demand_asks,
            "worst_excess_over_greedy": self.worst_excess_over_greedy,
            "worst_excess_over_uniform_progress": self.worst_excess_over_uniform_progress,
            "probe_gap_share": self.probe_gap_share,
            "min_probe_gap_share": self.min_probe_gap_share,
            "worst_single_pool_tight_excess": self.worst_single_pool_tight_excess,
            "worst_pool_cost_ratio": self.worst_pool_cost_ratio,
            "learned_minus_best": self.learned_minus_best,
            "missed_deadlines": self.missed_deadlines,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class SuiteSummary:
    """The suite's result: the sets it ran on, the classes left out, each class's row, each
    policy over every class, and (once judged) the verdict."""

    window: Window
    trace_sets: tuple[SetDescription, ...]
    skipped: tuple[str, ...]
    classes: tuple[ClassRow, ...]
    overall: dict[str, PolicyOverall]
    verdict: Verdict | None = None
    material_gap: float = MATERIAL_GAP

    def to_dict(self) -> dict[str, Any]:
        """The suite's JSON (``bench suite --json``, the file kept next to the store)."""
        doc: dict[str, Any] = {
            "window": self.window,
            "material_gap": self.material_gap,
            "trace_sets": [s.to_dict() for s in self.trace_sets],
            "skipped": list(self.skipped),
            "classes": [row.to_dict() for row in self.classes],
            "overall": {name: line.to_dict() for name, line in self.overall.items()},
        }
        if self.verdict is not None:
            doc["verdict"] = self.verdict.to_dict()
        return doc


@dataclass(frozen=True, slots=True)
class SuiteRun:
    """The results of every class, and the sets they ran on."""

    window: Window
    classes: list[ClassResult]
    trace_sets: tuple[SetDescription, ...]
    skipped: list[str]

    def summary(self) -> SuiteSummary:
        """Per class: each policy's mean and p90 cost ratio, misses and gap share (and per pool
        for ``each`` classes); then per policy the shares over the material classes."""
        rows = [_row(result) for result in self.classes]
        names = list(self.classes[0].jobs) if self.classes else []
        return SuiteSummary(
            window=self.window,
            trace_sets=self.trace_sets,
            skipped=tuple(self.skipped),
            classes=tuple(rows),
            overall={name: _overall(rows, name) for name in names},
        )


def _row(result: ClassResult) -> ClassRow:
    stats = {name: _stats(jobs) for name, jobs in result.jobs.items()}
    base = stats[BASELINE].mean_cost_ratio if BASELINE in stats else None
    bound = stats[BOUND].mean_cost_ratio if BOUND in stats else None
    gap = None if base is None or bound is None else round(base - bound, 6)
    return ClassRow(
        scenario=result.scenario,
        gap=gap,
        policies={
            name: replace(
                s,
                gap_share=_gap_share(s.mean_cost_ratio, base, bound),
                gap_to_bound=None if not bound else round(s.mean_cost_ratio / bound - 1, 6),
            )
            for name, s in stats.items()
        },
        per_pool=_per_pool(result) if result.job_pools else None,
    )


def _per_pool(result: ClassResult) -> dict[str, dict[str, float]]:
    """Each policy's mean cost ratio per pool of an ``each`` class."""
    return {
        pool: {
            name: round(float(np.mean(_pool_ratios(result, jobs, pool))), 6)
            for name, jobs in result.jobs.items()
        }
        for pool in sorted(set(result.job_pools))
    }


def _pool_ratios(result: ClassResult, jobs: list[JobResult], pool: str) -> list[float]:
    """The cost ratios of the jobs that ran in ``pool``."""
    return [j.cost_ratio for j, p in zip(jobs, result.job_pools, strict=True) if p == pool]


def _stats(jobs: Sequence[JobResult]) -> PolicyStats:
    ratios = np.array([j.cost_ratio for j in jobs])
    misses = sum(not j.done for j in jobs)
    hours = max(sum(j.hours for j in jobs), 1e-9)
    cost = max(sum(j.cost for j in jobs), 1e-9)
    return PolicyStats(
        mean_cost_ratio=round(float(ratios.mean()), 6),
        p90_cost_ratio=round(float(np.percentile(ratios, 90)), 6),
        miss_rate=round(misses / len(jobs), 6),
        misses=misses,
        n_jobs=len(jobs),
        requests_per_hour=round(sum(j.requests for j in jobs) / hours, 4),
        failed_requests_per_hour=round(sum(j.failed_requests for j in jobs) / hours, 4),
        moves_per_job=round(sum(j.moves for j in jobs) / len(jobs), 4),
        egress_share=round(sum(j.egress_usd for j in jobs) / cost, 6),
        on_demand_asks=round(max(j.on_demand_asks for j in jobs), 4),
    )


def _gap_share(value: float, base: float | None, bound: float | None) -> float | None:
    """Share of the greedy → bound gap closed (None where there is no gap at all)."""
    if base is None or bound is None or base - bound <= 1e-9:
        return None
    return round((base - value) / (base - bound), 4)


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(float(np.mean(known)), 4) if known else None


def _worst_excess(rows: Sequence[ClassRow], name: str, over: str) -> float | None:
    excess = [
        r.policies[name].mean_cost_ratio - r.policies[over].mean_cost_ratio
        for r in rows
        if over in r.policies
    ]
    return round(max(excess), 6) if excess else None


def _overall(all_rows: Sequence[ClassRow], name: str) -> PolicyOverall:
    markets = [r for r in all_rows if r.scenario.market and r.material]
    rows = [r for r in all_rows if not r.scenario.market]
    gaps = [r.policies[name].gap_to_bound for r in markets]
    known = [g for g in gaps if g is not None]
    material = [r for r in rows if r.material]
    probe = [r for r in material if r.scenario.observe == "probe"]
    cold = [r for r in probe if r.scenario.history_hours == 0]
    probe_shares = _shares(probe, name)
    pool_ratios = [p[name] for r in rows if r.per_pool for p in r.per_pool.values()]
    return PolicyOverall(
        mean_cost_ratio=_mean([r.policies[name].mean_cost_ratio for r in rows]),
        gap_share_material=_mean(_shares(material, name)),
        gap_share_probe=_mean(probe_shares),
        gap_share_probe_cold=_mean(_shares(cold, name)),
        min_gap_share_probe=_lowest(probe_shares),
        material_classes=len(material),
        material_probe_classes=len(probe),
        worst_excess_over_greedy=_worst_excess(all_rows, name, BASELINE),
        worst_excess_over_uniform_progress=_worst_excess(all_rows, name, PROGRESS),
        worst_pool_cost_ratio=round(max(pool_ratios), 6) if pool_ratios else None,
        misses=sum(r.policies[name].misses for r in all_rows),
        n_jobs=sum(r.policies[name].n_jobs for r in all_rows),
        market_classes=len(markets),
        market_gap_to_bound=_mean(known),
        worst_market_gap_to_bound=round(max(known), 4) if known else None,
        market_gap_share=_mean(_shares(markets, name)),
        requests_per_hour=_mean([r.policies[name].requests_per_hour for r in all_rows]),
        on_demand_asks=max((r.policies[name].on_demand_asks for r in all_rows), default=None),
    )


def _shares(rows: Sequence[ClassRow], name: str) -> list[float | None]:
    """The gap share of ``name`` in each of ``rows``."""
    return [r.policies[name].gap_share for r in rows]


def _lowest(values: list[float | None]) -> float | None:
    """The smallest known one of ``values`` (None when there are none)."""
    known = [v for v in values if v is not None]
    return min(known) if known else None


def _task_list(
    sets: dict[str, TraceSet],
    scenarios: list[SuiteClass],
    policies: tuple[str, ...],
    window: Window,
    every: float,
    models: ModelCatalog | None,
    markets: Markets,
) -> list[_Task]:
    priors = {name: set_prior(name, sets) for name in sets}
    groups: dict[tuple[Any, ...], list[SuiteClass]] = {}
    for c in scenarios:
        key = (c.trace_set, c.market, c.compute_hours, c.deadline_hours, c.changeover_hours)
        groups.setdefault((*key, c.pools), []).append(c)
    tasks = []
    for group in groups.values():
        first = group[0]
        traces = markets[first.market][1] if first.market else sets[first.trace_set]
        pools: list[str | None] = list(traces.names) if group[0].pools == "each" else [None]
        for pool in pools:
            tasks.append(
                _Task(
                    tuple(group),
                    traces,
                    pool,
                    priors[group[0].trace_set],
                    policies,
                    window,
                    every,
                    models,
                )
            )
    return tasks


def run_suite(
    sets: dict[str, TraceSet],
    *,
    policies: Sequence[str] = POLICIES,
    quick: bool = False,
    window: Window = HELD_BACK,
    start_every_hours: float | None = None,
    workers: int = 1,
    on_class: Callable[[ClassResult], None] | None = None,
    models: ModelCatalog | None = None,
    described: Sequence[SetDescription] = (),
    markets: Markets | None = None,
) -> SuiteRun:
    """Every class of the suite on ``sets`` and ``markets`` (``quick``: fewer classes and jobs);
    ``described``: what the JSON says of each set (:meth:`SuiteSet.describe`)."""
    for name in policies:
        policy.load(name, models)  # fail early on an unknown name
    markets = markets or {}
    every = start_every_hours or (QUICK_START_EVERY_HOURS if quick else START_EVERY_HOURS)
    scenarios = classes(sets, quick=quick, markets=markets)
    tasks = _task_list(sets, scenarios, tuple(policies), window, every, models, markets)
    parts: dict[SuiteClass, list[tuple[str | None, dict[str, list[JobResult]]]]] = {}
    pending = {c: (len(sets[c.trace_set].pools) if c.pools == "each" else 1) for c in scenarios}
    results: dict[SuiteClass, ClassResult] = {}
    for task_results in _map(tasks, workers):
        for scenario, pool, jobs in task_results:
            parts.setdefault(scenario, []).append((pool, jobs))
            if len(parts[scenario]) == pending[scenario]:
                results[scenario] = _merge(scenario, parts.pop(scenario))
                if on_class:
                    on_class(results[scenario])
    return SuiteRun(
        window,
        [results[c] for c in scenarios if c in results],
        tuple(described),
        skipped(sets, quick=quick, markets=markets),
    )


def _merge(
    scenario: SuiteClass, parts: list[tuple[str | None, dict[str, list[JobResult]]]]
) -> ClassResult:
    """One class from its pools' parts (one part for ``every``)."""
    if scenario.pools == "every":
        return ClassResult(scenario, parts[0][1])
    jobs: dict[str, list[JobResult]] = {}
    job_pools: list[str] = []
    for pool, part in parts:
        assert pool is not None
        for name, results in part.items():
            jobs.setdefault(name, []).extend(results)
        job_pools += [pool] * len(next(iter(part.values())))
    return ClassResult(scenario, jobs, tuple(job_pools))


def _map(tasks: list[_Task], workers: int) -> Iterator[list[Any]]:
    if workers <= 1:
        yield from map(_run_task, tasks)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(_run_task, tasks)


def verdict(summary: SuiteSummary, best: str = BEST, learned: str = "ppo") -> Verdict:
    """The targets on the suite (held-back windows; material classes = gap >= 0.01): ``best``
    within 0.005 of greedy and of uniform progress in every class; no missed deadline; at least
    40 % of the gap closed over the material ``probe`` classes and 25 % in each; in single-pool
    tight classes within 0.005 of the best of greedy, uniform progress and the learned policy;
    no pool above a cost ratio of 1.005 in a single-pool class; the learned policy within 0.01
    of ``best`` on the suite average."""
    line = summary.overall.get(best)
    return Verdict(
        policy=best,
        worst_excess_over_greedy=line.worst_excess_over_greedy if line else None,
        worst_excess_over_uniform_progress=(
            line.worst_excess_over_uniform_progress if line else None
        ),
        probe_gap_share=line.gap_share_probe if line else None,
        min_probe_gap_share=line.min_gap_share_probe if line else None,
        worst_single_pool_tight_excess=_worst_tight_excess(summary.classes, best, learned),
        worst_pool_cost_ratio=line.worst_pool_cost_ratio if line else None,
        learned_minus_best=_learned_gap(summary, best, learned),
        missed_deadlines=line.misses if line else 0,
        market_gap_to_bound=line.market_gap_to_bound if line else None,
        worst_market_gap_to_bound=line.worst_market_gap_to_bound if line else None,
        forecast_worth=_forecast_worth(summary, best),
        on_demand_asks=line.on_demand_asks if line else None,
    )


def _forecast_worth(summary: SuiteSummary, best: str) -> float | None:
    """``best``'s share of the greedy gap over every material class (markets too) less the
    flat-prior ablation's (None unless both ran)."""
    rows = [r for r in summary.classes if r.material]
    if not rows or FLAT not in rows[0].policies or best not in rows[0].policies:
        return None
    mine, flat = _mean(_shares(rows, best)), _mean(_shares(rows, FLAT))
    if mine is None or flat is None:
        return None
    return round(mine - flat, 4)


def _at_most(value: float | None, limit: float) -> bool:
    """Whether ``value`` is known and at most ``limit``."""
    return value is not None and value <= limit


def _learned_gap(summary: SuiteSummary, best: str, learned: str) -> float | None:
    """The learned policy's mean cost ratio minus ``best``'s (None unless both ran)."""
    overall = summary.overall
    if learned not in overall or best not in overall:
        return None
    mine, theirs = overall[learned].mean_cost_ratio, overall[best].mean_cost_ratio
    if mine is None or theirs is None:
        return None
    return round(mine - theirs, 6)


def _worst_tight_excess(rows: Sequence[ClassRow], best: str, learned: str) -> float | None:
    """In single-pool tight classes, the most ``best`` costs above the best of greedy, uniform
    progress and the learned policy."""
    rivals = [n for n in (BASELINE, PROGRESS, learned) if rows and n in rows[0].policies]
    excess = [
        r.policies[best].mean_cost_ratio - min(r.policies[n].mean_cost_ratio for n in rivals)
        for r in rows
        if r.scenario.pools == "each" and r.scenario.tight and best in r.policies
    ]
    return round(max(excess), 6) if excess else None


def save_suite(summary: SuiteSummary, store: Path) -> Path:
    """Keep the suite JSON next to ``store`` (``market.bench-suite.json``)."""
    return save_json(summary.to_dict(), kept_next_to(store, "bench-suite"))


def plot_suite(summary: SuiteSummary, target: Path) -> None:
    """Two panels: per material availability class, the share of the greedy → omniscient gap
    each policy closes (the targets drawn); per market class, each policy's gap to the bound in
    percent of the bound (the targets drawn)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in summary.classes if r.material and not r.scenario.market]
    markets = [r for r in summary.classes if r.scenario.market and r.material]
    others = sum(not r.material for r in summary.classes if not r.scenario.market)
    names = [n for n in summary.classes[0].policies if n != BOUND]
    shared = [n for n in names if n != BASELINE]
    colors = {name: f"C{i}" for i, name in enumerate(names)}  # one colour a policy, both panels
    panels = [p for p in (rows, markets) if p]
    fig, axes = plt.subplots(
        len(panels),
        1,
        figsize=(min(max(10.0, 0.3 * max(len(p) for p in panels) + 3), 40.0), 6.5 * len(panels)),
        squeeze=False,
    )
    if rows:
        ax = axes[0][0]
        _bars(ax, rows, shared, colors,
              lambda st: None if st.gap_share is None else max(st.gap_share, -1))  # fmt: skip
        ax.axhline(1.0, color="grey", linestyle=":", linewidth=1)
        ax.axhline(PROBE_SHARE, color="tab:red", linestyle="--", linewidth=1,
                   label=f"target {PROBE_SHARE:g} (probe mean)")  # fmt: skip
        ax.axhline(CLASS_SHARE, color="tab:orange", linestyle=":", linewidth=1,
                   label=f"target {CLASS_SHARE:g} (each)")  # fmt: skip
        ax.set_ylim(-1.0, 1.1)
        ax.set_ylabel("share of the gap closed")
        ax.set_title(
            f"Availability classes, {summary.window} window: {len(rows)} with a gap >= "
            f"{summary.material_gap} ({others} more without); 1 = omniscient, 0 = greedy",
            fontsize=10,
        )
        ax.legend(fontsize=7, loc="lower left", ncol=4, framealpha=0.9)
    if markets:
        ax = axes[-1][0]
        _bars(ax, markets, names, colors, lambda st: st.gap_to_bound)
        ax.axhline(MARKET_MEAN_GAP, color="tab:red", linestyle="--", linewidth=1,
                   label=f"target {MARKET_MEAN_GAP:.0%} (mean)")  # fmt: skip
        ax.axhline(MARKET_CLASS_GAP, color="tab:orange", linestyle=":", linewidth=1,
                   label=f"target {MARKET_CLASS_GAP:.0%} (each)")  # fmt: skip
        ax.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
        ax.set_ylabel("cost above the omniscient bound")
        ax.set_title(
            f"Market classes (pools of their own prices and regions), {summary.window} window: "
            f"the {len(markets)} with a gap >= {summary.material_gap}\nthe gap to the bound, "
            "lower is better",
            fontsize=10,
        )
        top = max((r.policies[n].gap_to_bound or 0.0) for r in markets for n in names)
        ax.set_ylim(0.0, max(top, MARKET_CLASS_GAP) * 1.3)
        ax.legend(fontsize=7, loc="upper left", ncol=4, framealpha=0.9)
    fig.tight_layout()
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, dpi=110)
    plt.close(fig)


def _bars(
    ax: Any,
    rows: Sequence[ClassRow],
    names: Sequence[str],
    colors: dict[str, str],
    value: Callable[[PolicyStats], float | None],
) -> None:
    """One group of bars per class, one bar per policy (in its colour), the classes' keys under
    them."""
    width = 0.8 / max(1, len(names))
    x = np.arange(len(rows))
    for i, name in enumerate(names):
        heights = [value(r.policies[name]) for r in rows]
        ax.bar(
            x + (i - (len(names) - 1) / 2) * width,
            [math.nan if h is None else h for h in heights],
            width,
            label=name,
            color=colors[name],
        )
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_xticks(
        x,
        [r.scenario.key for r in rows],
        rotation=80,
        ha="right",
        rotation_mode="anchor",
        fontsize=5.5,
    )

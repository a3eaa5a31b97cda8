"""The scenario suite: every bundled availability trace set with two or more pools × job shapes
× changeovers × what the controller sees × how much history it has.

Each trace set is cut at two thirds of its length: tuning and training use only jobs that end
before the cut (:data:`TRAIN`); the suite reports jobs that start after it (:data:`HELD_BACK`).
A class's verdict is each policy's share of the greedy → omniscient gap it closes, so a number
says how much of what was there to win was won, whatever the market.

A cold start (history 0) still has a prior: pooled over the set's pools before the cut, what a
store that collected them earlier would say about a pool it has not seen.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from spotwise import policy
from spotwise.policy.bench import kept_next_to, save_json
from spotwise.policy.job import REFERENCE, JobSpec
from spotwise.policy.observe import ObserveMode
from spotwise.policy.registry import BEST, reads_future
from spotwise.policy.simulate import JobResult, Visibility, job_starts, simulate
from spotwise.policy.traces import TraceSet, load_traces
from spotwise.pricing.forecast.prior import PoolPrior, pooled_prior

if TYPE_CHECKING:
    from spotwise.policy.rl.catalog import ModelCatalog

Window = Literal["train", "held_back"]
TRAIN: Window = "train"
HELD_BACK: Window = "held_back"
CUT = 2.0 / 3.0
"""Share of each trace set before the held-back cut."""
SHAPES: tuple[tuple[float, float], ...] = ((24.0, 36.0), (24.0, 48.0), (48.0, 60.0))
"""(compute hours, deadline hours) of the job shapes."""
CHANGEOVERS = (0.05, 0.2)
OBSERVE: tuple[ObserveMode, ...] = ("all", "probe")
HISTORY_HOURS = (0.0, 168.0)
POLICIES = ("greedy", "uniform_progress", "risk_aware", "ppo", "omniscient")
BASELINE, BOUND = "greedy", "omniscient"
MIN_GAP = 0.005
"""A class whose greedy → omniscient gap is below this has nothing to win: no share."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SuiteClass:
    """One scenario: a trace set, a job shape, a changeover, an observation mode, a history."""

    trace_set: str
    compute_hours: float
    deadline_hours: float
    changeover_hours: float
    observe: ObserveMode
    history_hours: float

    @property
    def key(self) -> str:
        return (
            f"{self.trace_set} {self.compute_hours:g}h/{self.deadline_hours:g}h "
            f"d={self.changeover_hours:g}h {self.observe} hist={self.history_hours:g}h"
        )

    def spec(self) -> JobSpec:
        return JobSpec(
            compute_hours=self.compute_hours,
            deadline_hours=self.deadline_hours,
            changeover_hours=self.changeover_hours,
            spot_price=REFERENCE.spot_price,
            on_demand_price=REFERENCE.on_demand_price,
        )


def bundled_trace_sets(root: Path) -> dict[str, TraceSet]:
    """Every folder of 1-node availability traces under ``root`` with at least two pools."""
    sets = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        if len(list(folder.glob("*.json"))) >= 2:
            sets[folder.name] = load_traces(folder)
    return sets


def set_prior(traces: TraceSet, name: str) -> PoolPrior:
    """The set's prior: pooled over every pool before the cut."""
    cut = int(traces.n_ticks * CUT)
    source = f"pooled over the {len(traces.pools)} pools of {name} before the held-back cut"
    return pooled_prior(traces.available[:, :cut], traces.gap_seconds / 3600, source)


def classes(names: Sequence[str], *, quick: bool) -> list[SuiteClass]:
    """Every class of the suite (``quick``: one shape and one changeover)."""
    shapes = SHAPES[:1] if quick else SHAPES
    changeovers = CHANGEOVERS[-1:] if quick else CHANGEOVERS
    return [
        SuiteClass(
            trace_set=name,
            compute_hours=c,
            deadline_hours=r,
            changeover_hours=d,
            observe=o,
            history_hours=h,
        )
        for name, (c, r), d, o, h in itertools.product(
            names, shapes, changeovers, OBSERVE, HISTORY_HOURS
        )
    ]


def window_starts(
    traces: TraceSet, spec: JobSpec, window: Window, start_every_hours: float
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
    """Every policy's jobs in one class."""

    scenario: SuiteClass
    jobs: dict[str, list[JobResult]]


def _run_group(
    scenarios: Sequence[SuiteClass],
    traces: TraceSet,
    prior: PoolPrior,
    policies: Sequence[str],
    window: Window,
    start_every_hours: float,
    models: ModelCatalog | None,
) -> list[ClassResult]:
    """The classes of one trace set, job shape and changeover. A policy that reads the future
    sees the same jobs whatever the observation or history, so it runs once for all of them."""
    spec = scenarios[0].spec()
    starts = window_starts(traces, spec, window, start_every_hours)

    def jobs_of(name: str, scenario: SuiteClass) -> list[JobResult]:
        seen = Visibility(
            observe=scenario.observe, history_hours=scenario.history_hours, prior=prior
        )
        return [simulate(policy.load(name, models), traces, spec, s, None, seen) for s in starts]

    ahead = {name: jobs_of(name, scenarios[0]) for name in policies if reads_future(name)}
    return [
        ClassResult(
            scenario,
            {name: ahead[name] if name in ahead else jobs_of(name, scenario) for name in policies},
        )
        for scenario in scenarios
    ]


def _run_group_args(args: tuple[Any, ...]) -> list[ClassResult]:
    return _run_group(*args)


@dataclass(frozen=True, slots=True)
class SuiteRun:
    """The results of every class."""

    window: Window
    classes: list[ClassResult]

    def summary(self) -> dict[str, Any]:
        """Per class: each policy's mean and p90 cost ratio, miss rate and gap share; then
        the mean gap share per policy over all classes and over the ``probe`` ones."""
        rows = []
        for result in self.classes:
            stats = {name: _stats(jobs) for name, jobs in result.jobs.items()}
            base = stats.get(BASELINE, {}).get("mean_cost_ratio")
            bound = stats.get(BOUND, {}).get("mean_cost_ratio")
            for s in stats.values():
                s["gap_share"] = _gap_share(s["mean_cost_ratio"], base, bound)
            rows.append(
                {"class": result.scenario.key, **asdict(result.scenario), "policies": stats}
            )
        names = list(self.classes[0].jobs) if self.classes else []
        overall = {}
        for name in names:
            overall[name] = {
                "mean_cost_ratio": _mean([r["policies"][name]["mean_cost_ratio"] for r in rows]),
                "gap_share_all": _mean([r["policies"][name]["gap_share"] for r in rows]),
                "gap_share_probe": _mean(
                    [r["policies"][name]["gap_share"] for r in rows if r["observe"] == "probe"]
                ),
                "worst_excess_over_greedy": _max_excess(rows, name),
                "misses": int(sum(r["policies"][name]["misses"] for r in rows)),
                "n_jobs": int(sum(r["policies"][name]["n_jobs"] for r in rows)),
            }
        return {"window": self.window, "classes": rows, "overall": overall}


def _stats(jobs: Sequence[JobResult]) -> dict[str, Any]:
    ratios = np.array([j.cost_ratio for j in jobs])
    misses = sum(not j.done for j in jobs)
    return {
        "mean_cost_ratio": round(float(ratios.mean()), 6),
        "p90_cost_ratio": round(float(np.percentile(ratios, 90)), 6),
        "miss_rate": round(misses / len(jobs), 6),
        "misses": misses,
        "n_jobs": len(jobs),
    }


def _gap_share(value: float, base: float | None, bound: float | None) -> float | None:
    if base is None or bound is None or base - bound < MIN_GAP:
        return None
    return round((base - value) / (base - bound), 4)


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(float(np.mean(known)), 4) if known else None


def _max_excess(rows: list[dict[str, Any]], name: str) -> float | None:
    if not rows or BASELINE not in rows[0]["policies"]:
        return None
    return round(
        max(
            r["policies"][name]["mean_cost_ratio"] - r["policies"][BASELINE]["mean_cost_ratio"]
            for r in rows
        ),
        6,
    )


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
) -> SuiteRun:
    """Every class of the suite on ``sets`` (``quick``: fewer classes and jobs)."""
    for name in policies:
        policy.load(name, models)  # fail early on an unknown name
    every = start_every_hours or (24.0 if quick else 12.0)
    priors = {name: set_prior(traces, name) for name, traces in sets.items()}
    groups: dict[tuple[str, float, float, float], list[SuiteClass]] = {}
    for c in classes(list(sets), quick=quick):
        key = (c.trace_set, c.compute_hours, c.deadline_hours, c.changeover_hours)
        groups.setdefault(key, []).append(c)
    tasks = [
        (
            group,
            sets[group[0].trace_set],
            priors[group[0].trace_set],
            policies,
            window,
            every,
            models,
        )
        for group in groups.values()
    ]
    results = []
    for group_results in _map(tasks, workers):
        for result in group_results:
            results.append(result)
            if on_class:
                on_class(result)
    return SuiteRun(window, results)


def _map(tasks: list[tuple[Any, ...]], workers: int) -> Iterator[list[ClassResult]]:
    if workers <= 1:
        yield from map(_run_group_args, tasks)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(_run_group_args, tasks)


def verdict(summary: dict[str, Any], best: str = BEST) -> dict[str, Any]:
    """The issue's targets on the suite: ``best`` within greedy + 0.005 in every class, at
    least 40 % of the gap closed over the ``probe`` classes, and no missed deadline."""
    overall = summary["overall"].get(best, {})
    excess = overall.get("worst_excess_over_greedy")
    share = overall.get("gap_share_probe")
    misses = sum(s["misses"] for r in summary["classes"] for s in r["policies"].values())
    return {
        "policy": best,
        "within_greedy_plus_0.005_everywhere": excess is not None and excess <= 0.005,
        "probe_gap_share_at_least_0.4": share is not None and share >= 0.4,
        "no_missed_deadline": misses == 0,
        "worst_excess_over_greedy": excess,
        "probe_gap_share": share,
        "missed_deadlines": misses,
    }


def save_suite(summary: dict[str, Any], store: Path) -> Path:
    """Keep the suite JSON next to ``store`` (``market.bench-suite.json``)."""
    return save_json(summary, kept_next_to(store, "bench-suite"))


def plot_suite(summary: dict[str, Any], target: Path) -> None:
    """Share of the greedy → omniscient gap each policy closes, per class."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary["classes"]
    names = [n for n in rows[0]["policies"] if n not in (BASELINE, BOUND)]
    fig, ax = plt.subplots(figsize=(max(8.0, 0.35 * len(rows) + 3), 5.5))
    width = 0.8 / max(1, len(names))
    x = np.arange(len(rows))
    for i, name in enumerate(names):
        shares = [r["policies"][name]["gap_share"] for r in rows]
        ax.bar(
            x + (i - (len(names) - 1) / 2) * width,
            [math.nan if s is None else s for s in shares],
            width,
            label=name,
        )
    for i, row in enumerate(rows):
        if row["policies"][BASELINE]["gap_share"] is None:
            ax.text(i, 0.05, "no gap", rotation=90, ha="center", va="bottom", fontsize=6)
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.axhline(1.0, color="grey", linestyle=":", linewidth=1)
    ax.axhline(0.4, color="tab:red", linestyle="--", linewidth=1, label="target 0.4 (probe)")
    ax.set_xticks(x, [r["class"] for r in rows], rotation=75, ha="right", fontsize=6)
    ax.set_ylim(-1.0, 1.1)
    ax.set_ylabel("share of the greedy → omniscient gap closed")
    ax.set_title(f"Scenario suite ({summary['window']} window): 1 = omniscient, 0 = greedy")
    ax.legend(fontsize=8, loc="lower left", ncol=len(names) + 1, framealpha=0.9)
    fig.tight_layout()
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, dpi=120)
    plt.close(fig)

"""The policy benchmark: many jobs on real traces, each policy's cost ratio per pool.

``single`` runs every pool's trace on its own (KEY = pool name, plus ``mean`` of the per-pool
means); ``multi`` lets the policy pick any pool at every tick (KEY = ``all``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from spotwise import policy
from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.policy.job import JobSpec
from spotwise.policy.simulate import (
    EVERYTHING,
    CheckpointMode,
    JobResult,
    Visibility,
    job_starts,
    simulate,
)
from spotwise.policy.traces import TraceSet

if TYPE_CHECKING:
    from spotwise.policy.rl.catalog import ModelCatalog

ZonesMode = Literal["single", "multi"]


@dataclass(frozen=True, slots=True)
class BenchRun:
    """Per key and policy, the results of every job, and the seconds each policy took."""

    zones: ZonesMode
    results: dict[str, dict[str, list[JobResult]]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The bench JSON: mean and p90 cost ratio, deadline miss rate and job count."""
        out: dict[str, dict[str, dict[str, float | int]]] = {}
        for key, per_policy in self.results.items():
            out[key] = {name: _stats(jobs) for name, jobs in per_policy.items()}
        if self.zones == "single" and out:
            names = next(iter(out.values())).keys()
            out["mean"] = {
                name: {
                    "mean_cost_ratio": float(
                        np.mean([out[k][name]["mean_cost_ratio"] for k in self.results])
                    ),
                    "p90_cost_ratio": float(
                        np.mean([out[k][name]["p90_cost_ratio"] for k in self.results])
                    ),
                    "deadline_miss_rate": float(
                        np.mean([out[k][name]["deadline_miss_rate"] for k in self.results])
                    ),
                    "n_jobs": int(sum(out[k][name]["n_jobs"] for k in self.results)),
                }
                for name in names
            }
        return {"zones": self.zones, "results": out}


def _stats(jobs: Sequence[JobResult]) -> dict[str, float | int]:
    return cost_stats([j.cost_ratio for j in jobs], [j.done for j in jobs])


def cost_stats(ratios: Sequence[float], done: Sequence[bool]) -> dict[str, float | int]:
    """A bench row: mean and p90 cost ratio, deadline miss rate and job count."""
    values = np.asarray(ratios, dtype=float)
    return {
        "mean_cost_ratio": round(float(values.mean()), 6),
        "p90_cost_ratio": round(float(np.percentile(values, 90)), 6),
        "deadline_miss_rate": round(float(np.mean([not d for d in done])), 6),
        "n_jobs": len(values),
    }


def run_bench(
    traces: TraceSet,
    spec: JobSpec,
    *,
    zones: ZonesMode,
    policies: Sequence[str],
    test_from_hours: float,
    start_every_hours: float,
    checkpoint: CheckpointMode | None = None,
    on_job: Callable[[str, str], None] | None = None,
    models: ModelCatalog | None = None,
    visibility: Visibility = EVERYTHING,
) -> BenchRun:
    """Simulate every policy on every job start (and pool, for ``single``); learned models
    come from ``models`` (default: the shipped ones)."""
    for name in policies:
        policy.load(name, models)  # fail early on an unknown name
    job = spec.ticks(traces.gap_seconds)
    starts = job_starts(
        traces.n_ticks, traces.gap_seconds, job.deadline, test_from_hours, start_every_hours
    )
    if not starts:
        raise ValueError(
            f"no job fits: the traces hold {traces.n_ticks * traces.gap_seconds / 3600:.1f} h, "
            f"jobs start at {test_from_hours} h and need {spec.deadline_hours} h"
        )
    groups = (
        {name: traces.subset([name]) for name in traces.names}
        if zones == "single"
        else {"all": traces}
    )
    run = BenchRun(zones=zones)
    for key, group in groups.items():
        run.results[key] = {}
        for name in policies:
            began = time.perf_counter()
            jobs = []
            for start in starts:
                jobs.append(
                    simulate(policy.load(name, models), group, spec, start, checkpoint, visibility)
                )
                if on_job:
                    on_job(key, name)
            run.results[key][name] = jobs
            run.seconds[name] = run.seconds.get(name, 0.0) + time.perf_counter() - began
    return run


def count_jobs(
    traces: TraceSet,
    spec: JobSpec,
    *,
    zones: ZonesMode,
    n_policies: int,
    test_from_hours: float,
    start_every_hours: float,
) -> int:
    """How many simulations :func:`run_bench` will make (for a progress bar)."""
    job = spec.ticks(traces.gap_seconds)
    starts = job_starts(
        traces.n_ticks, traces.gap_seconds, job.deadline, test_from_hours, start_every_hours
    )
    groups = len(traces.names) if zones == "single" else 1
    return len(starts) * groups * n_policies


def plot_bench(summary: dict[str, Any], target: Path) -> None:
    """Cost ratio per policy per pool, the omniscient bound drawn as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = summary["results"]
    keys = list(results)
    policies = [p for p in next(iter(results.values())) if p != "omniscient"]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(keys) + 2), 4.5))
    width = 0.8 / max(1, len(policies))
    x = np.arange(len(keys))
    for i, name in enumerate(policies):
        ax.bar(
            x + (i - (len(policies) - 1) / 2) * width,
            [results[k][name]["mean_cost_ratio"] for k in keys],
            width,
            label=name,
        )
    first = next(iter(results.values()))
    if "omniscient" in first:
        bound = [results[k]["omniscient"]["mean_cost_ratio"] for k in keys]
        label = "omniscient bound"
        if first["omniscient"].get("lower_bound"):
            label = "omniscient (lower bound, regroups free)"
        ax.plot(x, bound, "k_", markersize=30, markeredgewidth=2.5, label=label)
    ax.axhline(1.0, color="grey", linestyle=":", linewidth=1)
    ax.set_xticks(x, keys, rotation=30, ha="right")
    ax.set_ylabel("mean cost ratio (1 = on-demand)")
    ax.set_ylim(0.0, 1.25)
    if "nodes" in summary:
        ax.set_title(f"Policy cost ratio, {summary['nodes']}-node jobs")
    else:
        ax.set_title(f"Policy cost ratio, {summary['zones']}-zone")
    ax.legend(fontsize=8, loc="upper right", ncol=2, framealpha=0.9)
    fig.tight_layout()
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, dpi=120)
    plt.close(fig)


def save_json(doc: dict[str, Any], target: Path) -> Path:
    """Write ``doc`` to ``target`` whole or not at all (a partial file, then a rename)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.write_text(json.dumps(doc))
    partial.replace(target)
    return target


def kept_next_to(store: Path, what: str) -> Path:
    """Where a bench result of ``store`` is kept: beside it, named after it
    (``market.bench-policy-multi.json``), so two stores in one folder keep their own."""
    return store.with_name(f"{store.stem}.{what}.json")


def save_summary(summary: dict[str, Any], store: Path, clock: Clock = SYSTEM_CLOCK) -> Path:
    """Keep the bench JSON next to ``store`` for the dashboard, with when it was made."""
    made = {"saved_at": datetime.fromtimestamp(clock.time(), UTC).isoformat(timespec="seconds")}
    return save_json({**summary, **made}, kept_next_to(store, f"bench-policy-{summary['zones']}"))


def last_summary(store: Path, zones: ZonesMode) -> dict[str, Any] | None:
    """The last bench JSON of ``store`` for ``zones``, if any."""
    target = kept_next_to(store, f"bench-policy-{zones}")
    if not target.is_file():
        return None
    doc: dict[str, Any] = json.loads(target.read_text())
    return doc

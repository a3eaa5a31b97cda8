"""The policy benchmark: many jobs on real traces, each policy's cost ratio per pool.

``single`` runs every pool's trace on its own (KEY = pool name, plus ``mean`` of the per-pool
means); ``multi`` lets the policy pick any pool at every tick (KEY = ``all``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from spotwise import policy
from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.policy.errors import PolicyError
from spotwise.policy.job import JobSpec
from spotwise.policy.simulate import (
    EVERYTHING,
    FLEET,
    CheckpointMode,
    JobResult,
    Provider,
    Visibility,
    job_starts,
    simulate,
)
from spotwise.policy.traces import TraceSet

if TYPE_CHECKING:
    from spotwise.policy.rl.catalog import ModelCatalog

ZonesMode = Literal["single", "multi"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchRow:
    """One policy's jobs in one key of the bench: mean and p90 cost ratio, deadline miss rate
    and job count; the N-node lab adds its regroups and spot share, and marks its bound."""

    mean_cost_ratio: float
    p90_cost_ratio: float
    deadline_miss_rate: float
    n_jobs: int
    lower_bound: bool = False
    """A bound below every schedule (regroups free), not one schedule's cost."""
    mean_regroups: float | None = None
    spot_share: float | None = None

    def to_dict(self) -> dict[str, float | int | bool]:
        """The row as the bench JSON has it (the N-node fields only where they are set)."""
        doc: dict[str, float | int | bool] = {
            "mean_cost_ratio": self.mean_cost_ratio,
            "p90_cost_ratio": self.p90_cost_ratio,
            "deadline_miss_rate": self.deadline_miss_rate,
            "n_jobs": self.n_jobs,
        }
        if self.lower_bound:
            doc["lower_bound"] = True
        if self.mean_regroups is not None:
            doc["mean_regroups"] = self.mean_regroups
        if self.spot_share is not None:
            doc["spot_share"] = self.spot_share
        return doc

    @classmethod
    def from_dict(cls, doc: object, where: str) -> BenchRow:
        """A row read back from the bench JSON; a PolicyError naming ``where`` if it is none."""
        if not isinstance(doc, dict):
            raise PolicyError(f"{where}: not a bench row: {_short(doc)}")
        return cls(
            mean_cost_ratio=_number(doc, "mean_cost_ratio", where),
            p90_cost_ratio=_number(doc, "p90_cost_ratio", where),
            deadline_miss_rate=_number(doc, "deadline_miss_rate", where),
            n_jobs=int(_number(doc, "n_jobs", where)),
            lower_bound=doc.get("lower_bound") is True,
            mean_regroups=_number(doc, "mean_regroups", where) if "mean_regroups" in doc else None,
            spot_share=_number(doc, "spot_share", where) if "spot_share" in doc else None,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchSummary:
    """The bench's result: per key (a pool, ``mean`` or ``all``) and policy, a :class:`BenchRow`;
    ``nodes`` for the N-node lab, ``saved_at`` once kept next to a store."""

    zones: ZonesMode
    results: dict[str, dict[str, BenchRow]]
    nodes: int | None = None
    saved_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The bench JSON (``bench policy --json``, the file kept next to the store)."""
        doc: dict[str, Any] = {"zones": self.zones}
        if self.nodes is not None:
            doc["nodes"] = self.nodes
        doc["results"] = {
            key: {name: row.to_dict() for name, row in per_policy.items()}
            for key, per_policy in self.results.items()
        }
        if self.saved_at is not None:
            doc["saved_at"] = self.saved_at
        return doc

    @classmethod
    def from_dict(cls, doc: object, where: str) -> BenchSummary:
        """A summary read back from the bench JSON; a PolicyError naming ``where`` and what is
        wrong if it is none (another file, an older shape, a hand edit)."""
        if not isinstance(doc, dict):
            raise PolicyError(f"{where}: not a bench summary: {_short(doc)}")
        zones = doc.get("zones")
        if zones not in ("single", "multi"):
            raise PolicyError(f"{where}: zones must be single or multi, got {_short(zones)}")
        results = doc.get("results")
        if not isinstance(results, dict) or not all(isinstance(v, dict) for v in results.values()):
            raise PolicyError(f"{where}: results must map keys to policies, got {_short(results)}")
        nodes, saved_at = doc.get("nodes"), doc.get("saved_at")
        if nodes is not None and (not isinstance(nodes, int) or isinstance(nodes, bool)):
            raise PolicyError(f"{where}: nodes must be a whole number, got {_short(nodes)}")
        if saved_at is not None and not isinstance(saved_at, str):
            raise PolicyError(f"{where}: saved_at must be a time, got {_short(saved_at)}")
        return cls(
            zones="single" if zones == "single" else "multi",
            results={
                key: {
                    name: BenchRow.from_dict(row, f"{where}: results.{key}.{name}")
                    for name, row in per_policy.items()
                }
                for key, per_policy in results.items()
            },
            nodes=nodes,
            saved_at=saved_at,
        )


def _number(doc: dict[str, object], key: str, where: str) -> float:
    """``doc[key]`` as a number, or a PolicyError naming ``where`` and ``key``."""
    value = doc.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PolicyError(f"{where}: {key} must be a number, got {_short(value)}")
    return value


def _short(value: object) -> str:
    """``value`` for an error message, cut to a line."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True, slots=True)
class BenchRun:
    """Per key and policy, the results of every job, and the seconds each policy took."""

    zones: ZonesMode
    results: dict[str, dict[str, list[JobResult]]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> BenchSummary:
        """Mean and p90 cost ratio, deadline miss rate and job count per key and policy (and,
        for ``single``, the ``mean`` of the pools)."""
        out: dict[str, dict[str, BenchRow]] = {}
        for key, per_policy in self.results.items():
            out[key] = {name: _stats(jobs) for name, jobs in per_policy.items()}
        if self.zones == "single" and out:
            names = next(iter(out.values())).keys()
            out["mean"] = {
                name: BenchRow(
                    mean_cost_ratio=float(
                        np.mean([out[k][name].mean_cost_ratio for k in self.results])
                    ),
                    p90_cost_ratio=float(
                        np.mean([out[k][name].p90_cost_ratio for k in self.results])
                    ),
                    deadline_miss_rate=float(
                        np.mean([out[k][name].deadline_miss_rate for k in self.results])
                    ),
                    n_jobs=int(sum(out[k][name].n_jobs for k in self.results)),
                )
                for name in names
            }
        return BenchSummary(zones=self.zones, results=out)


def _stats(jobs: Sequence[JobResult]) -> BenchRow:
    return cost_stats([j.cost_ratio for j in jobs], [j.done for j in jobs])


def cost_stats(ratios: Sequence[float], done: Sequence[bool]) -> BenchRow:
    """A bench row: mean and p90 cost ratio, deadline miss rate and job count."""
    values = np.asarray(ratios, dtype=float)
    return BenchRow(
        mean_cost_ratio=round(float(values.mean()), 6),
        p90_cost_ratio=round(float(np.percentile(values, 90)), 6),
        deadline_miss_rate=round(float(np.mean([not d for d in done])), 6),
        n_jobs=len(values),
    )


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
    provider: Provider = FLEET,
) -> BenchRun:
    """Simulate every policy on every job start (and pool, for ``single``) on ``provider``'s
    request terms; learned models come from ``models`` (default: the shipped ones)."""
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
                chosen = policy.load(name, models)
                jobs.append(simulate(chosen, group, spec, start, checkpoint, visibility, provider))
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


def plot_bench(summary: BenchSummary, target: Path) -> None:
    """Cost ratio per policy per pool, the omniscient bound drawn as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = summary.results
    keys = list(results)
    policies = [p for p in next(iter(results.values())) if p != "omniscient"]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(keys) + 2), 4.5))
    width = 0.8 / max(1, len(policies))
    x = np.arange(len(keys))
    for i, name in enumerate(policies):
        ax.bar(
            x + (i - (len(policies) - 1) / 2) * width,
            [results[k][name].mean_cost_ratio for k in keys],
            width,
            label=name,
        )
    first = next(iter(results.values()))
    if "omniscient" in first:
        bound = [results[k]["omniscient"].mean_cost_ratio for k in keys]
        label = "omniscient bound"
        if first["omniscient"].lower_bound:
            label = "omniscient (lower bound, regroups free)"
        ax.plot(x, bound, "k_", markersize=30, markeredgewidth=2.5, label=label)
    ax.axhline(1.0, color="grey", linestyle=":", linewidth=1)
    ax.set_xticks(x, keys, rotation=30, ha="right")
    ax.set_ylabel("mean cost ratio (1 = on-demand)")
    ax.set_ylim(0.0, 1.25)
    if summary.nodes is not None:
        ax.set_title(f"Policy cost ratio, {summary.nodes}-node jobs")
    else:
        ax.set_title(f"Policy cost ratio, {summary.zones}-zone")
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


def save_summary(summary: BenchSummary, store: Path, clock: Clock = SYSTEM_CLOCK) -> Path:
    """Keep the bench JSON next to ``store`` for the dashboard, with when it was made."""
    made = datetime.fromtimestamp(clock.time(), UTC).isoformat(timespec="seconds")
    kept = replace(summary, saved_at=made)
    return save_json(kept.to_dict(), kept_next_to(store, f"bench-policy-{summary.zones}"))


def last_summary(store: Path, zones: ZonesMode) -> BenchSummary | None:
    """The last bench JSON of ``store`` for ``zones``, if any.

    Raises:
        PolicyError: when the file there is not a bench summary (it says which and why).
    """
    target = kept_next_to(store, f"bench-policy-{zones}")
    if not target.is_file():
        return None
    try:
        doc = json.loads(target.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PolicyError(
            f"{target}: not a bench summary ({exc}); run bench policy again"
        ) from None
    return BenchSummary.from_dict(doc, str(target))

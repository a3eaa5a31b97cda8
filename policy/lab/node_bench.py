"""The N-node benchmark: many N-node jobs on capacity traces, each policy's cost ratio.

The JSON has the 1-node bench's shape (``{"zones": "multi", "results": {"all": {POLICY:
{...}}}}``) plus ``nodes`` and, for the bound, ``"lower_bound": true``: with regroups free it
bounds every schedule from below but is not one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from spotwise.policy.errors import PolicyError
from spotwise.policy.job import JobSpec
from spotwise.policy.lab.bench import BenchRow, BenchSummary, cost_stats
from spotwise.policy.nodes.bound import node_lower_bound
from spotwise.policy.nodes.capacity import CapacityTraces
from spotwise.policy.nodes.policies import load_node_policy
from spotwise.policy.nodes.simulate import NodeResult, NodeRun, node_context
from spotwise.policy.simulate import job_starts

BOUND = "omniscient"
DEFAULT_POLICIES = ("on_demand", "spot_fallback", "best", BOUND)


def simulate_nodes(
    name: str, traces: CapacityTraces, spec: JobSpec, nodes: int, start: int
) -> NodeResult:
    """One N-node job under the policy ``name``."""
    policy = load_node_policy(name)
    policy.reset(node_context(traces, spec, nodes, start))
    run = NodeRun(traces, spec, nodes, start)
    while not run.over:
        run.step(policy.act(run.observe()))
    return run.result()


def node_starts(
    traces: CapacityTraces, spec: JobSpec, test_from_hours: float, start_every_hours: float
) -> list[int]:
    """Job starts, as in the 1-node bench.

    Raises:
        PolicyError: when no job fits.
    """
    job = spec.ticks(traces.gap_seconds)
    starts = job_starts(
        traces.n_ticks, traces.gap_seconds, job.deadline, test_from_hours, start_every_hours
    )
    if not starts:
        hours = traces.n_ticks * traces.gap_seconds / 3600
        raise PolicyError(
            f"no job fits: the traces hold {hours:.1f} h, jobs start at {test_from_hours} h "
            f"and need {spec.deadline_hours} h; start earlier or shorten the deadline"
        )
    return starts


def run_node_bench(
    traces: CapacityTraces,
    spec: JobSpec,
    *,
    nodes: int,
    policies: Sequence[str] = DEFAULT_POLICIES,
    test_from_hours: float = 0.0,
    start_every_hours: float = 12.0,
    on_job: Callable[[str], None] | None = None,
) -> BenchSummary:
    """Every policy on every job start: the bench summary of ``nodes``-node jobs.

    Raises:
        PolicyError: an unknown policy, more nodes than the traces count, or no job fits.
    """
    if not 1 <= nodes <= traces.cluster_size:
        raise PolicyError(
            f"--nodes must be 1..{traces.cluster_size} (the most nodes these traces count), "
            f"got {nodes}"
        )
    for name in policies:
        if name != BOUND:
            load_node_policy(name)  # fail early on an unknown name
    starts = node_starts(traces, spec, test_from_hours, start_every_hours)
    tell = on_job or (lambda _name: None)
    results: dict[str, BenchRow] = {}
    for name in policies:
        if name == BOUND:
            results[name] = _bound_summary(traces, spec, nodes, starts, tell)
        else:
            results[name] = _policy_summary(name, traces, spec, nodes, starts, tell)
    return BenchSummary(zones="multi", nodes=nodes, results={"all": results})


def _bound_summary(
    traces: CapacityTraces,
    spec: JobSpec,
    nodes: int,
    starts: Sequence[int],
    on_job: Callable[[str], None],
) -> BenchRow:
    """The lower bound's cost ratios over ``starts`` (it reads the future)."""
    bounds = []
    for s in starts:
        context = node_context(traces, spec, nodes, s, reads_future=True)
        bounds.append(node_lower_bound(context).cost_ratio)
        on_job(BOUND)
    return replace(cost_stats(bounds, [True] * len(bounds)), lower_bound=True)


def _policy_summary(
    name: str,
    traces: CapacityTraces,
    spec: JobSpec,
    nodes: int,
    starts: Sequence[int],
    on_job: Callable[[str], None],
) -> BenchRow:
    """Policy ``name``'s cost ratios, misses, regroups and spot share over ``starts``."""
    jobs = []
    for s in starts:
        jobs.append(simulate_nodes(name, traces, spec, nodes, s))
        on_job(name)
    shares = [j.spot_node_ticks / max(1, j.spot_node_ticks + j.on_demand_node_ticks) for j in jobs]
    return replace(
        cost_stats([j.cost_ratio for j in jobs], [j.done for j in jobs]),
        mean_regroups=round(float(np.mean([j.regroups for j in jobs])), 2),
        spot_share=round(float(np.mean(shares)), 4),
    )

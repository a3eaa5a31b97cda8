"""Baseline policies and the omniscient bound on hand-made and bundled real traces."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest

from spotwise.policy import load
from spotwise.policy.job import REFERENCE as SPEC
from spotwise.policy.policies.base import NONE, ON_DEMAND, SPOT0, Action, spot
from spotwise.policy.simulate import job_starts, simulate
from spotwise.policy.traces import TraceSet, load_traces
from tests.conftest import DATA
from tests.policy.helpers import Scripted, job, traces

BUNDLED = DATA / "traces/cbl/availability/1-node/aws-02-15-2023"
# docs/design.md, "Reference values": an independent implementation of the same semantics,
# --test-from-hours 0.
REFERENCE = {
    "us-east-1a": (0.478, 0.430, 0.373),
    "us-east-1c": (0.756, 0.748, 0.595),
    "us-east-1d": (0.746, 0.708, 0.585),
    "us-east-1f": (0.799, 0.774, 0.646),
    "us-east-2a": (0.924, 0.938, 0.841),
    "us-east-2b": (0.900, 0.894, 0.781),
    "us-west-2a": (0.978, 1.028, 0.925),
    "us-west-2b": (0.977, 1.020, 0.919),
    "us-west-2c": (0.972, 1.013, 0.913),
}


@pytest.fixture(scope="module")
def bundled() -> TraceSet:
    return load_traces(BUNDLED)


def starts(trace_set: TraceSet) -> list[int]:
    return job_starts(
        trace_set.n_ticks, trace_set.gap_seconds, SPEC.ticks(trace_set.gap_seconds).deadline, 0, 12
    )


def mean_ratio(name: str, trace_set: TraceSet) -> float:
    return float(
        np.mean([simulate(load(name), trace_set, SPEC, s).cost_ratio for s in starts(trace_set)])
    )


@pytest.mark.parametrize("zone", sorted(REFERENCE))
def test_greedy_and_uniform_progress_match_the_reference_and_never_miss(
    bundled: TraceSet, zone: str
) -> None:
    pool = bundled.subset([f"{zone}_v100_1"])
    for name, reference, tolerance in (
        ("greedy", REFERENCE[zone][0], 0.003),
        ("uniform_progress", REFERENCE[zone][1], 0.008),
    ):
        results = [simulate(load(name), pool, SPEC, s) for s in starts(pool)]
        assert all(r.done for r in results), name
        assert np.mean([r.cost_ratio for r in results]) == pytest.approx(reference, abs=tolerance)


@pytest.mark.slow
@pytest.mark.parametrize("zone", ["us-east-1a", "us-west-2c"])
def test_omniscient_matches_the_reference_bound(bundled: TraceSet, zone: str) -> None:
    assert mean_ratio("omniscient", bundled.subset([f"{zone}_v100_1"])) == pytest.approx(
        REFERENCE[zone][2], abs=0.0006
    )


@pytest.mark.slow
def test_omniscient_is_at_most_every_other_policy_on_every_job(bundled: TraceSet) -> None:
    groups = [bundled.subset([n]) for n in bundled.names[::3]] + [bundled]
    for group in groups:
        for start in starts(group)[::6]:
            bound = simulate(load("omniscient"), group, SPEC, start)
            assert bound.done
            for name in ("on_demand", "greedy", "uniform_progress"):
                other = simulate(load(name), group, SPEC, start)
                assert bound.cost <= other.cost + 1e-9, (group.names, start, name)


def test_omniscient_plan_cost_is_what_the_simulator_bills(bundled: TraceSet) -> None:
    policy = load("omniscient")
    result = simulate(policy, bundled, SPEC, 444)
    assert result.cost == pytest.approx(policy.plan_cost, rel=1e-12)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "seed", [s if s < 2 else pytest.param(s, marks=pytest.mark.slow) for s in range(6)]
)
def test_omniscient_equals_brute_force_over_every_schedule(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows = ["".join("1" if x else "0" for x in rng.random(8) < 0.6) for _ in range(2)]
    prices = (rng.random((2, 8)) * 2 + 0.2).tolist()
    trace_set = traces(*rows, prices=prices)
    spec = job(3, 7, 1)
    bound = simulate(load("omniscient"), trace_set, spec, 0)
    best = np.inf
    for actions in itertools.product(range(SPOT0 + 2), repeat=7):
        result = simulate(Scripted(list(actions)), trace_set, spec, 0)
        if result.done:
            best = min(best, result.cost)
    assert bound.done and bound.cost == pytest.approx(best)


def test_omniscient_handles_zero_changeover_and_faster_pools() -> None:
    trace_set = traces("110111", "011110", prices=[[1.0] * 6, [1.5] * 6], speeds=[1.0, 2.0])
    spec = job(4, 6, 0)
    bound = simulate(load("omniscient"), trace_set, spec, 0)
    best = min(
        (
            r.cost
            for a in itertools.product(range(4), repeat=6)
            if (r := simulate(Scripted(list(a)), trace_set, spec, 0)).done
        ),
        default=np.inf,
    )
    assert bound.cost == pytest.approx(best)


@pytest.mark.parametrize(
    "seed", [s if s < 1 else pytest.param(s, marks=pytest.mark.slow) for s in range(4)]
)
def test_omniscient_equals_brute_force_with_regions_egress_and_request_charges(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    rows = ["".join("1" if x else "0" for x in rng.random(7) < 0.6) for _ in range(2)]
    prices = (rng.random((2, 7)) * 2 + 0.2).tolist()
    places = [("aws", "us-east-1", 2.5), ("gcp", "europe-west4", 3.5)]
    trace_set = traces(*rows, prices=prices, places=places)
    spec = replace(job(3, 6, 1), checkpoint_gb=20.0, request_usd=0.3)
    bound = simulate(load("omniscient"), trace_set, spec, 0)
    choices = [Action(NONE), Action(ON_DEMAND, region=0), Action(ON_DEMAND, region=1)]
    choices += [Action(spot(0)), Action(spot(1))]
    best = min(
        (
            r.cost
            for a in itertools.product(choices, repeat=6)
            if (r := simulate(Scripted(list(a)), trace_set, spec, 0)).done
        ),
        default=np.inf,
    )
    assert bound.done and bound.cost == pytest.approx(best)

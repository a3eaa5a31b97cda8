"""The Policy contract, for every policy the registry serves (built-ins, ``best`` and the
shipped learned models): registering a policy puts it under these tests.

- It acts only from the present tick and the past (the bound excepted: it reads the future).
- With the shared safety net it never misses a deadline, on one pool and on many, in every
  observation mode and from a cold start.
- Its actions are valid, and the same job gives the same actions.
"""

from __future__ import annotations

import numpy as np
import pytest

from spotwise import policy
from spotwise.policy.job import REFERENCE as SPEC
from spotwise.policy.observe import OBSERVE_MODES
from spotwise.policy.policies.base import (
    NONE,
    ON_DEMAND,
    SPOT0,
    Action,
    JobContext,
    Observation,
    Policy,
)
from spotwise.policy.registry import SPECS, reads_future
from spotwise.policy.simulate import EVERYTHING, Visibility, job_starts, simulate
from spotwise.policy.traces import TraceSet, load_traces
from tests.conftest import DATA

BUNDLED = DATA / "traces/cbl/availability/1-node/aws-02-15-2023"
HEAVY = {"ppo", "omniscient"}  # a network per tick, a dynamic program per job: full suite only


def params(names: list[str]) -> list[object]:
    return [pytest.param(n, marks=pytest.mark.slow) if n in HEAVY else n for n in names]


NAMES = params(policy.names())
CAUSAL = params([n for n in policy.names() if not reads_future(n)])


@pytest.fixture(scope="module")
def bundled() -> TraceSet:
    return load_traces(BUNDLED)


class Recording(Policy):
    """Wraps a policy and records every action it takes."""

    name = "recording"

    def __init__(self, inner: Policy) -> None:
        self.inner = inner
        self.reads_future = inner.reads_future  # type: ignore[misc]
        self.actions: list[Action] = []
        self.pools = 0

    def reset(self, context: JobContext) -> None:
        self.pools = len(context.pools)
        self.inner.reset(context)

    def act(self, obs: Observation) -> Action:
        self.actions.append(self.inner.act(obs))
        return self.actions[-1]


def played(
    name: str, trace_set: TraceSet, start: int, visibility: Visibility = EVERYTHING
) -> Recording:
    recording = Recording(policy.load(name))
    simulate(recording, trace_set, SPEC, start, None, visibility)
    return recording


BLIND = Visibility(observe="probe", history_hours=0.0)


def test_every_registered_policy_is_served_and_its_class_agrees_with_its_entry() -> None:
    assert {"on_demand", "greedy", "uniform_progress", "risk_aware", "omniscient", "ppo"} <= set(
        policy.names()
    )
    for name, spec in SPECS.items():
        built = spec.load()
        assert type(built).name == name and type(built).reads_future == spec.reads_future


@pytest.mark.parametrize("visibility", [EVERYTHING, BLIND], ids=["all", "probe-cold"])
@pytest.mark.parametrize("name", CAUSAL)
def test_a_policy_acts_only_from_the_present_and_the_past(
    bundled: TraceSet, name: str, visibility: Visibility
) -> None:
    start, cut = 2600, 200  # job ticks 0..199 see the same trace in both runs
    changed = bundled.available.copy()
    tail = changed[:, start + cut :]
    changed[:, start + cut :] = np.random.default_rng(1).random(tail.shape) < 0.5
    other = TraceSet(pools=bundled.pools, gap_seconds=bundled.gap_seconds, available=changed)
    first, second = (played(name, t, start, visibility).actions for t in (bundled, other))
    assert len(first) > cut and first[:cut] == second[:cut]
    assert first != second or name == "on_demand"  # the change was there to be seen


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_a_policy_never_misses_a_deadline_on_one_pool_or_many(bundled: TraceSet, name: str) -> None:
    deadline = SPEC.ticks(bundled.gap_seconds).deadline
    starts = job_starts(bundled.n_ticks, bundled.gap_seconds, deadline, 0, 96)
    # the bound reads the future, so what it is shown cannot change it (tested on its own)
    modes = ("all",) if reads_future(name) else OBSERVE_MODES
    for zones in (["us-west-2b_v100_1"], list(bundled.names)):
        for observe in modes:
            seen = Visibility(observe=observe, history_hours=0.0 if observe == "probe" else None)
            for start in starts:
                result = simulate(policy.load(name), bundled.subset(zones), SPEC, start, None, seen)
                assert result.done, (name, zones, observe, start)


@pytest.mark.parametrize("name", NAMES)
def test_a_policy_gives_valid_actions_and_the_same_ones_for_the_same_job(
    bundled: TraceSet, name: str
) -> None:
    for visibility in (EVERYTHING, BLIND):
        runs = [played(name, bundled, 1500, visibility) for _ in range(2)]
        assert runs[0].actions == runs[1].actions
        pools = runs[0].pools
        for action in runs[0].actions:
            assert action.instance in (NONE, ON_DEMAND) or SPOT0 <= action.instance < SPOT0 + pools
            named = action.named_pools()
            assert len(set(named)) == len(named) and all(0 <= z < pools for z in named)
            assert action.checkpoint_ticks is None or action.checkpoint_ticks >= 1
            assert action.bid is None or action.bid > 0

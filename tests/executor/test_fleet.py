"""A fleet: its file, its tiers over the real policy, and five jobs in three tiers (one of
them elastic, on torchrun agents) run to completion on the local launcher over replayed traces
(real subprocesses, a real store)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from spotwise.executor.elastic import NodePlan
from spotwise.executor.errors import ExecutorError
from spotwise.executor.fleet import FleetBudget, NodeGate, TieredClient, load_fleet_spec
from spotwise.policy.client import in_process_for
from spotwise.policy.schemas import DecisionRequest, IdleState, JobTerms, PoolNow
from tests.conftest import CliRun

FAKE_JOB = Path(__file__).with_name("fake_job.py")
# every pool down for the last day: the policy sends a job with little slack to on-demand
STORM = in_process_for(np.zeros((2, 24 * 12), dtype=bool), 300, ("z0", "z1"))
TERMS = JobTerms(
    compute_hours=10, deadline_hours=12, changeover_hours=0.2, spot_price=1.0, on_demand_price=3.0
)


def ask(client: TieredClient, elapsed_hours: float) -> str:
    request = DecisionRequest(
        job=TERMS,
        state=IdleState(elapsed_hours=elapsed_hours, progress_hours=0.0),
        pools={"z0": PoolNow(available=False), "z1": PoolNow(available=False)},
    )
    return client.decide(request).action


def test_tiers_take_on_demand_by_priority_within_the_budget() -> None:
    assert (
        STORM.decide(
            DecisionRequest(
                job=TERMS,
                state=IdleState(elapsed_hours=1.0, progress_hours=0.0),
                pools={"z0": PoolNow(available=False), "z1": PoolNow(available=False)},
            )
        ).action
        == "on-demand"
    )  # what the policy says on its own
    budget = FleetBudget(4.0)  # room for one on-demand instance
    high = TieredClient(STORM, job="h", tier="high", budget=budget)
    normal = TieredClient(STORM, job="n", tier="normal", budget=budget)
    low = TieredClient(STORM, job="l", tier="low", budget=budget)
    assert ask(low, 1.0) == "wait"  # never on-demand
    assert ask(high, 1.0) == "on-demand"
    assert ask(normal, 1.0) == "wait"  # the budget has no room left
    assert budget.spending() == 3.0
    assert ask(normal, 1.7) == "on-demand"  # its slack is down to two changeovers: forced
    budget.release("h")
    budget.release("n")
    assert ask(normal, 1.0) == "on-demand"  # room again


def test_a_job_asked_on_its_on_demand_instance_keeps_its_claim_until_it_leaves_for_spot() -> None:
    budget = FleetBudget(4.0)
    normal = TieredClient(STORM, job="n", tier="normal", budget=budget)
    assert ask(normal, 1.0) == "on-demand" and budget.spending() == 3.0
    budget.claim("other", 1.0)  # the budget is full now
    staying = DecisionRequest(
        job=TERMS,
        state=IdleState(elapsed_hours=1.2, progress_hours=0.2, instance="on-demand"),
        pools={"z0": PoolNow(available=False), "z1": PoolNow(available=False)},
    )
    assert normal.decide(staying).action == "on-demand"
    assert budget.spending() == 4.0  # the running instance's claim stands
    back = in_process_for(np.ones((2, 24 * 12), dtype=bool), 300, ("z0", "z1"))
    returning = TieredClient(back, job="n", tier="normal", budget=budget)
    spot_again = staying.model_copy(
        update={"pools": {"z0": PoolNow(available=True), "z1": PoolNow(available=True)}}
    )
    assert returning.decide(spot_again).action == "spot"
    assert budget.spending() == 2.0  # on-demand released: spot's 1 $/h and the other job's


def test_an_elastic_job_keeps_its_host_and_the_deadlines_floor_and_the_budget_grants_the_rest() -> (
    None
):
    budget = FleetBudget(3.5)
    normal = NodeGate(budget, job="n", tier="normal")
    assert normal.claim(3.0, market="on-demand", needed=True)  # the rendezvous host
    assert not normal.claim(6.0, market="on-demand", needed=False)  # a floor above the deadline's
    assert budget.spending() == 3.0  # refused: its spend as it was
    assert normal.claim(4.0, market="spot", needed=False)  # over the budget, but spot
    assert normal.claim(7.0, market="on-demand", needed=True)  # the deadline asks for it
    high = NodeGate(budget, job="h", tier="high")
    assert high.claim(3.0, market="on-demand", needed=False)  # high gets what it asks
    normal.record(1.0)  # its on-demand nodes ended
    assert budget.spending() == 4.0
    assert not normal.claim(4.0, market="on-demand", needed=False)


def test_a_fleet_file_gives_an_elastic_job_its_nodes_and_floor(tmp_path: Path) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text(
        'name = "f"\nbudget_usd_per_hour = 5\n[[jobs]]\nname = "a"\nnodes = "2:4"\n'
        'compute_hours = 1\ndeadline_hours = 2\ncommand = ["x"]\n[[jobs]]\nname = "b"\n'
        'nodes = "1:3"\non_demand_floor = 2\ncompute_hours = 1\ndeadline_hours = 2\n'
        'command = ["x"]\n[[jobs]]\nname = "c"\nnodes = 3\ncompute_hours = 1\n'
        'deadline_hours = 2\ncommand = ["x"]\n'
    )
    jobs = load_fleet_spec(path).jobs
    assert jobs[0].nodes == NodePlan(min_nodes=2, max_nodes=4, floor=None)
    assert jobs[1].nodes == NodePlan(min_nodes=1, max_nodes=3, floor=2)
    assert jobs[2].nodes == NodePlan(min_nodes=3, max_nodes=3, floor=None)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "name: f\nbudget_usd_per_hour: 5\njobs: [{name: a, priority: urgent, "
            "compute_hours: 1, deadline_hours: 2, command: [x]}]",
            "priority must be one of",
        ),
        (
            "name: f\nbudget_usd_per_hour: 5\njobs: [{name: a, compute_hours: 1, "
            "deadline_hours: 2, command: 'python train.py; rm -rf /'}]",
            "never given to a shell",
        ),
        (
            "name: f\nbudget_usd_per_hour: 5\njobs: [{name: a, compute_hours: 1, "
            "deadline_hours: 2, command: [x]}, {name: a, compute_hours: 1, deadline_hours: 2, "
            "command: [y]}]",
            "names must differ",
        ),
        (
            "name: ../f\nbudget_usd_per_hour: 5\njobs: [{name: a, compute_hours: 1, "
            "deadline_hours: 2, command: [x]}]",
            "name must be 1-64",
        ),
        (
            "name: f\nbudget_usd_per_hour: -1\njobs: [{name: a, compute_hours: 1, "
            "deadline_hours: 2, command: [x]}]",
            "budget_usd_per_hour must be a positive number",
        ),
        (
            "name: f\nbudget_usd_per_hour: 5\njobs: [{name: a, priority: low, nodes: '1:2', "
            "compute_hours: 1, deadline_hours: 2, command: [x]}]",
            "low-priority job runs only on spot",
        ),
        (
            "name: f\nbudget_usd_per_hour: 5\njobs: [{name: a, on_demand_floor: 1, "
            "compute_hours: 1, deadline_hours: 2, command: [x]}]",
            "on_demand_floor needs nodes",
        ),
        (
            "name: f\nbudget_usd_per_hour: 5\njobs: [{name: a, nodes: '3', on_demand_floor: 2, "
            "compute_hours: 1, deadline_hours: 2, command: [x]}]",
            "need MIN <= K <= MAX",
        ),
        (
            "name: f\nbudget_usd_per_hour: 5\njobs: [{name: a, nodes: two, "
            "compute_hours: 1, deadline_hours: 2, command: [x]}]",
            "MIN:MAX or N",
        ),
    ],
)
def test_a_bad_fleet_file_is_refused_saying_where_and_what(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    with pytest.raises(ExecutorError, match=problem) as caught:
        load_fleet_spec(path)
    assert str(path) in str(caught.value)


@pytest.mark.slow
@pytest.mark.xdist_group("torch-distributed")  # torchrun agents, one job at a time
def test_five_jobs_in_three_tiers_one_elastic_run_to_completion_and_status_groups_them(
    tmp_path: Path, cli: CliRun
) -> None:
    def job(name: str, tier: str, deadline: float, **more: object) -> dict[str, object]:
        command = [sys.executable, str(FAKE_JOB), "--work-s", "3", "--state", str(tmp_path / name)]
        return {
            "name": name,
            "priority": tier,
            "compute_hours": 0.3,
            "deadline_hours": deadline,
            "command": command,
            **more,
        }

    spec = {
        "name": "nightly",
        "budget_usd_per_hour": 4.0,  # room for one on-demand node (3.06 $/h) and a spot one
        "jobs": [
            job("eval", "high", 0.6),
            # a floor of two asked, but the deadline (ample) asks for one: the budget has no
            # room for a second on-demand node, so spot takes its place
            job("pretrain", "normal", 8.0, nodes="1:2", on_demand_floor=2),
            job("train-a", "normal", 1.0),
            job("train-b", "normal", 1.0),
            job("backfill", "low", 3.0),
        ],
    }
    path = tmp_path / "fleet.yaml"
    path.write_text(json.dumps(spec))  # JSON is YAML
    run = cli("fleet", "run", str(path), "--json", "--scale", "360")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "pretrain (normal): the budget refuses another on-demand node" in run.stderr
    status = json.loads(cli("fleet", "status", "nightly", "--json").stdout)
    assert status["simulated"] and status["cost_usd"] > 0
    assert [(j["tier"], j["name"], j["status"]) for j in status["jobs"]] == [
        ("high", "eval", "completed"),
        ("normal", "pretrain", "completed"),
        ("normal", "train-a", "completed"),
        ("normal", "train-b", "completed"),
        ("low", "backfill", "completed"),
    ]
    elastic = next(j for j in status["jobs"] if j["name"] == "pretrain")
    nodes = json.loads(cli("jobs", "show", elastic["job_id"], "--json").stdout)["nodes"]
    assert set(nodes["node-0"]) == {"on-demand"}  # the rendezvous host
    others = [use for name, use in nodes.items() if name != "node-0"]
    assert others and all(set(use) == {"spot"} for use in others)
    missing = cli("fleet", "status", "nope")
    assert missing.returncode == 1 and "no fleet 'nope'" in missing.stderr

"""A fleet: its file, its tiers over the real policy, and five jobs in three tiers (one of
them elastic, on torchrun agents) run to completion on the local launcher over replayed traces
(real subprocesses, a real store)."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from spotwise.executor.errors import ExecutorError
from spotwise.executor.fleets.fleet import FleetBudget, NodeGate, TieredClient, load_fleet_spec
from spotwise.executor.supervise.elastic import NodePlan
from spotwise.policy import fleet_rule as rule
from spotwise.policy.service.client import in_process_for
from spotwise.policy.service.schemas import (
    Decision,
    DecisionRequest,
    IdleState,
    JobTerms,
    PoolForecast,
    PoolNow,
    PoolRank,
)
from spotwise.pricing.operational import open_operational
from tests.conftest import CliRun

FAKE_JOB = Path(__file__).parents[1] / "fake_job.py"
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
        # on uniform progress's line (10 h in 12 h): a job behind it stays on demand (rule 5)
        state=IdleState(elapsed_hours=1.2, progress_hours=1.0, instance="on-demand"),
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


class Fixed:
    """A policy that always decides ``action`` (in z0 for spot): the tier rules' input."""

    def __init__(self, action: str) -> None:
        self.action = action

    def decide(self, request: DecisionRequest) -> Decision:
        spot = self.action == "spot"
        return Decision(
            action=self.action,  # type: ignore[arg-type]
            pool="z0" if spot else None,
            market="spot" if spot else ("on-demand" if self.action == "on-demand" else None),
            bid=None,
            checkpoint_interval_minutes=None,
            expected_cost_usd=0.0,
            reason=f"fixed: {self.action}",
            request_pools=["z0"] if spot else [],
        )

    def rank_pools(self, job: Any) -> list[PoolRank]:
        return []

    def forecast(self, pool: str) -> PoolForecast:
        raise NotImplementedError


def fixed_ask(client: TieredClient, elapsed: float, progress: float = 0.0) -> str:
    request = DecisionRequest(
        job=TERMS,
        state=IdleState(elapsed_hours=elapsed, progress_hours=progress),
        pools={"z0": PoolNow(available=True), "z1": PoolNow(available=False)},
    )
    return client.decide(request).action


@pytest.mark.parametrize("tier", ["high", "normal", "low"])
@pytest.mark.parametrize("action", ["spot", "on-demand"])
@pytest.mark.parametrize("others", [0.0, 0.5, 2.5, 3.5])
@pytest.mark.parametrize("elapsed", [0.0, 1.0, 1.6, 1.9, 2.5])
def test_the_executor_grants_what_the_labs_rule_grants(
    tier: rule.Tier,
    action: rule.Market,
    others: float,
    elapsed: float,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """TieredClient's answer is the lab's rule's (policy/fleet_rule.py) on the same inputs, and it
    asks that very function: a rule of its own would fail here."""
    budget = FleetBudget(4.0)
    budget.record("other", others)
    said: list[str] = []
    client = TieredClient(Fixed(action), job="j", tier=tier, budget=budget, say=said.append)
    price = TERMS.spot_price if action == "spot" else TERMS.on_demand_price
    slack = (TERMS.deadline_hours - elapsed) - TERMS.compute_hours
    expected = rule.fleet_grant(
        tier,
        action,
        price,
        others=others,
        budget=4.0,
        deadline=rule.deadline_asks(slack, TERMS.changeover_hours, 0.0),
    )
    if tier == "low" and action == "on-demand":  # the lab's low job asks for spot instead
        fits = rule.spot_within({"z0": TERMS.spot_price}, others=others, budget=4.0)
        expected = rule.Grant(bool(fits))
        action, price = "spot", TERMS.spot_price
    calls: list[tuple[Any, ...]] = []
    real = rule.fleet_grant

    def spy(*args: Any, **kwargs: Any) -> rule.Grant:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(rule, "fleet_grant", spy)  # the module the lab's simulator calls too
    try:
        got = fixed_ask(client, elapsed)
    except ExecutorError:  # a low job that can no longer meet its deadline, waiting: ended
        assert tier == "low" and not expected.granted and slack < 0
        return
    assert got == (action if expected.granted else "wait")
    assert calls or (tier == "low" and not expected.granted)
    assert budget.spending() == pytest.approx(others + (price if expected.granted else 0.0))


def test_the_lab_and_the_executor_call_one_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    from spotwise.policy.lab.fleet import simulate_fleet
    from tests.policy.lab.test_fleet import MARKET, MARKET_TRACES, START, fleet

    callers: list[str] = []
    real = rule.fleet_grant

    def spy(*args: Any, **kwargs: Any) -> rule.Grant:
        callers.append(sys._getframe(1).f_code.co_qualname)
        return real(*args, **kwargs)

    monkeypatch.setattr(rule, "fleet_grant", spy)
    simulate_fleet(MARKET_TRACES, fleet(), START, budget_usd_per_hour=3.0, market=MARKET)
    TieredClient(Fixed("spot"), job="j", tier="normal", budget=FleetBudget(4.0)).decide(
        DecisionRequest(
            job=TERMS,
            state=IdleState(elapsed_hours=0.0, progress_hours=0.0),
            pools={"z0": PoolNow(available=True)},
        )
    )
    NodeGate(FleetBudget(4.0), job="e", tier="normal").claim(1.0, market="spot", needed=False)
    assert {"_FleetSim._granted", "FleetBudget.ask"} <= set(callers)
    assert callers.count("FleetBudget.ask") == 2  # the tiered client's and the elastic gate's


def test_the_budget_keeps_spot_too_and_says_who_holds_it_and_when_it_goes_over() -> None:
    budget = FleetBudget(1.0)
    said: list[str] = []
    train = TieredClient(Fixed("spot"), job="train", tier="normal", budget=budget, say=said.append)
    other = TieredClient(Fixed("spot"), job="other", tier="normal", budget=budget, say=said.append)
    backfill = TieredClient(
        Fixed("spot"), job="backfill", tier="low", budget=budget, say=said.append
    )
    assert fixed_ask(train, 0.0) == "spot"
    assert fixed_ask(other, 0.0) == "wait" and fixed_ask(other, 0.1) == "wait"
    assert fixed_ask(backfill, 0.0) == "wait"
    assert budget.spending() == 1.0  # one spot instance: the budget holds no second one
    assert said == [
        "fleet: job other (normal) waits: the budget 1.00 $/h is used by train (1.00 $/h) and "
        "spot costs 1.00 $/h; it goes over the budget once its deadline asks",
        "fleet: job backfill (low) waits: the budget 1.00 $/h is used by train (1.00 $/h) and "
        "spot costs 1.00 $/h",
    ]  # once each, not at every ask
    budget.release("train")
    assert fixed_ask(backfill, 0.2) == "wait"  # the room goes to the waiting normal job first
    assert (
        said[-1]
        == "fleet: job backfill (low) waits: the budget's room goes first to other (a higher tier)"
    )
    assert fixed_ask(other, 0.2) == "spot"
    # its slack down to two changeovers by its next ask: the deadline has it over the budget
    assert fixed_ask(train, 1.7) == "spot" and budget.spending() == 2.0
    assert said[-1].startswith(
        "fleet: job train (normal) goes over the budget for spot: the fleet spends 2.00 $/h of "
        "1.00 $/h (its deadline"
    )
    high = TieredClient(Fixed("on-demand"), job="eval", tier="high", budget=budget, say=said.append)
    assert fixed_ask(high, 0.0) == "on-demand"
    assert said[-1].startswith("fleet: job eval (high) goes over the budget for on-demand")


def test_a_low_job_asks_for_spot_instead_of_on_demand_and_ends_when_its_deadline_is_lost() -> None:
    budget = FleetBudget(4.0)
    said: list[str] = []
    low = TieredClient(Fixed("on-demand"), job="tiny", tier="low", budget=budget, say=said.append)
    decision = low.decide(
        DecisionRequest(
            job=TERMS,
            state=IdleState(elapsed_hours=0.0, progress_hours=0.0),
            pools={"z0": PoolNow(available=True), "z1": PoolNow(available=True)},
        )
    )
    assert (decision.action, decision.request_pools) == ("spot", ["z0", "z1"])
    assert said == [
        "fleet: job tiny (low) asks for spot in z0, z1: its policy would put it on on-demand, "
        "which a low job never uses"
    ]
    dead = {"z0": PoolNow(available=False), "z1": PoolNow(available=False)}
    waiting = DecisionRequest(
        job=TERMS, state=IdleState(elapsed_hours=1.0, progress_hours=0.0), pools=dead
    )
    assert low.decide(waiting).action == "wait"
    assert said[-1].startswith("fleet: job tiny (low) waits for spot: its policy would put it")
    late = waiting.model_copy(update={"state": IdleState(elapsed_hours=2.5, progress_hours=0.0)})
    with pytest.raises(
        ExecutorError, match=r"ended unfinished \(low priority\): spot did not come back"
    ):
        low.decide(late)
    assert budget.spending() == 0.0


def test_an_elastic_job_keeps_its_host_and_the_deadlines_floor_and_the_budget_grants_the_rest() -> (
    None
):
    budget = FleetBudget(3.5)
    normal = NodeGate(budget, job="n", tier="normal")
    assert normal.claim(3.0, market="on-demand", needed=True)  # the rendezvous host
    assert not normal.claim(6.0, market="on-demand", needed=False)  # a floor above the deadline's
    assert budget.spending() == 3.0  # refused: its spend as it was
    assert not normal.claim(4.0, market="spot", needed=False)  # the budget keeps spot too
    assert normal.claim(3.5, market="spot", needed=False)  # a spot node with room for it
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
            "budget_usd_per_hour must be a finite positive number",
        ),
        (
            "name: f\nbudget_usd_per_hour: 5\njobs: [{name: a, compute_hours: 1, "
            "deadline_hours: .inf, command: [x]}]",
            r"jobs\[0\]\.deadline_hours must be a finite positive number, got inf",
        ),
        (
            "name: f\nbudget_usd_per_hour: .nan\njobs: [{name: a, compute_hours: 1, "
            "deadline_hours: 2, command: [x]}]",
            "budget_usd_per_hour must be a finite positive number, got nan",
        ),
        (
            "name: f\nbudget_usd_per_hour: .inf\njobs: [{name: a, compute_hours: 1, "
            "deadline_hours: 2, command: [x]}]",
            "budget_usd_per_hour must be a finite positive number, got inf",
        ),
        (
            "name: f\nbudget_usd_per_hour: 5\njobs: [{name: a, compute_hours: 1, "
            "deadline_hours: 200000, command: [x]}]",
            r"jobs\[0\]\.deadline_hours must be at most 100,000 hours \(about 11 years\), "
            "got 200000$",
        ),
        (
            "name: f\nbudget_usd_per_hour: 5\njobs: [{name: a, compute_hours: 1" + "0" * 400 + ", "
            "deadline_hours: 2, command: [x]}]",
            r"jobs\[0\]\.compute_hours must be a finite positive number, got 1000.*characters\)$",
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
    def job(
        name: str, tier: str, deadline: float, work_s: float = 3, **more: object
    ) -> dict[str, object]:
        state = str(tmp_path / name)
        command = [sys.executable, str(FAKE_JOB), "--work-s", str(work_s), "--state", state]
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
        # room for one on-demand node (3.06 $/h) and three spot ones (0.918 $/h), not for
        # two on-demand nodes: the budget keeps spot too, so the jobs take turns on spot
        "budget_usd_per_hour": 6.0,
        "jobs": [
            job("eval", "high", 0.6),
            # a floor of two asked, but the deadline (ample) asks for one: the budget has no
            # room for a second on-demand node, so spot takes its place once it has room (the
            # job runs long enough to see the others end)
            job("pretrain", "normal", 8.0, work_s=9, nodes="1:2", on_demand_floor=2),
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
    # the run's JSON has each supervisor's own account: the ledger holds all it wrote
    supervised = json.loads(run.stdout)["supervised"]
    assert set(supervised) == {j["job_id"] for j in status["jobs"]}
    for line in status["jobs"]:
        own = supervised[line["job_id"]]
        assert own["pending_writes"] == 0
        for key in ("status", "preemptions", "migrations"):
            assert own[key] == line[key], (line["name"], key)
        assert own["cost_usd"] == pytest.approx(line["cost_usd"], abs=1e-4)  # rounded: 4 places
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


def fake(
    tmp_path: Path, name: str, tier: str, compute: float, deadline: float
) -> dict[str, object]:
    """A fleet file's job running the fake training command for 3 s of work."""
    command = [sys.executable, str(FAKE_JOB), "--work-s", "3", "--state", str(tmp_path / name)]
    return {
        "name": name,
        "priority": tier,
        "compute_hours": compute,
        "deadline_hours": deadline,
        "command": command,
    }


def most_spent_at_once(store_file: Path, scale: float) -> float:
    """The most the fleet's instances cost per hour at one moment, from the ledger: each
    instance from its end (the entry's time) back over its hours at ``scale``."""
    with open_operational(store_file, read_only=True) as store:
        rows = store.query("SELECT ts, hours, price FROM ledger WHERE kind = 'instance'")
    assert len(rows) >= 3
    edges: list[tuple[datetime, int, float]] = []
    for ts, hours, price in rows.itertuples(index=False):
        end = datetime.fromisoformat(str(ts))
        start = end - timedelta(seconds=float(hours) * 3600 / scale)
        edges += [(start, 1, float(price)), (end, 0, -float(price))]  # an end before a start
    spent = most = 0.0
    for _, _, change in sorted(edges):
        spent += change
        most = max(most, spent)
    return most


@pytest.mark.slow
def test_a_fleet_under_a_budget_smaller_than_its_jobs_keeps_it_and_says_why_a_job_waits(
    tmp_path: Path, cli: CliRun, store_file: Path
) -> None:
    spec = {
        "name": "tight",
        "budget_usd_per_hour": 1.0,  # room for one spot instance (0.918 $/h) of three
        "jobs": [
            fake(tmp_path, "train-a", "normal", 0.3, 4.0),
            fake(tmp_path, "train-b", "normal", 0.3, 4.0),
            fake(tmp_path, "backfill", "low", 0.3, 4.0),
        ],
    }
    path = tmp_path / "fleet.yaml"
    path.write_text(json.dumps(spec))
    run = cli("fleet", "run", str(path), "--json", "--scale", "360")
    assert run.returncode == 0, run.stderr[-3000:]
    status = json.loads(run.stdout[run.stdout.index("{") :])
    assert [j["status"] for j in status["jobs"]] == ["completed"] * 3
    assert "fleet: job backfill (low) waits: the budget 1.00 $/h is used by train-" in run.stderr
    assert "goes over the budget for" not in run.stderr
    waits = [line for line in run.stderr.splitlines() if "fleet: job backfill (low) waits" in line]
    assert waits and all(a != b for a, b in pairwise(waits))  # once a reason
    assert most_spent_at_once(store_file, 360) <= 1.0 + 1e-9


@pytest.mark.slow
def test_a_low_job_its_policy_puts_on_on_demand_runs_on_spot_or_ends_and_the_fleet_returns(
    tmp_path: Path, cli: CliRun
) -> None:
    tiny = fake(tmp_path, "tiny", "low", 0.01, 10.0)
    path = tmp_path / "fleet.yaml"
    path.write_text(json.dumps({"name": "odd", "budget_usd_per_hour": 5, "jobs": [tiny]}))
    run = cli("fleet", "run", str(path), "--json", "--scale", "360")
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout[run.stdout.index("{") :])["jobs"][0]["status"] == "completed"
    # a market with no spot at all: it waits for spot, saying so, and ends once its deadline
    # is lost
    dead = tmp_path / "dead"
    dead.mkdir()
    for zone in ("z0", "z1"):
        trace = {"metadata": {"gap_seconds": 300}, "data": [1] * 2000}
        (dead / f"{zone}.json").write_text(json.dumps(trace))
    late = fake(tmp_path, "late", "low", 0.01, 0.3)
    path.write_text(json.dumps({"name": "dry", "budget_usd_per_hour": 5, "jobs": [late]}))
    run = cli("fleet", "run", str(path), "--traces", str(dead), "--scale", "360")
    assert run.returncode == 1, run.stderr[-3000:]
    assert "fleet: job late (low) waits" in run.stderr
    assert "late: ended unfinished (low priority)" in run.stderr
    assert "Traceback" not in run.stderr

"""An elastic job on an on-demand floor and spot workers (real torchrun agents, gloo on loopback,
a replayed trace paced by the host's training steps, a real store for the ledger)."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import numpy as np
import pytest

from spotwise.executor.launchers.local import Replay
from spotwise.executor.ledger.ledger import JobInfo, Ledger, job_report
from spotwise.executor.ledger.prices import PriceBook
from spotwise.executor.supervise.elastic import NodePlan, NodeSupervisor
from spotwise.executor.supervise.supervisor import SupervisorConfig
from spotwise.policy.nodes.floor import deadline_floor
from spotwise.policy.service.client import in_process_for
from spotwise.policy.service.schemas import JobTerms
from spotwise.policy.traces import Pool, TraceSet
from spotwise.pricing.operational import open_operational
from tests.conftest import CliRun

GAP = 60  # a tick a minute; one training step is one tick of the replay
PAST = 240
STEPS = 2 * 4096 // 32  # train_mlp: 2 epochs of 4096 samples in global batches of 32
STEP_SLEEP_S = 0.05


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_auto_holds_the_host_alone_then_fills_around_spot_then_goes_all_on_demand() -> None:
    plan = NodePlan(min_nodes=1, max_nodes=8, floor=None, regroup_hours=0.1)

    def floor(slack_hours: float, spot_held: int = 5) -> int:
        return deadline_floor(
            plan, spot_held=spot_held, time_left_hours=10 + slack_hours, work_left_hours=10
        )

    assert floor(0.61) == 1  # more than six regroups of slack: the host alone on-demand
    assert floor(0.6) == 3 and floor(0.3) == 3  # the reserve: 8 nodes around the 5 spot held
    assert floor(0.3, spot_held=4) == 4  # a spot node taken back is replaced on-demand
    assert floor(0.3, spot_held=8) == 1  # never below MIN
    assert floor(0.2) == 8 and floor(-1.0) == 8  # two regroups: every node on-demand
    assert (
        deadline_floor(
            NodePlan(min_nodes=2, max_nodes=8, floor=None, regroup_hours=0.1),
            spot_held=0,
            time_left_hours=20,
            work_left_hours=10,
        )
        == 2
    )


def test_a_floor_below_min_or_above_max_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="rendezvous host"):
        NodePlan(min_nodes=2, max_nodes=4, floor=1)
    with pytest.raises(ValueError, match="MIN <= K <= MAX"):
        NodePlan(min_nodes=1, max_nodes=4, floor=5)


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.xdist_group("torch-distributed")  # gloo jobs, one at a time
def test_a_spot_node_is_taken_back_the_floor_trains_on_and_the_job_grows_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")
    monkeypatch.setenv("SPOTWISE_PG_TIMEOUT_S", "20")
    # the spot pool is up for the first 80 steps, down for 80, then up to the end
    row = "1" * 80 + "0" * 80 + "1" * 1000
    past = ("1" * 9 + "0") * (PAST // 10)
    traces = TraceSet(
        pools=(Pool(name="z0"),),
        gap_seconds=GAP,
        available=np.array([[c == "1" for c in past + row]]),
    )
    terms = JobTerms(
        compute_hours=STEPS * GAP / 3600,
        deadline_hours=3 * STEPS * GAP / 3600,
        changeover_hours=1 / 60,
        spot_price=1.0,
        on_demand_price=3.0,
    )
    store = tmp_path / "store.duckdb"
    ledger = Ledger(
        store,
        JobInfo(
            name="elastic",
            command="train_mlp",
            launcher="torchrun",
            compute_hours=terms.compute_hours,
            deadline_hours=terms.deadline_hours,
            on_demand_price=terms.on_demand_price,
            simulated=True,
            prices=PriceBook.flat(traces.names, 1.0, 3.0),
        ),
    )
    # cloud time moves one tick per host step; the notice comes ~10 steps ahead
    scale = GAP / STEP_SLEEP_S
    launcher = Replay(
        traces=traces, start_hours=PAST * GAP / 3600, scale=scale, step_s=GAP
    ).launcher()
    plan = NodePlan(
        min_nodes=1,
        max_nodes=2,
        floor=1,
        rdzv_endpoint=f"127.0.0.1:{free_port()}",
        last_call_timeout_s=10,  # both nodes join the first round, even on a loaded machine
    )
    config = SupervisorConfig(
        job=terms, lead_s=0.5, grace_s=30.0, move_check_s=None, cancel_grace_s=30.0
    )
    supervisor = NodeSupervisor(launcher, in_process_for, config, ledger, plan)
    ckpt = tmp_path / "ckpt"
    command = [sys.executable, "-m", "spotwise.executor.examples.train_mlp", "--ckpt", str(ckpt)]
    command += ["--epochs", "2", "--step-sleep-s", str(STEP_SLEEP_S), "--interval-s", "1000"]

    report = supervisor.run(command)

    assert report.completed, report.events[-5:]
    sizes = report.world_sizes
    shrunk = sizes.index(1, sizes.index(2))  # at two, then one (the floor alone) ...
    assert 2 in sizes[shrunk:]  # ... then two again
    assert report.preemptions == 1 and report.steps_lost == 0
    host = [e for e in report.events if e["node"] == "node-0"]
    # every start after the first resumes at the step its group committed when it stopped
    # (the end's too: a node that joins as the workers finish makes torchrun start them again)
    commits = [e["step"] for e in host if e["event"] in ("preempted", "done")]
    resumes = [e["step"] for e in host if e["event"] == "resumed"]
    assert resumes and resumes == commits[: len(resumes)]
    assert {e["step"] for e in host if e["event"] == "done"} == {STEPS}
    with open_operational(store) as market:
        ledger_report = job_report(market, ledger.job_id)
    assert ledger_report.status == "completed" and ledger_report.simulated
    assert ledger_report.preemptions == 1 and ledger_report.notices == 1
    assert set(ledger_report.nodes["node-0"]) == {"on-demand"}
    spot_nodes = [n for n, use in ledger_report.nodes.items() if "spot" in use]
    assert len(spot_nodes) >= 2  # the one taken back and the one that grew the job back
    # billed: the one taken back, and the one that grew the job back (on a loaded machine a
    # further spot node may join and leave within one step of the replay: no hours, no cost)
    costs = [ledger_report.nodes[n]["spot"].cost_usd for n in spot_nodes]
    assert costs[0] > 0 and max(costs[1:]) > 0


@pytest.mark.slow
def test_run_refuses_nodes_it_cannot_keep_and_says_what_to_do(cli: CliRun) -> None:
    local = cli("run", "--launcher", "local", "--nodes", "1:2", "--", "true")
    assert local.returncode == 1 and "--nodes needs --launcher torchrun" in local.stderr
    low = cli(
        "run", "--launcher", "torchrun", "--nodes", "2:4", "--on-demand-floor", "1", "--", "-"
    )
    assert low.returncode == 1 and "rendezvous host" in low.stderr
    words = cli("run", "--launcher", "torchrun", "--nodes", "two", "--", "true")
    assert words.returncode == 1 and "MIN:MAX or N" in words.stderr
    # on AWS the nodes must reach each other: refused before any AWS call without a group
    bare = cli("run", "--launcher", "aws", "--nodes", "1:2", "--", "true")
    assert bare.returncode == 1 and "needs --network (--security-group)" in bare.stderr
    assert "spotwise setup aws" in bare.stderr and "Traceback" not in bare.stderr

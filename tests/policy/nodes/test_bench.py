"""The N-node lab: capacity counted in nodes, an on-demand floor under spot workers, regroups."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from spotwise.policy.errors import PolicyError, TraceError
from spotwise.policy.job import REFERENCE, JobSpec
from spotwise.policy.nodes.bench import node_starts, run_node_bench, simulate_nodes
from spotwise.policy.nodes.bound import node_lower_bound
from spotwise.policy.nodes.capacity import CapacityTraces, load_capacity_traces
from spotwise.policy.nodes.simulate import NO_POOL, NodeAction, NodeRun, node_context
from tests.conftest import DATA, CliRun
from tests.policy.helpers import job

NODE_TRACES = DATA / "traces/cbl/availability/16-node/aws-08-27-2023"


def capacity(*rows: list[int]) -> CapacityTraces:
    """Pools with the given spot nodes per tick (1-hour ticks)."""
    counts = np.array(rows)
    return CapacityTraces(
        names=tuple(f"p{i}" for i in range(len(rows))),
        gap_seconds=3600,
        capacity=counts,
        cluster_size=int(counts.max()),
    )


@pytest.fixture(scope="module")
def bundled() -> CapacityTraces:
    return load_capacity_traces(NODE_TRACES)


def test_every_node_count_change_is_a_regroup_billed_without_progress() -> None:
    # 4 nodes, 3 ticks of work, 1-tick regroups; the pool has 4 spot nodes, then 2.
    run = NodeRun(capacity([4, 4, 4, 2, 2, 2, 2, 2]), job(3, 8, 1), 4, 0)
    run.observe()
    run.step(NodeAction(on_demand=0, spot=4, pool=0))  # tick 0: start, regroup
    assert (run.progress, run.regroups) == (0.0, 1)
    run.observe()
    run.step(NodeAction(on_demand=0, spot=4, pool=0))  # ticks 1, 2: full speed
    run.observe()
    run.step(NodeAction(on_demand=0, spot=4, pool=0))
    assert run.progress == 2.0
    obs = run.observe()  # tick 3: the pool has 2 left, 2 nodes are taken back
    assert (obs.lost, obs.spot, obs.regroup_left) == (2, 2, 1)
    run.step(NodeAction(on_demand=2, spot=2, pool=0))  # the floor fills in: one regroup
    assert run.progress == 2.0 and run.regroups == 3
    run.observe()
    run.step(NodeAction(on_demand=2, spot=2, pool=0))
    result = run.result()
    assert result.done and result.finish_tick == 5 and result.preempted_nodes == 2
    # billed: 4 spot nodes for ticks 0-2, 2 spot for 3-4, 2 on-demand for 3-4 ($1 and $3 per h)
    assert result.cost == pytest.approx(4 * 3 * 1.0 + 2 * 2 * 1.0 + 2 * 2 * 3.0)
    assert result.cost_ratio == pytest.approx(result.cost / ((3 + 1) * 4 * 3.0))


def test_asking_another_pool_moves_there_only_if_it_gives_more() -> None:
    run = NodeRun(capacity([2] * 6, [1] * 3 + [4] * 3), job(2, 6, 0), 4, 0)
    run.observe()
    run.step(NodeAction(on_demand=0, spot=4, pool=0))
    assert (run.s, run.pool) == (2, 0)
    obs = run.observe()
    run.step(NodeAction(on_demand=0, spot=4, pool=1))  # p1 gives 1 < 2: stay, but learn it
    assert (run.s, run.pool) == (2, 0) and obs.seen.tolist() == [2, 1]
    run.observe()
    run.step(NodeAction(on_demand=0, spot=4, pool=0))
    run.observe()
    run.step(NodeAction(on_demand=0, spot=4, pool=1))  # now p1 gives 4: move
    assert (run.s, run.pool, run.regroups) == (4, 1, 2)
    run.observe()
    run.step(NodeAction(on_demand=0))
    assert (run.s, run.pool) == (0, NO_POOL)


def test_the_bound_uses_every_spot_node_there_is_and_buys_the_rest_on_demand() -> None:
    traces = capacity([0, 2, 2, 0, 0, 0], [1, 1, 4, 0, 0, 0])
    context = node_context(traces, job(2, 6, 0), 2, 0, reads_future=True)
    bound = node_lower_bound(context)
    # 4 node-ticks of work; spot can give 1 + 2 + 2 = 5 node-ticks (at most 2 a tick): all spot
    assert bound.spot_share == 1.0 and bound.cost == pytest.approx(4 * 1.0)
    short = node_lower_bound(node_context(traces, job(4, 6, 0), 2, 0, reads_future=True))
    assert short.cost == pytest.approx(5 * 1.0 + 3 * 3.0)


@pytest.mark.parametrize("shape", [(24, 36, 0.2), (48, 60, 0.05)])
def test_no_policy_misses_a_deadline_and_the_bound_is_below_them_all(
    bundled: CapacityTraces, shape: tuple[float, float, float]
) -> None:
    compute, deadline, changeover = shape
    spec = JobSpec(
        compute_hours=compute,
        deadline_hours=deadline,
        changeover_hours=changeover,
        spot_price=REFERENCE.spot_price,
        on_demand_price=REFERENCE.on_demand_price,
    )
    for start in node_starts(bundled, spec, 0.0, 36.0):
        bound = node_lower_bound(node_context(bundled, spec, 8, start, reads_future=True))
        for name in ("on_demand", "spot_fallback", "best", "auto_floor"):
            result = simulate_nodes(name, bundled, spec, 8, start)
            assert result.done, (name, start)
            assert bound.cost <= result.cost + 1e-9, (name, start)


def test_best_asks_another_pool_when_its_own_gives_few_and_the_fallback_does_not() -> None:
    # The first pool gives 1 node of 4, the second all 4 from the third hour: the fallback keeps
    # its 1 node and ends on-demand; best asks the other pool within the hour and moves.
    traces = capacity([1] * 60, [0, 0] + [4] * 58)
    spec = job(20, 40, 1)
    best = simulate_nodes("best", traces, spec, 4, 0)
    fallback = simulate_nodes("spot_fallback", traces, spec, 4, 0)
    assert best.done and fallback.done
    assert best.spot_node_ticks > 2 * fallback.spot_node_ticks
    assert best.cost < 0.6 * fallback.cost


def test_run_node_bench_refuses_more_nodes_than_the_traces_count(bundled: CapacityTraces) -> None:
    with pytest.raises(PolicyError, match=r"must be 1\.\.16"):
        run_node_bench(bundled, REFERENCE, nodes=17)


def test_capacity_traces_refuse_negative_counts_and_mixed_gaps(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(
        json.dumps({"metadata": {"gap_seconds": 300}, "data": [1, -1]})
    )
    with pytest.raises(TraceError, match=r"data\[1\]: not a non-negative number"):
        load_capacity_traces(tmp_path)
    (tmp_path / "a.json").write_text(
        json.dumps({"metadata": {"gap_seconds": 300}, "data": [1, 2.5]})
    )
    with pytest.raises(TraceError, match="whole numbers >= 0"):
        load_capacity_traces(tmp_path)
    (tmp_path / "a.json").write_text(json.dumps({"metadata": {"gap_seconds": 300}, "data": [1, 2]}))
    (tmp_path / "b.json").write_text(json.dumps({"metadata": {"gap_seconds": 60}, "data": [1, 2]}))
    with pytest.raises(TraceError, match="different tick gaps"):
        load_capacity_traces(tmp_path)
    with pytest.raises(TraceError, match=r"no \*\.json traces"):
        load_capacity_traces(tmp_path / "none")


@pytest.mark.slow
def test_bench_policy_nodes_prints_the_issues_json_shape(cli: CliRun) -> None:
    result = cli(
        "bench", "policy", "--nodes", "4", "--compute-hours", "24", "--deadline-hours", "36",
        "--start-every-hours", "24", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["zones"] == "multi" and doc["nodes"] == 4
    rows = doc["results"]["all"]
    assert list(rows) == ["on_demand", "spot_fallback", "best", "omniscient"]
    assert rows["omniscient"]["lower_bound"] is True
    for row in rows.values():
        assert {"mean_cost_ratio", "p90_cost_ratio", "deadline_miss_rate", "n_jobs"} <= set(row)
    assert rows["on_demand"]["mean_cost_ratio"] == 1.0
    assert rows["omniscient"]["mean_cost_ratio"] <= rows["best"]["mean_cost_ratio"]
    refused = cli("bench", "policy", "--nodes", "4", "--observe", "probe")
    assert refused.returncode == 1 and "--observe does not apply" in refused.stderr
    short = cli("bench", "policy", "--nodes", "4", "--compute-hours", "10", "--deadline-hours", "5")
    assert short.returncode == 1 and "no schedule fits" in short.stderr
    assert "Traceback" not in short.stderr


def test_a_count_log_is_one_pool_on_a_one_minute_grid(tmp_path: Path) -> None:
    log = tmp_path / "counts.csv"
    # two rows at 0 ms: the last is the state after that instant; counts hold until the next row
    log.write_text("0,1\n0,4\n150000,2\n240000,6\n")
    traces = load_capacity_traces(log)
    assert traces.gap_seconds == 60 and traces.names == ("counts",)
    assert traces.capacity.tolist() == [[4, 4, 4, 2, 6]] and traces.cluster_size == 6
    log.write_text("0,1\n60000,two\n")
    with pytest.raises(TraceError, match="not a count log"):
        load_capacity_traces(log)
    log.write_text("0,1\n60000,2.5\n")
    with pytest.raises(TraceError, match="line 2: node counts must be whole numbers"):
        load_capacity_traces(log)


def test_the_bundled_parcae_log_runs_16_node_jobs_without_a_miss() -> None:
    traces = load_capacity_traces(DATA / "traces/parcae/p3-available-nodes.csv")
    spec = JobSpec(
        compute_hours=4.0,
        deadline_hours=6.0,
        changeover_hours=0.05,
        spot_price=REFERENCE.spot_price,
        on_demand_price=REFERENCE.on_demand_price,
    )
    for start in node_starts(traces, spec, 0.0, 2.0):
        for name in ("spot_fallback", "best"):
            assert simulate_nodes(name, traces, spec, 16, start).done

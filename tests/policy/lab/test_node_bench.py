"""The N-node bench: its policies on hand-made and bundled capacity, never late and never below
the bound, and `bench policy --nodes`."""

from __future__ import annotations

import json

import pytest

from spotwise.policy.errors import PolicyError
from spotwise.policy.job import REFERENCE, JobSpec
from spotwise.policy.lab.node_bench import node_starts, run_node_bench, simulate_nodes
from spotwise.policy.nodes.bound import node_lower_bound
from spotwise.policy.nodes.capacity import CapacityTraces, load_capacity_traces
from spotwise.policy.nodes.simulate import node_context
from tests.conftest import DATA, CliRun
from tests.policy.helpers import capacity, job

NODE_TRACES = DATA / "traces/cbl/availability/16-node/aws-08-27-2023"


@pytest.fixture(scope="module")
def bundled() -> CapacityTraces:
    return load_capacity_traces(NODE_TRACES)


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

"""`spotwise bench policy` and `bench suite` on the bundled data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import DATA, CliRun

TRACES = DATA / "traces/cbl/availability/1-node/aws-02-15-2023"


@pytest.fixture
def cli(cli_in_process: CliRun) -> CliRun:
    """Commands whose arguments, messages and output are under test run in process."""
    return cli_in_process


def bench(cli: CliRun, *extra: str):
    return cli(
        "bench",
        "policy",
        "--traces",
        str(TRACES),
        "--compute-hours",
        "48",
        "--deadline-hours",
        "60",
        "--changeover-hours",
        "0.2",
        "--spot-price",
        "0.918",
        "--on-demand-price",
        "3.06",
        "--test-from-hours",
        "600",
        "--start-every-hours",
        "12",
        *extra,
    )


@pytest.mark.slow
def test_bench_single_prints_every_zone_and_the_mean(cli: CliRun, tmp_path: Path) -> None:
    plot = tmp_path / "single.png"
    result = bench(
        cli,
        "--zones",
        "single",
        "--policies",
        "on_demand,greedy,omniscient",
        "--json",
        "--plot",
        str(plot),
        "--verbose",
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["zones"] == "single"
    assert set(summary["results"]) == {p.stem for p in TRACES.glob("*.json")} | {"mean"}
    for key, per_policy in summary["results"].items():
        assert set(per_policy) == {"on_demand", "greedy", "omniscient"}
        assert per_policy["on_demand"]["mean_cost_ratio"] == 1.0
        assert (
            per_policy["omniscient"]["mean_cost_ratio"] <= per_policy["greedy"]["mean_cost_ratio"]
        )
        assert per_policy["greedy"]["deadline_miss_rate"] == 0.0
        assert per_policy["greedy"]["n_jobs"] == (45 if key == "mean" else 5)
    assert plot.stat().st_size > 10_000 and plot.read_bytes()[:4] == b"\x89PNG"
    assert "ms per job" in result.stderr


def test_bench_multi_has_one_key_for_all_zones(cli: CliRun) -> None:
    result = bench(cli, "--zones", "multi", "--policies", "greedy,uniform_progress", "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["zones"] == "multi" and list(summary["results"]) == ["all"]
    assert summary["results"]["all"]["uniform_progress"]["n_jobs"] == 5


def test_bench_without_json_prints_a_table(cli: CliRun) -> None:
    result = bench(cli, "--zones", "multi", "--policies", "greedy")
    assert result.returncode == 0 and "mean cost ratio" in result.stdout


def test_bench_rejects_bad_arguments_with_one_line(cli: CliRun, tmp_path: Path) -> None:
    for args, needle in (
        (("--zones", "many"), "--zones must be"),
        (("--policies", "greedy,best_guess"), "unknown policy 'best_guess'"),
        (("--deadline-hours", "40"), "shorter than the compute"),
        (("--observe", "everything"), "--observe must be one of all, current, probe"),
        (("--history-hours", "-3"), "--history-hours must be a number of hours >= 0 or all"),
        (("--history-hours", "week"), "--history-hours must be a number of hours >= 0 or all"),
    ):
        result = bench(cli, *args)
        assert result.returncode != 0 and needle in result.stderr, result.stderr
    empty = cli("bench", "policy", "--traces", str(tmp_path))
    assert empty.returncode != 0 and "no *.json traces" in empty.stderr


def test_bench_checkpoint_mode_costs_at_least_the_plain_run(cli: CliRun) -> None:
    plain = json.loads(bench(cli, "--zones", "multi", "--policies", "greedy", "--json").stdout)
    mode = bench(
        cli,
        "--zones",
        "multi",
        "--policies",
        "greedy",
        "--json",
        "--checkpoint-minutes",
        "30",
        "--checkpoint-stall-seconds",
        "60",
        "--notice-seconds",
        "10",
    )
    assert mode.returncode == 0, mode.stderr
    with_checkpoints = json.loads(mode.stdout)["results"]["all"]["greedy"]["mean_cost_ratio"]
    assert with_checkpoints >= plain["results"]["all"]["greedy"]["mean_cost_ratio"]


def test_bench_pools_file_changes_prices(cli: CliRun, tmp_path: Path) -> None:
    pools = tmp_path / "pools.json"
    pools.write_text(json.dumps({"us-east-1a_v100_1": {"spot_price": 0.5, "speed": 1}}))
    result = bench(
        cli, "--zones", "single", "--policies", "greedy", "--json", "--pools", str(pools)
    )
    cheap = json.loads(result.stdout)["results"]
    plain = json.loads(bench(cli, "--zones", "single", "--policies", "greedy", "--json").stdout)[
        "results"
    ]
    zone = "us-east-1a_v100_1"
    assert cheap[zone]["greedy"]["mean_cost_ratio"] < plain[zone]["greedy"]["mean_cost_ratio"]
    assert cheap["us-west-2c_v100_1"] == plain["us-west-2c_v100_1"]
    pools.write_text(json.dumps({"nowhere": {"speed": 2}}))
    bad = bench(cli, "--policies", "greedy", "--pools", str(pools))
    assert bad.returncode != 0 and "pool 'nowhere' has no trace" in bad.stderr


@pytest.mark.slow
def test_a_blind_cold_bench_runs_and_the_bound_does_not_move(cli: CliRun) -> None:
    """Seeing only what requests teach, from a cold start, greedy's fleet request over every pool
    finds about what it would have seen (within 0.01), and the bound is the same."""
    ratios = {}
    for mode, history in (("all", "all"), ("probe", "0")):
        result = bench(
            cli,
            "--zones",
            "multi",
            "--policies",
            "greedy,omniscient",
            "--observe",
            mode,
            "--history-hours",
            history,
            "--json",
        )
        assert result.returncode == 0, result.stderr
        ratios[mode] = json.loads(result.stdout)["results"]["all"]
    assert ratios["probe"]["omniscient"] == ratios["all"]["omniscient"]
    assert (
        ratios["probe"]["greedy"]["mean_cost_ratio"]
        >= ratios["all"]["greedy"]["mean_cost_ratio"] - 0.01
    )


@pytest.mark.e2e  # 18-27 s of a worker: in make test-e2e (CI), to keep make test under 10 min
@pytest.mark.slow
def test_bench_suite_quick_reports_every_class_against_the_bound(cli: CliRun) -> None:
    result = cli(
        "bench", "suite", "--quick", "--policies", "risk_aware", "--workers", "2", "--json"
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    rows = summary["classes"]
    described = {s["name"]: s for s in summary["trace_sets"]}
    assert {r["trace_set"] for r in rows} <= set(described)
    assert {"aws-02-15-2023", "spothedge-GCP1", "16-node-aws-08-27-2023"} <= set(described)
    assert described["spothedge-GCP1"]["clock"].startswith("relative")  # never 1970
    assert described["aws-02-15-2023"]["clock"] == "2023-02-15 UTC"
    together = [
        r
        for r in rows
        if r["pools"] == "every" and r["trace_set"] == "aws-02-15-2023" and not r["market"]
    ]
    assert {(r["observe"], r["history_hours"]) for r in together} == {
        ("all", 0.0),
        ("all", 168.0),
        ("probe", 0.0),
        ("probe", 168.0),
    }
    for row in rows:
        stats = row["policies"]
        assert set(stats) == {"risk_aware", "greedy", "omniscient"}
        bound = stats["omniscient"]["mean_cost_ratio"]
        assert all(s["mean_cost_ratio"] >= bound - 1e-9 for s in stats.values())
        assert all(s["misses"] == 0 for s in stats.values())
        assert row["material"] == (row["gap"] >= summary["material_gap"])
        if row["pools"] == "each":
            assert row["observe"] == "probe" and row["history_hours"] == 0
            assert len(row["per_pool"]) == len(described[row["trace_set"]]["pools"])
    same_jobs = {r["policies"]["omniscient"]["mean_cost_ratio"] for r in together}
    assert len(same_jobs) == 1  # the bound does not depend on what the policy sees
    markets = [r for r in rows if r["market"]]
    assert markets and all(r["observe"] == "probe" and r["history_hours"] == 0 for r in markets)
    assert all(r["policies"]["omniscient"]["gap_to_bound"] == 0.0 for r in markets)
    assert set(summary["verdict"]) >= {
        "probe_gap_share",
        "worst_excess_over_greedy",
        "market_gap_to_bound",
        "on_demand_asks_per_changeover",
    }


@pytest.mark.slow
def test_bench_moves_pay_egress_between_the_regions_a_pools_file_names(
    cli: CliRun, tmp_path: Path
) -> None:
    pools = tmp_path / "pools.json"
    places = {
        "us-east-1a_v100_1": {"spot_price": 2.5, "cloud": "aws", "region": "us-east-1"},
        "us-west-2a_v100_1": {"spot_price": 0.6, "cloud": "aws", "region": "us-west-2"},
    }
    pools.write_text(json.dumps(places))
    common = ("--zones", "multi", "--policies", "core", "--observe", "probe", "--json")
    light = bench(cli, *common, "--pools", str(pools))
    heavy = bench(cli, *common, "--pools", str(pools), "--checkpoint-gb", "500")
    torn = bench(cli, *common, "--pools", str(pools), "--failed-request", "ends")
    assert light.returncode == heavy.returncode == torn.returncode == 0, heavy.stderr
    cost = {
        name: json.loads(r.stdout)["results"]["all"]["core"]["mean_cost_ratio"]
        for name, r in (("light", light), ("heavy", heavy), ("torn", torn))
    }
    assert cost["heavy"] > cost["light"]  # 500 GB between regions: $10 a move
    bad = bench(cli, "--policies", "greedy", "--failed-request", "sometimes")
    assert bad.returncode != 0 and "--failed-request must be keeps or ends" in bad.stderr


def test_bench_suite_rejects_bad_arguments_with_one_line(cli: CliRun) -> None:
    for args, needle in (
        (("--window", "later"), "--window must be held_back or train"),
        (("--policies", "greedy,hunch"), "unknown policy 'hunch'"),
        (("--workers", "-1"), "--workers"),
    ):
        result = cli("bench", "suite", "--quick", *args)
        assert result.returncode != 0 and needle in result.stderr, result.stderr

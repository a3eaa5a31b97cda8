"""`spotwise plan` on the bundled data."""

from __future__ import annotations

import json

import pytest

from tests.conftest import DATA, CliRun


@pytest.fixture
def cli(cli_in_process: CliRun) -> CliRun:
    """Commands whose arguments, messages and output are under test run in process."""
    return cli_in_process


@pytest.mark.slow
def test_plan_recommends_pools_with_a_cost_breakdown(cli: CliRun) -> None:
    assert cli("data", "load", str(DATA / "prices"), str(DATA / "advisor")).returncode == 0
    result = cli(
        "plan",
        "--gpu-hours",
        "1000",
        "--deadline-hours",
        "1400",
        "--instance-type",
        "p3.2xlarge",
        "--provider",
        "aws",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    best = plan["recommended"][0]
    assert best["pool"].startswith("aws:") and best["pool"].endswith(":p3.2xlarge")
    assert best["cost"]["total"] < best["cost"]["on_demand"]
    assert set(best["cost"]) == {
        "compute",
        "storage",
        "recovery",
        "total",
        "on_demand",
        "saved_pct",
        "egress",
    }
    assert best["market_mix"]["spot"] + best["market_mix"]["on_demand"] == 1.0
    assert plan["assumptions"]
    # every number says where it came from and when it held, and old ones are flagged
    assert best["spot_price_source"].startswith("store: aws-price-history")
    assert best["spot_price_as_of"].startswith("20")
    assert best["on_demand_source"] == "reference p3.2xlarge price (not a quote)"
    assert best["mtbf_kind"] == "default" and "spotwise data load" in best["mtbf_source"]
    assert "spot price" in best["stale_inputs"] and 0 <= best["p_late_on_spot_alone"] <= 1
    assert plan["next_step"].startswith("spotwise run --launcher aws --region ")
    text = cli(
        "plan", "--gpu-hours", "100", "--deadline-hours", "150", "--instance-type", "a2-highgpu-1g"
    )
    assert text.returncode == 0 and "assumptions" in text.stdout
    assert "stale" in text.stdout and "store: gcp-prices" in text.stdout
    assert "next: spotwise run --launcher gcp --region " in text.stdout  # a GCP pool
    none = cli("plan", "--gpu-hours", "10", "--deadline-hours", "20", "--instance-type", "x9")
    assert none.returncode != 0 and "no spot price of x9 in the store" in none.stderr
    assert "spotwise collect aws --region us-east-1 --instance-types x9" in none.stderr
    upper = cli(
        "plan",
        "--gpu-hours",
        "1000",
        "--deadline-hours",
        "1400",
        "--instance-type",
        "P3.2XLARGE",
        "--provider",
        "aws",
        "--json",
    )
    assert upper.returncode == 0 and json.loads(upper.stdout)["recommended"] == plan["recommended"]


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("--gpu-hours", "0", "must be above zero"),
        ("--gpu-hours", "inf", "must be a finite number"),
        ("--gpu-hours", "nan", "must be a finite number"),
        ("--on-demand-price", "-3", "must be above zero"),
        ("--deadline-hours", "inf", "must be a finite number"),
    ],
)
def test_plan_refuses_numbers_that_make_no_plan(
    cli: CliRun, option: str, value: str, words: str
) -> None:
    args = {"--gpu-hours": "10", "--deadline-hours": "20", "--instance-type": "p3.2xlarge"}
    args[option] = value
    result = cli("plan", *[x for pair in args.items() for x in pair])
    assert result.returncode == 2 and words in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (
            ["--gpu-hours", "1e308", "--deadline-hours", "1e308"],
            "--gpu-hours 1e+308: a plan takes at most 100,000 hours on one machine",
        ),
        (
            ["--gpu-hours", "10", "--deadline-hours", "1e308"],
            "--deadline-hours 1e+308: a plan takes at most 100,000 hours",
        ),
        (
            ["--gpu-hours", "10", "--deadline-hours", "20", "--checkpoint-gb", "1e308"],
            "--checkpoint-gb 1e+308: a plan takes at most 1,000,000 GB",
        ),
    ],
)
def test_plan_refuses_hours_past_any_job_in_one_line_naming_the_flag(
    cli: CliRun, flags: list[str], said: str
) -> None:
    assert cli("data", "load", str(DATA / "prices")).returncode == 0
    result = cli("plan", "--instance-type", "p3.2xlarge", *flags)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [f"error: {said}; give the job's own"]

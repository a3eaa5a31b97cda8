"""One plan across clouds: `spotwise plan --gpu MODEL --gpus N` ranks the GPU table's
equivalent shapes of AWS, GCP and Azure by total cost, on a real DuckDB store, through the real
CLI; the three-cloud store is collected from the project's loopback fakes."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import typer

from spotwise.executor.clouds.base import CloudOptions
from spotwise.executor.clouds.registry import CLOUDS
from spotwise.policy.errors import PolicyError
from spotwise.policy.market import PoolTerms, Risk
from spotwise.policy.plan import PlanInputs, missing_settings, next_step, plan_job
from spotwise.policy.pools import clouds as plan_clouds
from spotwise.pricing.clouds.registry import PROFILES
from spotwise.pricing.quotes import Quote
from tests.conftest import DATA, CliRun
from tests.policy.three_clouds import collect_three_clouds

PLAN = ("plan", "--gpu-hours", "100", "--deadline-hours", "150", "--gpu", "A100", "--gpus", "1")
NOTICES = {name: cloud.notice_s for name, cloud in CLOUDS.items() if name in PROFILES}
"""The notices of the clouds a plan ranks: those with prices (a pricing profile)."""


def parsed_run(command: str) -> tuple[str, CloudOptions]:
    """``spotwise run ...`` as printed, parsed by the CLI's own `run` command (every flag and
    value checked as a user's shell would pass them), as its cloud and shared options."""
    from spotwise.cli import app

    words = shlex.split(command)
    assert words[:2] == ["spotwise", "run"]
    run = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    params = run.make_context("run", words[2:]).params
    options = CloudOptions(
        region=params["region"],
        zones=tuple(z for z in (params["pools"] or "").split(",") if z),
        instance_type=params["instance_type"],
        image=params["image"],
        bucket=params["bucket"],
        identity=params["identity"],
        network=tuple(params["network"] or ()),
        project=params["project"],
    )
    assert params["command"][:2] == ["python", "train.py"]
    return params["launcher"], options


def pool(cloud: str, region: str, zone: str, spot: float, on_demand: float) -> PoolTerms:
    return PoolTerms(
        provider=cloud,
        region=region,
        zone=zone,
        instance_type={"aws": "p3.2xlarge", "gcp": "a2-highgpu-1g"}.get(
            cloud, "Standard_NC24ads_A100_v4"
        ),
        spot=Quote(usd_per_hour=spot, source=f"store: {cloud}-test, {region}", as_of="2026-12-01"),
        on_demand=Quote(usd_per_hour=on_demand, source=f"store: {cloud}-list, {region}"),
        risk=Risk(mtbf_hours=20.0, kind="prior", source="test"),
        notice_s=NOTICES[cloud],
        storage_list=plan_clouds.STORAGE_LISTS[cloud],
    )


def test_a_pool_priced_far_below_its_shape_elsewhere_on_its_cloud_is_flagged_and_ranked_last() -> (
    None
):
    pools = [
        pool("gcp", "us-central1", "", 1.30, 3.67),
        pool("gcp", "asia-east1", "", 0.95, 3.79),
        pool("gcp", "northamerica-northeast2", "", 0.24, 0.81),  # a row of 2023, out of line
        pool("gcp", "europe-west4", "", 1.10, 3.67),
        pool("azure", "eastus", "", 0.70, 3.67),  # alone on its cloud: not judged
        pool("azure", "westus", "", 0.10, 0.50),
    ]
    inputs = PlanInputs(gpu_hours=10, deadline_hours=20)
    plan = plan_job(inputs, pools, now=pd.Timestamp("2026-12-02", tz="UTC"))
    odd = "gcp:northamerica-northeast2:a2-highgpu-1g"
    assert set(plan.out_of_line) == {odd}
    assert plan.out_of_line[odd] == (
        "on demand $0.810/h is under 50% of the median $3.670/h of a2-highgpu-1g in 4 places on gcp"
    )
    assert plan.pools[-1].pool.name == odd  # the cheapest, ranked last
    assert plan.best.pool.name == "azure:westus:Standard_NC24ads_A100_v4"
    ranked = [p.cost.total for p in plan.pools[:-1]]
    assert ranked == sorted(ranked)
    assert any(
        line.startswith(f"1 of 6 pools are out of line, ranked after the others (the first, {odd}:")
        and "`spotwise check gcp` with its --pools" in line
        for line in plan.assumptions
    )
    fair = plan_job(inputs, pools[:2] + pools[3:], now=pd.Timestamp("2026-12-02", tz="UTC"))
    assert fair.out_of_line == {}
    assert not any("out of line" in line for line in fair.assumptions)


def test_each_cloud_charges_its_own_storage_and_egress_and_a_long_save_misses_short_notices() -> (
    None
):
    pools = [
        pool("aws", "us-east-1", "us-east-1a", 1.0, 3.0),
        pool("gcp", "us-central1", "", 1.0, 3.0),
        pool("azure", "eastus", "", 1.0, 3.0),
    ]
    small = PlanInputs(gpu_hours=10, deadline_hours=20, checkpoint_gb=10)
    plan = plan_job(small, pools, now=pd.Timestamp("2026-12-02", tz="UTC"))
    by_cloud = {p.pool.provider: p for p in plan.pools}
    for name, p in by_cloud.items():
        listed = plan_clouds.STORAGE_LISTS[name]
        assert p.egress == pytest.approx(10 * listed.egress_usd_per_gb)
        writes = -(-10 // p.checkpoint_interval_hours)
        assert p.cost.storage == pytest.approx(
            10 * listed.usd_per_gb_month + writes * listed.usd_per_1k_writes / 1000 + p.egress
        )
        assert p.save_fits_notice is True
    # same compute and risk: the cloud with the cheapest storage and egress ranks first
    assert [p.pool.provider for p in plan.pools] == ["azure", "aws", "gcp"]
    assert any("fits every notice (aws 120 s, azure 30 s, gcp 30 s)" in a for a in plan.assumptions)
    big = plan_job(replace(small, checkpoint_gb=40), pools, now=plan.made_at)
    fits = {p.pool.provider: p.save_fits_notice for p in big.pools}
    assert fits == {"aws": True, "gcp": False, "azure": False}  # 80 s to write
    (line,) = [a for a in big.assumptions if "longer than the notice" in a]
    assert "80 s" in line and "of azure, gcp (aws 120 s" in line


def test_the_next_step_names_the_best_cloud_and_runs_as_printed_with_the_account() -> None:
    inputs = PlanInputs(gpu_hours=10, deadline_hours=20)
    made = pd.Timestamp("2026-12-02", tz="UTC")
    accounts = {
        "gcp": {
            "project": "my-project",
            "image": "projects/deeplearning-platform-release/global/images/family/pytorch",
            "bucket": "my-spotwise",
            "identity": "spotwise-instance@my-project.iam.gserviceaccount.com",
        },
        "azure": {
            "project": "00000000-0000-0000-0000-000000000000/spotwise",
            "image": "microsoft-dsvm:ubuntu-hpc:2204:latest",
            "bucket": "spotwiseacct/ckpts",
            "identity": "spotwise-instance",
        },
        "aws": {"image": "ami-0123456789abcdef0", "bucket": "my-bucket", "identity": "prof"},
    }
    for cloud, zone in (("gcp", ""), ("azure", ""), ("aws", "us-east-1b")):
        region = {"gcp": "us-central1", "azure": "eastus", "aws": "us-east-1"}[cloud]
        plan = plan_job(inputs, [pool(cloud, region, zone, 0.5, 3.0)], now=made)
        bare = next_step(plan, inputs)
        assert bare.startswith(f"spotwise run --launcher {cloud} --region {region} ")
        assert missing_settings(bare) == [f for _, f, _ in plan_clouds.LAUNCH_FORMS[cloud].flags]
        command = next_step(plan, inputs, account=accounts[cloud])
        assert missing_settings(command) == []
        launcher, options = parsed_run(command)
        assert launcher == cloud and options.zones == ((zone,) if zone else ())
        target = CLOUDS[cloud].target(options)
        target.require_complete()
        ckpt = CLOUDS[cloud].checkpoint_url(target, f"run-{made:%Y%m%d-%H%M%S}")
        assert f"--ckpt {ckpt} -- python train.py --ckpt {ckpt}" in command


@pytest.mark.slow
def test_on_the_bundled_data_a_gpu_plan_shows_gcp_and_names_the_clouds_without_a_price(
    cli: CliRun,
) -> None:
    assert cli("data", "load", str(DATA / "prices")).returncode == 0
    result = cli(*PLAN, "--json")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    rows = plan["recommended"]
    assert plan["clouds"] == ["gcp"] and {r["cloud"] for r in rows} == {"gcp"}
    for row in rows:
        assert row["instance_type"] in ("a2-highgpu-1g", "a2-ultragpu-1g")
        assert row["spot_price_source"].startswith("store: gcp-prices, ")
        assert row["spot_price_as_of"].startswith("20") and row["on_demand_as_of"]
        assert row["shape"]["gpu"] == "A100" and row["shape"]["source"].startswith("https://")
        assert row["notice_s"] == 30.0 and row["storage_prices"]["source"].startswith("https://")
    totals = [r["cost"]["total"] for r in rows]
    assert totals == sorted(totals)
    assert plan["no_stored_price"] == {
        "aws": "spotwise collect aws --region us-east-1 --instance-types "
        "p4d.24xlarge,p4de.24xlarge, then spotwise collect aws --on-demand --region us-east-1 "
        "--instance-types p4d.24xlarge,p4de.24xlarge",
        "azure": "spotwise collect azure --regions eastus --gpu A100",
        "huawei": "spotwise collect huawei --regions ap-southeast-1 --gpu A100",
    }
    assert plan["next_step"].startswith(f"spotwise run --launcher gcp --region {rows[0]['region']}")
    text = cli(*PLAN)
    assert text.returncode == 0, text.stderr
    assert "1 × A100" in text.stdout and "gcp-prices" in text.stdout
    assert "  - azure: no stored price of these shapes; collect one: spotwise collect azure" in (
        text.stdout
    )
    assert "next: spotwise run --launcher gcp" in text.stdout
    assert "give plan --project, --image, --bucket, --service-account" in text.stdout


@pytest.mark.slow
def test_on_a_store_of_three_clouds_a_gpu_plan_ranks_rows_of_all_three_with_their_sources(
    cli: CliRun, tmp_path: Path
) -> None:
    for ran in collect_three_clouds(cli, tmp_path):
        assert ran.returncode == 0, (ran.args, ran.stderr)
    result = cli(*PLAN, "--json", "--top", "2")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    rows = plan["recommended"]
    assert set(plan["clouds"]) == {r["cloud"] for r in rows} == {"aws", "gcp", "azure"}
    assert plan["no_stored_price"] == {
        "huawei": "spotwise collect huawei --regions ap-southeast-1 --gpu A100"
    }
    sources = {"aws": "aws-api", "gcp": "gcp-billing", "azure": "azure-retail"}
    for row in rows:
        cloud = row["cloud"]
        assert row["spot_price_source"].startswith(f"store: {sources[cloud]}, "), row
        assert row["spot_price_as_of"] and row["on_demand_as_of"]
        assert row["notice_s"] == NOTICES[cloud]
        assert row["storage_prices"] == {
            "usd_per_gb_month": plan_clouds.STORAGE_LISTS[cloud].usd_per_gb_month,
            "usd_per_1k_writes": plan_clouds.STORAGE_LISTS[cloud].usd_per_1k_writes,
            "egress_usd_per_gb": plan_clouds.STORAGE_LISTS[cloud].egress_usd_per_gb,
            "source": plan_clouds.STORAGE_LISTS[cloud].source,
            "as_of": plan_clouds.STORAGE_LISTS[cloud].as_of,
        }
        cost = row["cost"]
        assert cost["total"] == pytest.approx(
            cost["compute"] + cost["storage"] + cost["recovery"], abs=0.011
        )
    aws = [r for r in rows if r["cloud"] == "aws"]
    assert aws[0]["instance_type"] == "p4d.24xlarge" and aws[0]["shape"]["gpu_count"] == 8
    # the ranking says which rows price a whole machine of more GPUs than asked
    assert {r["cloud"]: r["prices_whole_machine"] for r in rows} == {
        "aws": True,
        "gcp": False,
        "azure": False,
    }
    best = rows[0]
    launcher, options = parsed_run(plan["next_step"])
    assert launcher == best["cloud"] and options.region == best["region"]
    assert options.instance_type == best["instance_type"]
    text = cli(*PLAN, "--top", "2")
    assert text.returncode == 0, text.stderr
    table = text.stdout.split("best: ")[0]
    for cloud, source in sources.items():  # the three clouds with prices in this store
        notice = NOTICES[cloud]
        assert f"│ {cloud} " in table and source in table
        assert f" {notice:.0f} s " in table
    assert "p4d.24xlarge (8 GPUs)" in table
    (aws_row,) = [line for line in table.splitlines() if line.startswith("│ aws ")]
    assert aws_row.rstrip(" │").endswith("whole machine")
    assert not any("whole machine" in line for line in table.splitlines() if "│ gcp " in line)
    assert "aws sells 1 × A100 only as" in text.stdout
    only_aws = cli(*PLAN, "--provider", "aws", "--json")
    assert json.loads(only_aws.stdout)["next_step"].startswith(
        "spotwise run --launcher aws --region us-east-1 --instance-type p4d.24xlarge "
        "--image-id AMI --bucket BUCKET --instance-profile PROFILE --pools us-east-1a,"
    )


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--gpu", "Z100"), "--gpu 'Z100': not in the GPU table; GPUs: A100, A10G, H100"),
        (("--gpu", "A100", "--instance-type", "p3.2xlarge"), "not both and not neither"),
        ((), "not both and not neither"),
        (("--instance-type", "p3.2xlarge", "--gpus", "2"), "--gpus goes with --gpu"),
        (
            ("--gpu", "A100", "--provider", "oracle"),
            "--provider must be aws, gcp, azure, huawei or all",
        ),
    ],
)
def test_a_plan_of_no_clear_subject_is_one_line(
    cli_in_process: CliRun, args: tuple[str, ...], words: str
) -> None:
    result = cli_in_process("plan", "--gpu-hours", "10", "--deadline-hours", "20", *args)
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert words in line


def test_a_gpu_no_store_prices_names_each_clouds_collecting_command(
    cli_in_process: CliRun, store_file: Path
) -> None:
    from spotwise.pricing.ingest import load_paths
    from spotwise.pricing.store import MarketStore

    with MarketStore.open(store_file) as market:
        load_paths(market, [DATA / "prices/aws_spot_price_history_2019-12_2020-01.csv"])
    result = cli_in_process("plan", "--gpu-hours", "10", "--deadline-hours", "20", "--gpu", "H100")
    assert result.returncode == 1
    *progress, line = result.stderr.strip().splitlines()
    assert not any(text.startswith("error") for text in progress)
    assert line.startswith("error: 1 × H100: no stored price of a shape with 1 × H100")
    assert "gcp: spotwise collect gcp --gpu H100" in line
    assert "azure: spotwise collect azure --regions eastus --gpu H100" in line
    assert "aws: spotwise collect aws --region us-east-1 --instance-types p5.48xlarge" in line


def test_a_plan_of_no_pool_names_every_clouds_collect_command() -> None:
    from spotwise.policy.errors import PolicyError

    with pytest.raises(PolicyError, match="no pool to plan on") as exc:
        plan_job(PlanInputs(gpu_hours=10, deadline_hours=20), [])
    assert all(f"`spotwise collect {cloud}`" in str(exc.value) for cloud in PROFILES)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("gpu_hours", 1e308),
        ("deadline_hours", 1e308),
        ("restart_hours", 1e6),
        ("checkpoint_gb", 1e308),
    ],
)
def test_plan_inputs_past_any_job_are_refused_naming_the_field(field: str, value: float) -> None:
    terms = {"gpu_hours": 10.0, "deadline_hours": 20.0, field: value}
    with pytest.raises(
        PolicyError, match=rf"^{field} must be at most [\d,]+, got {re.escape(f'{value:g}')}$"
    ):
        PlanInputs(**terms)  # type: ignore[arg-type]

"""The planner's pool terms from a real store: every price and risk has a source and an as_of,
and pools with and without traces are ranked on one scale."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from spotwise.policy.errors import PolicyError
from spotwise.policy.market import StorePools, pools_from_store, require_pools
from spotwise.policy.plan import PlanInputs, missing_settings, next_step, plan_job
from spotwise.pricing.forecast.run import pool_risks
from spotwise.pricing.frames import validate
from spotwise.pricing.ingest import load_paths
from spotwise.pricing.quotes import REFERENCE_SOURCE
from spotwise.pricing.store import MarketStore
from tests.conftest import DATA

TRACES = DATA / "traces/cbl/availability/1-node/aws-02-15-2023"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MarketStore]:
    path = tmp_path_factory.mktemp("market") / "market.duckdb"
    with MarketStore.open(path) as market:
        load_paths(
            market,
            [
                DATA / "prices/aws_spot_price_history_2019-12_2020-01.csv",
                TRACES,
                DATA / "advisor/spot-advisor-data_2025-06-28.json",
            ],
        )
    with MarketStore.open(path, read_only=True) as market:
        yield market


@pytest.fixture(scope="module")
def p3(store: MarketStore) -> StorePools:
    return pools_from_store(store, "p3.2xlarge", "aws")


@pytest.mark.slow
def test_traced_and_untraced_pools_of_one_type_are_on_one_calibrated_scale(
    store: MarketStore, p3: StorePools
) -> None:
    traced = [p for p in p3.pools if p.risk.kind == "trace"]
    untraced = [p for p in p3.pools if p.risk.kind != "trace"]
    assert traced and untraced  # the bundled prices name zones the traces do not
    own = [r.mtbf_hours for r in pool_risks(store, horizon_minutes=60, instance_type="p3.2xlarge")]
    assert len(own) == 9 and {p.mtbf_hours for p in traced} <= set(own)
    for pool in untraced:
        # the prior of the traced pools, not a Spot Advisor band's month-scale MTBF
        assert pool.risk.kind == "prior"
        assert pool.mtbf_hours == pytest.approx(statistics.median(own))
        assert (pool.risk.low_hours, pool.risk.high_hours) == (min(own), max(own))
        assert "prior" in pool.risk.source and pool.risk.as_of is not None
        assert pool.band is not None and pool.band.band in range(5)  # shown beside it
    assert max(p.mtbf_hours for p in p3.pools) < 10 * min(p.mtbf_hours for p in p3.pools)


@pytest.mark.slow
def test_every_price_and_risk_names_its_source_and_when_it_held(p3: StorePools) -> None:
    for pool in p3.pools:
        assert pool.spot.source.startswith("store: ") and pool.spot.as_of is not None
        # no price list is bundled and no Advisor snapshot is of the prices' era
        assert pool.on_demand.source == REFERENCE_SOURCE and pool.on_demand.kind == "reference"
        assert pool.risk.source
    plan = plan_job(PlanInputs(gpu_hours=100, deadline_hours=200), p3.pools)
    assert all(plan.stale(p) for p in plan.pools)  # prices of 2020, traces of 2023
    assert any("older than a week" in line for line in plan.assumptions)
    assert any("reference price, not a quote" in line for line in plan.assumptions)
    newest = max(pd.Timestamp(str(p.spot.as_of)) for p in p3.pools)
    fresh = plan_job(
        PlanInputs(gpu_hours=100, deadline_hours=200),
        p3.pools,
        now=newest + pd.Timedelta(days=1),
    )
    assert [p.pool.name for p in fresh.pools if "spot price" not in fresh.stale(p)]


@pytest.mark.slow
def test_the_plan_ends_with_the_command_that_runs_it(p3: StorePools) -> None:
    inputs = PlanInputs(gpu_hours=100, deadline_hours=200)
    plan = plan_job(inputs, p3.pools)
    command = next_step(plan, inputs, "python train.py --ckpt s3://b/ck")
    best = plan.best
    assert command.startswith(
        f"spotwise run --launcher aws --region {best.pool.region} --instance-type p3.2xlarge "
        "--image-id AMI --bucket BUCKET --instance-profile PROFILE "
        f"--pools {best.pool.zone}"
    )
    assert missing_settings(command) == ["--image-id", "--bucket", "--instance-profile"]
    assert f"--checkpoint-minutes {60 * best.checkpoint_interval_hours:.0f}" in command
    assert command.endswith("-- python train.py --ckpt s3://b/ck")
    assert 0.0 <= best.p_late_on_spot <= 1.0


def test_the_next_step_names_only_pools_the_table_shows_and_the_account_given(
    p3: StorePools,
) -> None:
    inputs = PlanInputs(gpu_hours=24, deadline_hours=36)
    plan = plan_job(inputs, p3.pools)
    command = next_step(
        plan,
        inputs,
        shown=2,
        account={"image": "ami-1", "bucket": "bk", "identity": "prof"},
    )
    zones = command.split("--pools ")[1].split()[0].split(",")
    assert set(zones) <= {p.pool.zone for p in plan.pools[:2]}
    assert missing_settings(command) == []
    assert "--image-id ami-1 --bucket bk --instance-profile prof" in command
    run = f"s3://bk/spotwise/checkpoints/run-{plan.made_at:%Y%m%d-%H%M%S}"
    assert f"--ckpt {run} -- python train.py --ckpt {run}" in command


@pytest.mark.slow
def test_an_unpriced_instance_type_names_what_the_store_has_and_how_to_collect_it(
    store: MarketStore,
) -> None:
    found = pools_from_store(store, "g5.xlarge", "all", on_demand_price=1.0)
    with pytest.raises(PolicyError, match=r"no spot price of g5.xlarge .*p3\.2xlarge") as exc:
        require_pools(found, "g5.xlarge")
    assert "spotwise collect aws --region us-east-1 --instance-types g5.xlarge" in str(exc.value)
    p2 = pools_from_store(store, "p2.xlarge", "aws")
    assert not p2.pools and p2.left_out  # spot prices, but no on-demand one anywhere
    with pytest.raises(PolicyError, match=r"spotwise collect aws --on-demand --region"):
        plan_job(PlanInputs(gpu_hours=10, deadline_hours=20), p2.pools, left_out=p2.left_out)
    given = pools_from_store(store, "p2.xlarge", "aws", on_demand_price=0.9)
    assert given.pools and all(p.on_demand.kind == "given" for p in given.pools)


def test_a_store_without_traces_gives_a_labelled_default_risk(tmp_path: Path) -> None:
    with MarketStore.open(tmp_path / "m.duckdb") as market:
        load_paths(market, [DATA / "prices/aws_spot_price_history_2019-12_2020-01.csv"])
        found = pools_from_store(market, "p3.2xlarge", "aws")
    assert found.pools and {p.risk.kind for p in found.pools} == {"default"}
    assert all("spotwise data load" in p.risk.source for p in found.pools)


NC = "Standard_NC24ads_A100_v4"


def _azure_market(market: MarketStore, bands: dict[str, int]) -> None:
    """Spot and on-demand prices of NC A100 v4 in each region of ``bands``, and the region's
    eviction band (an empty band: none stored there)."""
    now = pd.Timestamp.now(tz="UTC").floor("D")
    prices = pd.DataFrame(
        [
            {
                "source": "azure-retail",
                "provider": "azure",
                "region": region,
                "zone": "",
                "instance_type": NC,
                "market": market_name,
                "ts": now - pd.Timedelta(days=1),
                "price": price,
            }
            for region in bands
            for market_name, price in (("spot", 0.735), ("on_demand", 3.673))
        ]
    )
    stored = pd.DataFrame(
        [
            {
                "source": "azure-resource-graph",
                "provider": "azure",
                "region": region,
                "instance_type": NC,
                "observed": now,
                "interruption_band": band,
                "savings_pct": 80.0,
            }
            for region, band in bands.items()
            if band >= 0
        ]
    )
    market.upsert(
        {
            "prices": validate("prices", prices, origin="test", now=now),
            "bands": validate("bands", stored, origin="test", now=now),
        }
    )


@pytest.mark.parametrize(
    ("band", "mtbf"),
    [(0, -1 / math.log(1 - 0.025)), (2, -1 / math.log(1 - 0.125)), (4, -1 / math.log(1 - 0.25))],
)
def test_an_azure_pool_without_a_trace_takes_its_eviction_band_not_the_default(
    tmp_path: Path, band: int, mtbf: float
) -> None:
    with MarketStore.open(tmp_path / "m.duckdb") as market:
        _azure_market(market, {"eastus": band})
        (pool,) = pools_from_store(market, NC, "azure").pools
    assert pool.risk.kind == "band"
    assert pool.risk.mtbf_hours == pytest.approx(mtbf)
    assert f"its azure eviction band {band} (" in pool.risk.source
    assert pool.band is not None and pool.band.provider == "azure"


def test_untraced_pools_of_other_clouds_take_the_prior_of_the_stored_eviction_bands(
    tmp_path: Path,
) -> None:
    with MarketStore.open(tmp_path / "m.duckdb") as market:
        load_paths(market, [DATA / "prices/aws_spot_price_history_2019-12_2020-01.csv"])
        _azure_market(market, {"eastus": 0, "westeurope": 4, "northeurope": -1})
        aws = pools_from_store(market, "p3.2xlarge", "aws").pools
        azure = {p.region: p for p in pools_from_store(market, NC, "azure").pools}
    banded = sorted([azure["eastus"].mtbf_hours, azure["westeurope"].mtbf_hours])
    for pool in (*aws, azure["northeurope"]):  # no trace, no band of its own
        assert pool.risk.kind == "prior"
        assert pool.risk.mtbf_hours == pytest.approx(statistics.median(banded))
        assert (pool.risk.low_hours, pool.risk.high_hours) == pytest.approx(tuple(banded))
        assert "eviction bands (azure; no pool is traced)" in pool.risk.source


def test_an_aws_spot_advisor_band_is_shown_beside_the_risk_never_turned_into_one(
    p3: StorePools,
) -> None:
    advised = [p for p in p3.pools if p.band is not None]
    assert advised and all(p.band is not None and p.band.provider == "aws" for p in advised)
    assert {p.risk.kind for p in advised} <= {"trace", "prior"}

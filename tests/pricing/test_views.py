"""The savings view on a real DuckDB store: AWS's zone-level spot prices (the bundled real
history) against its region-level on-demand prices (as `collect aws --on-demand` stores them),
GCP's region-level prices against its own."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from spotwise.pricing.clouds.aws.price_list import PriceListReport, parse_products
from spotwise.pricing.frames import validate
from spotwise.pricing.ingest import load_paths
from spotwise.pricing.store import MarketStore
from spotwise.pricing.views import savings
from tests.conftest import DATA
from tests.pricing.clouds.aws.test_price_list import item
from tests.pricing.conftest import PRICE_CSV

ON_DEMAND = {("us-east-1", "p3.2xlarge"): 3.06, ("us-east-1", "p2.xlarge"): 0.90}
"""AWS's published Linux on-demand rates, collected for us-east-1 only."""


def _aws_store(path: Path) -> MarketStore:
    """The bundled AWS spot history and the on-demand prices of :data:`ON_DEMAND`."""
    store = MarketStore.open(path)
    load_paths(store, [PRICE_CSV])
    items = [json.dumps(item(t, r, f"{usd:.10f}")) for (r, t), usd in ON_DEMAND.items()]
    report = PriceListReport(frame=pd.DataFrame())
    rows = pd.DataFrame(parse_products(items, report))
    assert not report.skipped
    store.upsert({"prices": validate("prices", rows, origin="test price list")})
    return store


def _pairs(frame: pd.DataFrame, first: str, second: str) -> list[tuple[str, str]]:
    """The (first, second) values of each row."""
    return list(frame[[first, second]].itertuples(index=False, name=None))


def _newest_spot() -> pd.DataFrame:
    """The newest spot price per zone and type, read from the CSV itself."""
    raw = pd.read_csv(PRICE_CSV).sort_values("timestamp")
    newest = raw.groupby(["availability_zone", "instance_type"]).tail(1)
    return newest.rename(columns={"availability_zone": "zone", "spot_price": "price"})


def test_aws_zone_spot_prices_pair_with_their_regions_on_demand_price(tmp_path: Path) -> None:
    with _aws_store(tmp_path / "m.duckdb") as store:
        frame = savings(store, provider="aws")
    spot = _newest_spot()
    spot["region"] = spot["zone"].str[:-1]
    spot["on_demand"] = [ON_DEMAND.get(pool) for pool in _pairs(spot, "region", "instance_type")]
    expected = spot.dropna(subset=["on_demand"])
    # every us-east-1 zone of both types, and nothing where no on-demand price was collected
    assert len(expected) > 2
    assert sorted(_pairs(frame, "zone", "instance_type")) == sorted(
        _pairs(expected, "zone", "instance_type")
    )
    assert set(frame.region) == {"us-east-1"} and frame.gpu.all()
    got = frame.set_index(["zone", "instance_type"])
    for row in expected.itertuples():
        pair = got.loc[(row.zone, row.instance_type)]
        assert pair.spot_price == pytest.approx(row.price)
        assert pair.on_demand_price == pytest.approx(row.on_demand)
        assert pair.saving_pct == pytest.approx(round(100 * (1 - row.price / row.on_demand), 1))


def test_a_zones_own_on_demand_price_wins_over_its_regions(tmp_path: Path) -> None:
    with _aws_store(tmp_path / "m.duckdb") as store:
        store.execute(
            "INSERT INTO prices (source, provider, region, zone, instance_type, market, ts, "
            "price) VALUES ('test', 'aws', 'us-east-1', 'us-east-1b', 'p3.2xlarge', "
            "'on_demand', '2020-02-01 00:00:00+00', 3.5)"
        )
        frame = savings(store, provider="aws")
    pools = _pairs(frame, "zone", "instance_type")
    assert len(pools) == len(set(pools))  # one row per pool, not one per on-demand price
    on_demand = frame.set_index(["zone", "instance_type"]).on_demand_price
    assert on_demand[("us-east-1b", "p3.2xlarge")] == 3.5
    assert on_demand[("us-east-1c", "p3.2xlarge")] == 3.06


def test_gcp_region_prices_still_pair_region_to_region(tmp_path: Path) -> None:
    csv = DATA / "prices/gcp_spot_ondemand_changepoints.csv"
    with MarketStore.open(tmp_path / "m.duckdb") as store:
        load_paths(store, [csv])
        frame = savings(store, provider="gcp")
    raw = pd.read_csv(csv)
    priced = {
        column: set(_pairs(raw.dropna(subset=[column]), "region", "machine_type"))
        for column in ("hour_spot_usd", "hour_ondemand_usd")
    }
    both = priced["hour_spot_usd"] & priced["hour_ondemand_usd"]
    assert len(both) > 100 and sorted(_pairs(frame, "region", "instance_type")) == sorted(both)
    assert set(frame.zone) == {""}


def test_gpu_shapes_of_every_cloud_are_gpus_and_others_are_not() -> None:
    from spotwise.pricing.views import is_gpu

    for shape in ("p3.2xlarge", "g5.xlarge", "a2-highgpu-1g", "Standard_NC24ads_A100_v4"):
        assert is_gpu(shape), shape
    for shape in ("m5.large", "n2-standard-8", "Standard_D4s_v5"):
        assert not is_gpu(shape), shape

"""A GCP or Azure job's prices: their catalogs price a shape per region (the store's rows have no
zone), so each of the job's zones is quoted its region's price, and a missing one names the
``collect`` command of that cloud."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from spotwise.executor.ledger.prices import PriceBook, price_book
from spotwise.pricing import gpus
from spotwise.pricing.collect_commands import COLLECTORS
from spotwise.pricing.quotes import Quote
from spotwise.pricing.store import MarketStore
from tests.conftest import ManualClock
from tests.fakes import toy_collector

COLUMNS = "(source, provider, region, zone, instance_type, market, ts, price)"


def _regional(
    store: MarketStore, cloud: str, region: str, shape: str, market: str, price: float
) -> None:
    store.execute(
        f"INSERT INTO prices {COLUMNS} VALUES (?, ?, ?, '', ?, ?, '2026-12-01 00:00:00+00', ?)",
        [f"{cloud}-catalog", cloud, region, shape, market, price],
    )


def test_a_gcp_jobs_zones_are_quoted_their_regions_catalog_price(tmp_path: Path) -> None:
    shape = "a2-highgpu-1g"
    with MarketStore.open(tmp_path / "m.duckdb") as store:
        _regional(store, "gcp", "us-central1", shape, "spot", 1.15)
        _regional(store, "gcp", "us-central1", shape, "on_demand", 3.67)
        book = price_book(
            store,
            ("us-central1-a", "us-central1-b"),
            instance_type=shape,
            home_region="us-central1",
        )
    assert {q.usd_per_hour for q in book.spot.values()} == {1.15}
    assert "gcp-catalog" in book.spot_quote("us-central1-a").source
    assert book.region_of == {"us-central1-a": "us-central1", "us-central1-b": "us-central1"}
    assert book.on_demand_quote("us-central1-b").usd_per_hour == 3.67


def test_an_azure_jobs_zones_1_2_are_quoted_its_locations_price(tmp_path: Path) -> None:
    size = "Standard_NC6s_v3"
    with MarketStore.open(tmp_path / "m.duckdb") as store:
        _regional(store, "azure", "eastus", size, "spot", 0.92)
        _regional(store, "azure", "eastus", size, "on_demand", 3.06)
        book = price_book(store, ("1", "2"), instance_type=size, home_region="eastus")
    assert book.spot_quote("2").usd_per_hour == 0.92
    assert book.on_demand_quote("1").usd_per_hour == 3.06 and book.home_region == "eastus"


@pytest.mark.parametrize(
    ("shape", "pools", "region", "collect"),
    [
        (
            "n1-standard-8+1xnvidia-tesla-v100",
            ("us-central1-a",),
            "us-central1",
            "spotwise collect gcp --regions us-central1 --shapes n1-standard-8+1xnvidia-tesla-v100",
        ),
        (
            "Standard_NC6s_v3",
            ("1",),
            "eastus",
            "spotwise collect azure --regions eastus --vm-sizes Standard_NC6s_v3",
        ),
    ],
)
def test_a_missing_price_names_that_clouds_collect_command(
    tmp_path: Path, shape: str, pools: tuple[str, ...], region: str, collect: str
) -> None:
    with MarketStore.open(tmp_path / "m.duckdb") as store:
        with pytest.raises(ValueError) as caught:
            price_book(store, pools, instance_type=shape, home_region=region)
        _regional(store, "gcp" if "-" in shape else "azure", region, shape, "spot", 1.0)
        with pytest.raises(ValueError) as on_demand:
            price_book(store, pools, instance_type=shape, home_region=region)
    assert str(caught.value) == (
        f"no spot price of {shape} in {region} in the store: give it with --spot-price, or "
        f"collect it ({collect})"
    )
    assert str(on_demand.value).startswith(f"no on-demand price of {shape} in {region}")
    assert "--on-demand-price" in str(on_demand.value) and collect in str(on_demand.value)


@pytest.mark.parametrize(
    ("shape", "pools", "region", "collect"),
    [
        (
            "a2-highgpu-1g",
            ("us-central1-a", "us-central1-b"),
            "us-central1",
            "`spotwise collect gcp --regions us-central1 --shapes a2-highgpu-1g`",
        ),
        (
            "Standard_NC6s_v3",
            ("1", "2"),
            "eastus",
            "`spotwise collect azure --regions eastus --vm-sizes Standard_NC6s_v3`",
        ),
    ],
)
def test_a_stale_price_names_that_clouds_collect_command(
    tmp_path: Path, shape: str, pools: tuple[str, ...], region: str, collect: str
) -> None:
    cloud = "gcp" if "-" in shape else "azure"
    month_later = pd.Timestamp("2027-01-01", tz="UTC").timestamp()
    with MarketStore.open(tmp_path / "m.duckdb") as store:
        _regional(store, cloud, region, shape, "spot", 1.0)
        _regional(store, cloud, region, shape, "on_demand", 3.0)
        book = price_book(
            store,
            pools,
            instance_type=shape,
            home_region=region,
            clock=ManualClock(month_later),
        )
    assert book.stale_lines() == [
        f"stale spot prices ({', '.join(pools)}; the newest of 2026-12-01), older than 7 days: "
        f"{collect} stores fresh ones",
        f"stale on-demand prices ({region}; the newest of 2026-12-01), older than 7 days: "
        f"{collect} stores fresh ones",
    ]
    assert "collect aws" not in "\n".join(book.stale_lines())


def _stale_book(shape: str, pools: dict[str, str]) -> PriceBook:
    """A book of ``shape`` whose quotes of ``pools`` (pool → region) were a month old."""
    old = Quote(usd_per_hour=1.0, source="store: x", as_of="2026-12-01T00:00:00+00:00")
    return PriceBook(
        instance_type=shape,
        home_region=next(iter(pools.values())),
        spot=dict.fromkeys(pools, old),
        on_demand=dict.fromkeys(pools.values(), old),
        region_of=pools,
        priced_at="2027-01-01T00:00:00+00:00",
    )


def test_a_stale_price_of_an_aws_shape_names_collect_aws_in_a_region_r() -> None:
    spot, on_demand = _stale_book("g5.xlarge", {"us-east-1a": "us-east-1"}).stale_lines()
    assert "`spotwise collect aws --region R` stores fresh ones" in spot
    assert "`spotwise collect aws --on-demand --region R` stores fresh ones" in on_demand


def test_a_stale_price_of_a_shape_no_cloud_owns_names_every_clouds_collect() -> None:
    spot, _ = _stale_book("x9", {"us-east-1a": "us-east-1"}).stale_lines()
    for cloud, collector in COLLECTORS.items():
        regions = "us-east-1" if collector.per_region else "R"
        assert f"{cloud}: spotwise collect {cloud} {collector.region_flag} {regions}" in spot


def test_a_stale_price_of_a_fourth_clouds_shape_names_that_clouds_collect(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(COLLECTORS, "toy", toy_collector.COLLECTOR)
    monkeypatch.setattr(gpus, "cloud_of", lambda shape, path=None: "toy")
    spot, _ = _stale_book("toy.gpu1", {"z1": "r1"}).stale_lines()
    assert spot.endswith("`spotwise collect toy --zone R` stores fresh ones")


def test_a_pool_with_no_home_region_is_read_by_its_shapes_clouds_zone_rule(
    tmp_path: Path,
) -> None:
    shape = "a2-highgpu-1g"
    with MarketStore.open(tmp_path / "m.duckdb") as store:
        _regional(store, "gcp", "us-central1", shape, "spot", 1.15)
        _regional(store, "gcp", "us-central1", shape, "on_demand", 3.67)
        book = price_book(store, ("us-central1-a",), instance_type=shape)
    assert book.region_of == {"us-central1-a": "us-central1"}  # not AWS's "us-central1-"
    assert book.spot_quote("us-central1-a").usd_per_hour == 1.15

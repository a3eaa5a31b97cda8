"""Regions of a job's pools: on-demand prices and the egress a checkpoint pays between them."""

from __future__ import annotations

import pytest

from spotwise.policy.pools.clouds import STORAGE_LISTS
from spotwise.policy.pools.regions import NOWHERE, Regions, continent, egress_usd_per_gb
from spotwise.policy.traces import Pool


@pytest.mark.parametrize(
    ("region", "code"),
    [
        ("us-east-1", "NA"),
        ("northamerica-northeast2", "NA"),
        ("eastus", "NA"),
        ("europe-west4", "EU"),
        ("eu-west-1", "EU"),
        ("westeurope", "EU"),
        ("asia-northeast1", "AP"),
        ("ap-southeast-2", "AP"),
        ("japaneast", "AP"),
        ("mars-1", ""),
    ],
)
def test_a_regions_continent_is_read_from_its_name(region: str, code: str) -> None:
    assert continent(region) == code


def test_egress_is_free_within_a_region_and_the_clouds_list_price_between() -> None:
    aws, gcp = STORAGE_LISTS["aws"], STORAGE_LISTS["gcp"]
    assert egress_usd_per_gb(("aws", "us-east-1"), ("aws", "us-east-1")) == 0.0
    assert egress_usd_per_gb(("aws", "us-east-1"), ("aws", "us-west-2")) == (
        aws.inter_region_usd_per_gb
    )
    assert egress_usd_per_gb(("gcp", "us-central1"), ("gcp", "asia-northeast1")) == (
        gcp.inter_continent_usd_per_gb
    )
    # to another cloud: the source cloud's internet egress
    assert egress_usd_per_gb(("gcp", "us-central1"), ("aws", "us-east-1")) == (
        gcp.egress_usd_per_gb
    )
    # pools that name no cloud are one place: nothing is charged
    assert egress_usd_per_gb(("", ""), ("", "x")) == 0.0


def test_regions_take_their_pools_on_demand_price_and_the_jobs_where_none_is_given() -> None:
    pools = [
        Pool(name="a", cloud="aws", region="us-east-1", on_demand_price=3.06),
        Pool(name="b", cloud="aws", region="us-east-1", on_demand_price=3.06),
        Pool(name="c", cloud="gcp", region="europe-west4"),
    ]
    regions = Regions.of(pools, on_demand_price=2.0)
    assert regions.count == 2 and list(regions.of_pool) == [0, 0, 1]
    assert list(regions.on_demand) == [3.06, 2.0]
    assert regions.label(1) == "gcp:europe-west4"
    assert regions.move_usd(NOWHERE, 1, 50.0) == 0.0  # no checkpoint yet
    assert regions.move_usd(0, 1, 50.0) == pytest.approx(
        50 * STORAGE_LISTS["aws"].egress_usd_per_gb
    )


def test_the_cheapest_on_demand_region_counts_the_checkpoints_move() -> None:
    pools = [
        Pool(name="a", cloud="gcp", region="us-central1", on_demand_price=3.0),
        Pool(name="b", cloud="gcp", region="asia-northeast1", on_demand_price=2.9),
    ]
    regions = Regions.of(pools, on_demand_price=3.0)
    # an hour left: the 0.1 $/h saving does not pay a 50 GB move across continents
    assert regions.cheapest_on_demand(0, 50.0, hours=1.0) == 0
    assert regions.cheapest_on_demand(NOWHERE, 50.0, hours=1.0) == 1
    assert regions.cheapest_on_demand(0, 50.0, hours=100.0) == 1

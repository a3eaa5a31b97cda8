"""Priced markets: a trace set's pools with their clouds, regions and the bundled real prices."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from spotwise.policy.errors import PolicyError
from spotwise.policy.lab.markets import (
    LADDER,
    MarketSpec,
    Place,
    PriceFiles,
    churny_pools,
    market_specs,
    priced,
)
from spotwise.policy.lab.trace_sets import suite_sets
from spotwise.policy.traces import TraceSet
from spotwise.pricing.quotes import REFERENCE_ON_DEMAND_USD
from tests.conftest import DATA


@pytest.fixture(scope="module")
def sets() -> dict[str, TraceSet]:
    return {s.name: s.traces for s in suite_sets(DATA)}


@pytest.fixture(scope="module")
def files() -> PriceFiles:
    return PriceFiles(Path(DATA))


def test_a_pools_name_and_the_price_files_say_its_cloud_region_and_shape(
    files: PriceFiles,
) -> None:
    assert files.place_of("us-east-1c_v100_1") == Place(
        cloud="aws", zone="us-east-1c", region="us-east-1", instance_type="p3.2xlarge"
    )
    assert files.place_of("europe-west4-a_a100_40gb_8") == Place(
        cloud="gcp", zone="europe-west4-a", region="europe-west4", instance_type="a2-highgpu-8g"
    )
    with pytest.raises(PolicyError, match="no bundled spot price of a shape with 1 × h200"):
        files.place_of("us-east-1c_h200_1")
    with pytest.raises(PolicyError, match="not a pool named"):
        files.place_of("pool; rm -rf /")
    # a shape priced for spot but not on demand is left out of the markets
    with pytest.raises(PolicyError, match=r"no on-demand price of p2\.xlarge"):
        files.on_demand(files.place_of("us-west-2a_k80_1"))


def test_listed_prices_are_each_zones_own_history(
    sets: dict[str, TraceSet], files: PriceFiles
) -> None:
    name = "aws-02-15-2023"
    spec = MarketSpec(
        trace_set=name, pools=("us-east-1c_v100_1", "us-west-2a_v100_1"), pricing="listed"
    )
    market = priced(spec, sets[name], files, end_tick=1000)
    assert market.prices is not None and market.prices.shape == (2, sets[name].n_ticks)
    rows = files.rows()
    east = rows[(rows["zone"] == "us-east-1c") & (rows["instance_type"] == "p3.2xlarge")]
    assert set(np.unique(market.prices[0])) <= set(east["price"])  # every price a listed one
    assert [p.region for p in market.pools] == ["us-east-1", "us-west-2"]
    assert all(p.on_demand_price == REFERENCE_ON_DEMAND_USD for p in market.pools)


def test_spread_prices_give_the_most_available_pool_the_dearest_listing(
    sets: dict[str, TraceSet], files: PriceFiles
) -> None:
    name = "16-node-aws-08-27-2023"
    end = sets[name].n_ticks * 2 // 3
    regions = {p: files.place_of(p).region for p in sets[name].names}
    pools = churny_pools(sets[name], sets[name].names, regions, 2, end)
    market = priced(
        MarketSpec(trace_set=name, pools=pools, pricing="spread"), sets[name], files, end
    )
    assert market.prices is not None
    share = market.available[:, :end].mean(axis=1)
    dear, cheap = int(np.argmax(share)), int(np.argmin(share))
    assert market.prices[dear, 0] == pytest.approx(LADDER[-1])
    assert market.prices[cheap, 0] == pytest.approx(LADDER[0])
    assert LADDER[-1] / LADDER[0] > 3  # the spread between real zone listings


def test_the_suite_markets_span_regions_and_carry_50_gb_and_teardown_variants(
    sets: dict[str, TraceSet], files: PriceFiles
) -> None:
    ends = {n: t.n_ticks * 2 // 3 for n, t in sets.items()}
    specs = market_specs(sets, ends, files, quick=False)
    assert {s.pricing for s in specs} == {"listed", "spread"}
    assert any(s.checkpoint_gb == 50.0 for s in specs)
    assert any(s.failed_request_ends for s in specs)
    for spec in specs:
        regions = {files.place_of(p).region for p in spec.pools}
        assert len(spec.pools) >= 2
        if spec.trace_set == "aws-02-15-2023" and spec.pricing == "spread":
            # the churniest pool of each of its 3 regions comes first
            assert len(regions) == min(3, len(spec.pools))

"""Loading a trace folder and a pools file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from spotwise.policy.errors import TraceError
from spotwise.policy.traces import Pool, TraceSet, load_traces
from tests.conftest import DATA

BUNDLED = DATA / "traces/cbl/availability/1-node/aws-02-15-2023"

BUNDLED = DATA / "traces/cbl/availability/1-node/aws-02-15-2023"


def test_a_pools_file_places_each_pool_in_its_cloud_and_region_at_its_on_demand_price(
    tmp_path: Path,
) -> None:
    pools = tmp_path / "pools.json"
    terms = {"spot_price": 0.5, "cloud": "aws", "region": "us-east-1", "on_demand_price": 2.5}
    pools.write_text(json.dumps({"us-east-1a_v100_1": terms}))
    pool = load_traces(BUNDLED, pools).pools[0]
    assert (pool.cloud, pool.region, pool.on_demand_price) == ("aws", "us-east-1", 2.5)
    pools.write_text(json.dumps({"us-east-1a_v100_1": {"spot_price": 0.5, "speed": 2}}))
    pool = load_traces(BUNDLED, pools).pools[0]
    assert (pool.name, pool.spot_price, pool.speed) == ("us-east-1a_v100_1", 0.5, 2)


@pytest.mark.parametrize(
    ("terms", "message"),
    [
        ({"bid": 1.0}, "give only spot_price, speed, on_demand_price, cloud, region"),
        ({"on_demand_price": True}, "on_demand_price must be a positive number"),
        ({"region": "us-east-1; rm -rf /"}, "region must be a name of lower-case letters"),
        ({"cloud": 7}, "cloud must be a name"),
    ],
)
def test_a_bad_pool_term_is_refused_naming_it(
    tmp_path: Path, terms: dict[str, object], message: str
) -> None:
    pools = tmp_path / "pools.json"
    pools.write_text(json.dumps({"us-east-1a_v100_1": terms}))
    with pytest.raises(TraceError, match=re.escape(message)):
        load_traces(BUNDLED, pools)


def two_pools() -> TraceSet:
    """Pool a at the job's price, b at 2.0; trace prices at a's tick 1 and b's tick 2."""
    return TraceSet(
        pools=(Pool(name="a"), Pool(name="b", spot_price=2.0)),
        gap_seconds=3600,
        available=np.array([[True, False, True], [False, True, True]]),
        prices=np.array([[np.nan, 5.0, np.nan], [np.nan, np.nan, 7.0]]),
    )


def test_a_ticks_spot_price_is_the_traces_else_the_pools_else_the_jobs() -> None:
    assert two_pools().spot_prices(1.0).tolist() == [[1.0, 5.0, 1.0], [2.0, 2.0, 7.0]]


def test_a_subset_keeps_the_order_asked_and_an_unknown_pool_names_the_known_ones() -> None:
    swapped = two_pools().subset(["b", "a"])
    assert swapped.names == ("b", "a") and swapped.n_ticks == 3
    assert swapped.available.tolist() == [[False, True, True], [True, False, True]]
    assert swapped.spot_prices(1.0).tolist() == [[2.0, 2.0, 7.0], [1.0, 5.0, 1.0]]
    with pytest.raises(
        TraceError, match=r"unknown pool\(s\) \['c'\]; the traces hold \['a', 'b'\]"
    ):
        two_pools().subset(["a", "c"])

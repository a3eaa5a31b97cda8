"""Loading a trace folder and a pools file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from spotwise.policy.errors import TraceError
from spotwise.policy.traces import Pool, TraceSet, load_traces
from tests.conftest import DATA

BUNDLED = DATA / "traces/cbl/availability/1-node/aws-02-15-2023"

BUNDLED = DATA / "traces/cbl/availability/1-node/aws-02-15-2023"


def test_a_pools_file_with_a_per_pool_on_demand_price_is_refused_not_ignored(
    tmp_path: Path,
) -> None:
    """The simulator has one on-demand price per job, so a pool's own would be ignored."""
    pools = tmp_path / "pools.json"
    pools.write_text(json.dumps({"us-east-1a_v100_1": {"spot_price": 0.5, "on_demand_price": 2}}))
    with pytest.raises(TraceError, match=r"give only spot_price and speed.*--on-demand-price"):
        load_traces(BUNDLED, pools)
    pools.write_text(json.dumps({"us-east-1a_v100_1": {"spot_price": 0.5, "speed": 2}}))
    pool = load_traces(BUNDLED, pools).pools[0]
    assert (pool.name, pool.spot_price, pool.speed) == ("us-east-1a_v100_1", 0.5, 2)


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

"""The bid lab on the bundled AWS price history: the same jobs with and without a bid."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from spotwise.core import settings
from spotwise.policy.errors import PolicyError
from spotwise.policy.lab.bids import bench_bids, price_traces
from tests.conftest import CliRun


def test_the_zones_of_one_region_are_pools_priced_every_hour() -> None:
    traces = price_traces(settings.bundled_prices(), "p3.2xlarge", "us-east-1")
    assert traces.names == ("us-east-1b", "us-east-1c", "us-east-1d", "us-east-1f")
    assert traces.gap_seconds == 3600 and traces.available.all()
    assert traces.prices is not None and traces.prices.shape == traces.available.shape
    assert (traces.prices > 0.9).all() and (traces.prices < 1.2).all()


def test_a_bid_above_every_price_changes_nothing_and_one_below_them_evicts() -> None:
    result = bench_bids(settings.bundled_prices(), bids=[3.06, 0.9873])
    free, above, tight = result.runs
    assert free.bid is None and free.jobs == above.jobs == tight.jobs > 0
    # no price in the history reaches the on-demand price: the bid never binds
    assert replace(above, bid=None).to_dict() == free.to_dict()
    assert free.evictions == 0
    # a bid under some zones' prices evicts, and greedy pays on-demand for what spot refused
    assert tight.evictions > 0 and tight.on_demand_hours > free.on_demand_hours
    assert tight.to_dict()["cost_usd"] != free.to_dict()["cost_usd"]


def test_an_instance_type_the_history_lacks_is_one_line() -> None:
    with pytest.raises(PolicyError, match=r"no spot prices of 'g9\.huge' in us-east-1; give one"):
        bench_bids(settings.bundled_prices(), instance_type="g9.huge")


def test_bench_bids_prints_json(cli_in_process: CliRun) -> None:
    result = cli_in_process("bench", "bids", "--bid", "0.9873")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [r["bid_usd_per_hour"] for r in doc["runs"]] == [None, 0.9873]
    assert doc["prices"] == Path(settings.bundled_prices()).name

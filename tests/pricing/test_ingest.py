"""Each bundled format read into canonical frames, checked against the raw files."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from spotwise.pricing.ingest import FORMATS, detect_format
from tests.conftest import DATA


def test_every_bundled_data_file_is_recognised_as_exactly_one_format() -> None:
    from spotwise.pricing.ingest import discover

    files, skipped = discover([DATA])
    assert {detect_format(f).name for f in files} == set(FORMATS)
    assert all(
        p.name in ("LICENSE", "UPSTREAM_README.md", "README.md") or p.name.endswith("SOURCE.txt")
        for p in skipped
    )


def test_bamboo_events_map_add_and_remove_to_launched_and_preempted() -> None:
    path = DATA / "traces/bamboo/p3-trace.csv"
    lines = path.read_text().split()
    events = FORMATS["bamboo-events"].read(path).frames["events"]
    assert len(events) == len(lines)
    assert (events["event"] == "preempted").sum() == sum(",remove," in x for x in lines)
    assert events["ts"].max() == pd.Timestamp(0, tz="UTC") + pd.Timedelta(milliseconds=40920000)


def test_node_counts_keep_the_state_after_each_instant() -> None:
    path = DATA / "traces/parcae/p3-available-nodes.csv"
    raw = pd.read_csv(path, header=None, names=["ms", "n"])
    frame = FORMATS["node-counts"].read(path).frames["availability"]
    last = raw.groupby("ms")["n"].last()
    assert frame["available_nodes"].tolist() == last.tolist()
    assert set(frame["target_nodes"]) == {raw["n"].max()}


def test_bamboo_aws_counts_take_start_zone_and_type_from_the_file_name() -> None:
    path = next((DATA / "traces/bamboo/aws-counts").glob("*g4dn-xlarge-us-east-1c-*"))
    frame = FORMATS["node-counts"].read(path).frames["availability"]
    assert frame["ts"].iloc[0] == pd.Timestamp("2020-11-20 19:30", tz="UTC")
    assert frame[["zone", "instance_type"]].iloc[0].tolist() == ["us-east-1c", "g4dn.xlarge"]
    hours = next((DATA / "traces/bamboo/aws-counts").glob("*p2-xlarge-2020-11-20-to-*"))
    end = FORMATS["node-counts"].read(hours).frames["availability"]["ts"].max()
    assert end == pd.Timestamp("2020-11-20", tz="UTC") + pd.Timedelta(hours=88.695)


def test_aws_price_history_rows_match_the_csv() -> None:
    path = DATA / "prices/aws_spot_price_history_2019-12_2020-01.csv"
    raw = pd.read_csv(path)
    prices = FORMATS["aws-price-history"].read(path).frames["prices"]
    assert len(prices) == len(raw)
    assert prices["price"].sum() == pytest.approx(raw["spot_price"].sum())
    assert (prices["region"] == prices["zone"].str[:-1]).all()


def test_gcp_prices_give_a_spot_and_an_on_demand_row_per_change() -> None:
    path = DATA / "prices/gcp_spot_ondemand_changepoints.csv"
    raw = pd.read_csv(path)
    parsed = FORMATS["gcp-prices"].read(path)
    prices = parsed.frames["prices"]
    assert (prices["market"] == "spot").sum() == len(raw)
    assert (prices["market"] == "on_demand").sum() == raw["hour_ondemand_usd"].notna().sum()
    assert "2 rows had no on-demand price" in parsed.note


def test_advisor_bands_are_linux_entries_dated_by_the_file_name() -> None:
    path = DATA / "advisor/spot-advisor-data_2021-02-10.json"
    doc = json.loads(path.read_text())
    bands = FORMATS["spot-advisor"].read(path).frames["bands"]
    linux = sum(len(v["Linux"]) for v in doc["spot_advisor"].values() if "Linux" in v)
    assert len(bands) == linux
    row = bands[(bands["region"] == "us-east-1") & (bands["instance_type"] == "p3.2xlarge")]
    entry = doc["spot_advisor"]["us-east-1"]["Linux"]["p3.2xlarge"]
    assert row[["interruption_band", "savings_pct"]].iloc[0].tolist() == [entry["r"], entry["s"]]
    assert set(bands["observed"]) == {pd.Timestamp("2021-02-10", tz="UTC")}

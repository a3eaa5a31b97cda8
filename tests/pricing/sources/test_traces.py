"""The CBL availability and preemption traces read into canonical frames, checked against the
raw files."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from spotwise.pricing.frames import SPECS
from spotwise.pricing.sources.traces import read_cbl, read_cbl_json
from tests.conftest import DATA

CBL = DATA / "traces" / "cbl"


def test_cbl_one_node_availability_marks_zero_as_one_available_node() -> None:
    path = CBL / "availability/1-node/aws-02-15-2023/us-east-1a_v100_1.json"
    raw = json.loads(path.read_text())
    frame = read_cbl(path).frames["availability"]
    assert list(frame.columns) == list(SPECS["availability"].columns)
    assert len(frame) == len(raw["data"])
    assert (frame["available_nodes"].to_numpy() == 1 - np.asarray(raw["data"])).all()
    assert set(frame["target_nodes"]) == {1}
    assert frame["ts"].iloc[0] == pd.Timestamp("2023-02-15", tz="UTC")
    assert (frame["ts"].diff().dropna() == pd.Timedelta(seconds=195)).all()
    assert frame[["provider", "zone", "instance_type"]].iloc[0].tolist() == [
        "aws",
        "us-east-1a",
        "p3.2xlarge",
    ]


def test_cbl_sixteen_node_trace_counts_obtained_nodes() -> None:
    path = CBL / "availability/16-node/aws-08-27-2023/us-west-2a_v100_1.json"
    frame = read_cbl(path).frames["availability"]
    raw = read_cbl_json(path)
    assert (frame["available_nodes"].to_numpy() == raw.data).all()
    assert set(frame["target_nodes"]) == {16}
    assert set(frame["source"]) == {"cbl-availability-16node"}


def test_cbl_price_arrays_become_the_published_change_points() -> None:
    changes = pd.read_csv(CBL / "aws_spot_price_changes_from_preemption_traces.csv")
    for path in sorted((CBL / "preemption/1-node").glob("aws-*/*.json")):
        parsed = read_cbl(path)
        mine = changes[
            (changes["trace_dir"] == path.parent.name)
            & (changes["zone"] == path.stem.split("_")[0])
        ]
        if "prices" not in parsed.frames:
            assert mine.empty
            continue
        prices = parsed.frames["prices"]
        start = pd.Timestamp(prices["ts"].iloc[0].date(), tz="UTC")
        offsets = (prices["ts"] - start).dt.total_seconds().astype(int).tolist()
        assert offsets == mine["seconds_from_trace_start"].tolist()
        assert prices["price"].tolist() == pytest.approx(mine["spot_price_usd_per_hr"].tolist())


def test_gcp_preemption_trace_is_provider_gcp_with_its_region() -> None:
    path = CBL / "preemption/1-node/gcp-04-30-2023/us-central1-a_c3-88.json"
    frame = read_cbl(path).frames["availability"]
    assert frame[["provider", "zone", "instance_type"]].iloc[0].tolist() == [
        "gcp",
        "us-central1-a",
        "c3-highcpu-88",
    ]

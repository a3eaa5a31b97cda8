"""Capacity traces: node counts per pool from JSON traces and count logs, refused where they
cannot be counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spotwise.policy.errors import TraceError
from spotwise.policy.nodes.capacity import load_capacity_traces


def test_capacity_traces_refuse_negative_counts_and_mixed_gaps(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(
        json.dumps({"metadata": {"gap_seconds": 300}, "data": [1, -1]})
    )
    with pytest.raises(TraceError, match=r"data\[1\]: not a non-negative number"):
        load_capacity_traces(tmp_path)
    (tmp_path / "a.json").write_text(
        json.dumps({"metadata": {"gap_seconds": 300}, "data": [1, 2.5]})
    )
    with pytest.raises(TraceError, match="whole numbers >= 0"):
        load_capacity_traces(tmp_path)
    (tmp_path / "a.json").write_text(json.dumps({"metadata": {"gap_seconds": 300}, "data": [1, 2]}))
    (tmp_path / "b.json").write_text(json.dumps({"metadata": {"gap_seconds": 60}, "data": [1, 2]}))
    with pytest.raises(TraceError, match="different tick gaps"):
        load_capacity_traces(tmp_path)
    with pytest.raises(TraceError, match=r"no \*\.json traces"):
        load_capacity_traces(tmp_path / "none")


def test_a_count_log_is_one_pool_on_a_one_minute_grid(tmp_path: Path) -> None:
    log = tmp_path / "counts.csv"
    # two rows at 0 ms: the last is the state after that instant; counts hold until the next row
    log.write_text("0,1\n0,4\n150000,2\n240000,6\n")
    traces = load_capacity_traces(log)
    assert traces.gap_seconds == 60 and traces.names == ("counts",)
    assert traces.capacity.tolist() == [[4, 4, 4, 2, 6]] and traces.cluster_size == 6
    log.write_text("0,1\n60000,two\n")
    with pytest.raises(TraceError, match="not a count log"):
        load_capacity_traces(log)
    log.write_text("0,1\n60000,2.5\n")
    with pytest.raises(TraceError, match="line 2: node counts must be whole numbers"):
        load_capacity_traces(log)

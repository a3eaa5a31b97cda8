"""Bench results kept next to the store they were run for, for the dashboard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spotwise.policy.errors import PolicyError
from spotwise.policy.lab.bench import BenchRow, BenchSummary, last_summary, save_summary


def summary(ratio: float) -> BenchSummary:
    """A multi-zone summary of one greedy row at ``ratio``."""
    row = BenchRow(mean_cost_ratio=ratio, p90_cost_ratio=ratio, deadline_miss_rate=0.0, n_jobs=3)
    return BenchSummary(zones="multi", results={"all": {"greedy": row}})


def test_two_stores_in_one_folder_keep_their_own_bench(tmp_path: Path) -> None:
    first, second = tmp_path / "market.duckdb", tmp_path / "other.duckdb"
    save_summary(summary(0.5), first)
    assert last_summary(second, "multi") is None  # not the other store's
    save_summary(summary(0.7), second)
    kept = last_summary(first, "multi")
    assert kept is not None and kept.results["all"]["greedy"].mean_cost_ratio == 0.5
    assert kept.saved_at is not None and kept.saved_at.startswith("20")
    assert last_summary(first, "single") is None


def test_a_kept_summary_reads_back_as_the_json_it_was(tmp_path: Path) -> None:
    store = tmp_path / "market.duckdb"
    bound = BenchRow(
        mean_cost_ratio=0.3, p90_cost_ratio=0.4, deadline_miss_rate=0.0, n_jobs=2, lower_bound=True
    )
    nodes = BenchSummary(zones="multi", nodes=4, results={"all": {"omniscient": bound}})
    assert BenchSummary.from_dict(nodes.to_dict(), "here") == nodes
    path = save_summary(summary(0.5), store)
    kept = last_summary(store, "multi")
    assert kept is not None and kept.to_dict() == json.loads(path.read_text())


@pytest.mark.parametrize(
    ("doc", "says"),
    [
        ("[1, 2]", "not a bench summary"),
        ("{not json", "not a bench summary"),
        ('{"zones": "both", "results": {}}', "zones must be single or multi, got 'both'"),
        ('{"zones": "multi", "results": []}', "results must map keys to policies"),
        ('{"zones": "multi", "results": {"all": {"greedy": 1}}}', "results.all.greedy: not a"),
        (
            '{"zones": "multi", "results": {"all": {"greedy": {"mean_cost_ratio": "low"}}}}',
            "results.all.greedy: mean_cost_ratio must be a number, got 'low'",
        ),
    ],
)
def test_a_kept_file_that_is_no_summary_says_which_and_why(
    tmp_path: Path, doc: str, says: str
) -> None:
    store = tmp_path / "market.duckdb"
    kept = tmp_path / "market.bench-policy-multi.json"
    kept.write_text(doc)
    with pytest.raises(PolicyError) as raised:
        last_summary(store, "multi")
    assert str(raised.value).startswith(str(kept)) and says in str(raised.value)

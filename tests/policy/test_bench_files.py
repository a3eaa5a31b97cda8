"""Bench results kept next to the store they were run for, for the dashboard."""

from __future__ import annotations

from pathlib import Path

from spotwise.policy.bench import last_summary, save_summary


def test_two_stores_in_one_folder_keep_their_own_bench(tmp_path: Path) -> None:
    first, second = tmp_path / "market.duckdb", tmp_path / "other.duckdb"
    save_summary({"zones": "multi", "results": {"all": {"greedy": 1}}}, first)
    assert last_summary(second, "multi") is None  # not the other store's
    save_summary({"zones": "multi", "results": {"all": {"greedy": 2}}}, second)
    kept = last_summary(first, "multi")
    assert kept is not None and kept["results"]["all"]["greedy"] == 1
    assert kept["saved_at"].startswith("20")
    assert last_summary(first, "single") is None

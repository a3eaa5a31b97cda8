"""`spotwise demo --json`: the main job end to end on the bundled data."""

from __future__ import annotations

import json

import pytest

from tests.conftest import CliRun, summary_json


@pytest.mark.slow
def test_demo_trains_through_preemptions_and_a_migration_and_resumes_bit_exactly(
    cli: CliRun,
) -> None:
    result = cli("demo", "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["completed"] is True
    # The replay runs on the job's steps, so the course is the same on any machine.
    assert (report["preemptions"], report["migrations"]) == (3, 2)
    assert report["ledger"]["placements"] == [
        "spot in us-east-1f_v100_1",
        "spot in us-east-1d_v100_1",
        "spot in us-east-1c_v100_1",
        "spot in us-east-2b_v100_1",
        "spot in us-east-1f_v100_1",
        "on-demand",
    ]
    assert report["bitwise_identical"] is True
    assert report["ledger"]["simulated"] is True  # its dollars are a replay's, and say so
    assert "36 cloud s a training step" in report["ledger"]["simulation"]
    assert 0 < report["cost_usd"] < report["on_demand_cost_usd"]
    # each pool's spot price is the store's, with its source and time
    spot = report["ledger"]["prices"]["spot"]
    assert all(q["source"].startswith("store: ") and q["as_of"] for q in spot.values())
    summary = summary_json(cli)  # it loaded the bundled data and fitted forecasts
    forecasts = summary.get("operational", summary)["tables"]["forecasts"]  # (PostgreSQL's)
    assert summary["tables"]["prices"] > 20_000 and forecasts > 0
    listed = cli("jobs", "list", "--json")
    assert report["job_id"] in [j["job_id"] for j in json.loads(listed.stdout)]

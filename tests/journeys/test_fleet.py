"""A fleet file typed from docs/fleets.md: three of the stranger's own jobs under a budget with
room for one: they run in turn within it, the waiting ones say why, and `fleet status` shows
them done by tier."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from tests.journeys.conftest import Stranger


@pytest.mark.slow
def test_a_fleet_under_a_budget_smaller_than_its_jobs_runs_them_within_it(
    stranger: Stranger,
) -> None:
    home, python, script = stranger.home, sys.executable, stranger.script
    jobs = "".join(
        textwrap.dedent(
            f"""
              - name: {name}
                priority: {tier}
                compute_hours: 0.3
                deadline_hours: 4
                command: [{python}, {script}, {home / ("ck-" + name)}, {home / (name + ".txt")}]
            """
        )
        for name, tier in (("train-a", "normal"), ("train-b", "normal"), ("backfill", "low"))
    )
    (home / "fleet.yaml").write_text(f"name: mine\nbudget_usd_per_hour: 1\njobs:{jobs}")
    run = stranger.spotwise("fleet", "run", "fleet.yaml", "--scale", "360", timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    waits = [line for line in run.stderr.splitlines() if "waits: the budget 1.00 $/h" in line]
    assert waits, run.stderr[-3000:]
    assert "goes over the budget for" not in run.stderr  # never over it
    for name in ("train-a", "train-b", "backfill"):
        assert (home / f"{name}.txt").exists()
    status = stranger.spotwise("fleet", "status", "mine", "--json")
    assert status.returncode == 0, status.stderr
    rows = json.loads(status.stdout)["jobs"]
    assert sorted((r["tier"], r["status"]) for r in rows) == [
        ("low", "completed"),
        ("normal", "completed"),
        ("normal", "completed"),
    ]

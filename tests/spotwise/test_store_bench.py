"""`spotwise bench store`: processes reading and writing one store at once, their waits, and
whether every ledger kept what its supervisor wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import CliRun


@pytest.mark.slow  # a dozen processes for a few seconds
def test_bench_store_reports_each_roles_waits_and_loses_no_ledger_write(
    cli: CliRun, store_file: Path
) -> None:
    result = cli(
        *("bench", "store", "--seconds", "4", "--readers", "1", "--supervisors", "2"),
        *("--kills", "1", "--json", "--store", str(store_file)),
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    # the writer killed was started again: five processes and its replacement
    assert report["processes"]["reader"] == 1 and sum(report["processes"].values()) == 6
    assert report["killed"] == 1 and report["errors"] == [] and report["raw_driver_text"] == []
    assert report["ledgers"] >= 2 and report["ledgers_short"] == {}
    assert report["wait_s"]["supervisor"]["calls"] > 0
    assert report["calls"] == sum(role["calls"] for role in report["wait_s"].values())

"""``spotwise data``: load, summarise and export the market store, through the CLI."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from spotwise.executor.ledger.ledger import EntryKind, JobInfo, JobStatus, Ledger
from tests.conftest import DATA, CliRun, summary_json

BUNDLED_SOURCES = {
    "aws-price-history",
    "bamboo-aws-counts",
    "bamboo-events",
    "bamboo-gcp-counts",
    "cbl-availability-16node",
    "cbl-availability-1node",
    "cbl-preemption-1node",
    "cbl-prices",
    "gcp-prices",
    "parcae",
    "spot-advisor",
}


@pytest.fixture
def cli(cli_in_process: CliRun) -> CliRun:
    """Commands whose arguments, messages and output are under test run in process."""
    return cli_in_process


@pytest.mark.slow
def test_load_reports_every_bundled_source_and_a_second_load_changes_nothing(cli: CliRun) -> None:
    first = cli("data", "load")
    assert first.returncode == 0, first.stderr
    summary = summary_json(cli)
    assert set(summary["sources"]) == BUNDLED_SOURCES
    assert summary["tables"]["availability"] > 300_000
    assert summary["sources"]["aws-price-history"]["prices"]["series"] == 98
    second = cli("data", "load")
    assert second.returncode == 0, second.stderr
    assert "loaded 55 files: 0 new" in second.stderr.replace("\n", " ")
    assert summary_json(cli) == summary


def test_export_writes_parquet_of_a_table(cli: CliRun, tmp_path: Path, store_file: Path) -> None:
    assert cli("data", "load", str(DATA / "traces" / "bamboo")).returncode == 0
    ledger_of_a_job = Ledger(
        store_file,
        JobInfo(
            name="x",
            command="x",
            launcher="local",
            compute_hours=1.0,
            deadline_hours=2.0,
            on_demand_price=3.0,
            simulated=True,
        ),
    )
    ledger_of_a_job.record(EntryKind.CHECKPOINT, nbytes=10, detail="one")
    ledger_of_a_job.finish(JobStatus.COMPLETED)
    target = tmp_path / "events.parquet"
    result = cli("data", "export", "--table", "events", "--parquet", str(target))
    assert result.returncode == 0, result.stderr
    rows = duckdb.connect().execute(f"SELECT count(*) FROM '{target}'").fetchone()
    assert rows is not None and rows[0] == summary_json(cli)["tables"]["events"] > 0
    bad = cli("data", "export", "--table", "nope", "--parquet", str(target))
    assert bad.returncode != 0 and "unknown table" in bad.stderr
    assert "jobs, ledger" in bad.stderr  # the executor's tables are the store's too
    ledger = tmp_path / "out" / "ledger.parquet"
    result = cli("data", "export", "--table", "ledger", "--parquet", str(ledger))
    assert result.returncode == 0, result.stderr
    columns = duckdb.connect().execute(f"DESCRIBE SELECT * FROM '{ledger}'").fetchall()
    assert {c[0] for c in columns} >= {"job_id", "kind", "cost_usd"}
    kinds = duckdb.connect().execute(f"SELECT job_id, kind FROM '{ledger}'").fetchall()
    assert kinds == [
        (ledger_of_a_job.job_id, "checkpoint")
    ]  # the ledger's rows, not an empty table


def test_summary_of_a_missing_store_says_how_to_fill_it(cli: CliRun) -> None:
    result = cli("data", "summary")
    assert result.returncode != 0
    assert "spotwise data load" in result.stderr


def test_a_trace_with_no_date_is_summarised_in_hours_from_its_start_never_as_1970(
    cli: CliRun,
) -> None:
    assert cli("data", "load", str(DATA / "traces" / "parcae")).returncode == 0
    text = cli("data", "summary")
    assert text.returncode == 0 and "1970" not in text.stdout
    assert "+0 h" in text.stdout and "trace whose files carry no date" in text.stdout
    (parcae,) = summary_json(cli)["sources"]["parcae"].values()
    assert parcae["relative_time"] is True

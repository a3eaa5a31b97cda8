"""The jobs page, run by Streamlit's AppTest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spotwise.executor.ledger.ledger import EntryKind, JobInfo, JobStatus, Ledger
from spotwise.executor.ledger.prices import PriceBook
from tests.dashboard.pages import fresh_cache, page  # noqa: F401 (fresh_cache: autouse)

# The session fixture builds a store with forecasts (~30 s): one xdist worker builds it once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("dashboard-store")]


def test_jobs_of_a_ledger_of_another_version_say_why_they_cannot_be_read(
    filled_store: Path, use_store, tmp_path: Path, operational_store: str
) -> None:
    """A store whose ledger is newer than this Spotwise holds jobs: the page says so and what
    to do, never "No supervised job yet"."""
    import shutil

    import duckdb

    if operational_store != "file":
        pytest.skip("the ledger's schema is the database's here")
    path = tmp_path / "newer.duckdb"
    shutil.copy(filled_store, path)
    with duckdb.connect(str(path)) as con:
        con.execute("UPDATE schemas SET version = version + 1 WHERE name = 'ledger'")
    use_store(path)
    app = page("jobs")
    app.run()
    assert not app.exception and not app.info
    shown = " ".join(e.value for e in app.error)
    assert "newer than this Spotwise" in shown and "upgrade Spotwise" in shown


def test_jobs_of_a_fleet_are_grouped_by_tier_with_their_money_labelled(
    tmp_path: Path, use_store
) -> None:
    store = tmp_path / "fleet.duckdb"
    for name, tier, cost in [("eval", "high", 3.06), ("a", "normal", 0.9), ("b", "low", 0.45)]:
        ledger = Ledger(
            store,
            JobInfo(
                name=name,
                command="python train.py",
                launcher="local",
                compute_hours=1,
                deadline_hours=2,
                on_demand_price=3.06,
                simulated=True,
                prices=PriceBook.flat(("z1",), 0.9, 3.06),
                fleet="nightly",
                tier=tier,
            ),
        )
        ledger.record(EntryKind.INSTANCE, pool="z1", market="spot", hours=1, cost_usd=cost)
        ledger.finish(JobStatus.COMPLETED if tier != "low" else JobStatus.FAILED)
    use_store(store)
    app = page("jobs").run()
    assert not app.exception
    assert "Fleets by tier" in [h.value for h in app.subheader]
    table = next(
        d.value for d in app.dataframe if "tier" in d.value.columns and "jobs" in d.value.columns
    )
    rows = table[["tier", "money", "jobs", "completed", "cost_usd"]].to_dict("records")
    assert rows == [
        {"tier": "high", "money": "simulated", "jobs": 1, "completed": 1, "cost_usd": 3.06},
        {"tier": "normal", "money": "simulated", "jobs": 1, "completed": 1, "cost_usd": 0.9},
        {"tier": "low", "money": "simulated", "jobs": 1, "completed": 0, "cost_usd": 0.45},
    ]


def _job(store: Path, name: str, status: JobStatus, **placed: Any) -> str:
    """A simulated job of an hour on spot in ``store``, ended with ``status``; its id."""
    ledger = Ledger(
        store,
        JobInfo(
            name=name,
            command="python train.py",
            launcher="local",
            compute_hours=1,
            deadline_hours=2,
            on_demand_price=3.06,
            simulated=True,
            prices=PriceBook.flat(("z1",), 0.9, 3.06),
            **placed,
        ),
    )
    ledger.record(EntryKind.INSTANCE, pool="z1", market="spot", hours=1, cost_usd=0.9)
    ledger.finish(status)
    return ledger.job_id


def test_the_page_opens_on_the_newest_job_that_did_its_work_not_a_failed_task(
    tmp_path: Path, use_store
) -> None:
    """A work queue's tasks failed after a job completed: the page opens on the completed
    job, says what a failed job is, and no cell of its tables reads None."""
    store = tmp_path / "queue.duckdb"
    done = _job(store, "train", JobStatus.COMPLETED)
    failed = [
        _job(store, f"queue-1 trial {n}", JobStatus.FAILED, sweep="queue-1", trial=n)
        for n in range(2)
    ]
    use_store(store)
    app = page("jobs").run()
    assert not app.exception
    (chooser,) = app.selectbox
    assert (
        chooser.value == done
        and chooser.options[0] == f"{failed[-1]}: queue-1 trial 1 (failed, local)"
    )
    for table in (d.value for d in app.dataframe):
        assert not table.isna().any().any(), table
        assert "None" not in table.astype(str).to_numpy(), table
    chooser.set_value(failed[-1]).run()
    said = " ".join(c.value for c in app.caption)
    assert (
        f"Status: failed: its command ended with an error (`spotwise jobs logs {failed[-1]}`"
        in said
    )


def test_the_jobs_table_names_a_fleet_s_tier_and_says_when_a_job_has_none(
    tmp_path: Path, use_store
) -> None:
    store = tmp_path / "mixed.duckdb"
    alone = _job(store, "alone", JobStatus.COMPLETED)
    _job(store, "eval", JobStatus.COMPLETED, fleet="nightly", tier="high")
    use_store(store)
    app = page("jobs").run()
    table = next(d.value for d in app.dataframe if "job_id" in d.value.columns)
    fleets = dict(zip(table.job_id, table.fleet, strict=True))
    assert fleets[alone] == "—" and set(fleets.values()) == {"—", "nightly (high)"}

"""The jobs page, run by Streamlit's AppTest."""

from __future__ import annotations

from pathlib import Path

import pytest

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
    from spotwise.executor.ledger.ledger import EntryKind, JobInfo, JobStatus, Ledger
    from spotwise.executor.ledger.prices import PriceBook

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

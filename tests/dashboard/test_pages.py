"""Every dashboard page rendered by Streamlit's AppTest on the bundled data and on an empty or
missing store."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from spotwise.dashboard import data
from spotwise.pricing.store import MarketStore

# The session fixture builds a store with forecasts (~30 s): one xdist worker builds it once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("dashboard-store")]

PAGES = ["market", "risk", "plan", "policies", "jobs"]


def page(name: str) -> AppTest:
    script = f"from dashboard.screens import {name}\n{name}.render()"
    return AppTest.from_string(script, default_timeout=120)


def charts(app: AppTest) -> int:
    return len(app.get("vega_lite_chart")) + len(app.get("arrow_vega_lite_chart"))


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    import streamlit as st

    st.cache_data.clear()


@pytest.mark.parametrize("name", PAGES)
def test_each_page_draws_its_main_chart_on_the_bundled_data(
    name: str, filled_store: Path, use_store
) -> None:
    use_store(filled_store)
    app = page(name)
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    assert not app.error
    assert charts(app) >= 1


def test_a_job_shows_its_baseline_and_every_price_with_its_source(
    filled_store: Path, use_store
) -> None:
    use_store(filled_store)
    app = page("jobs")
    app.run()
    assert "Simulated" in " ".join(c.value for c in app.caption)
    assert any("2.10 h the job needed" in c.value for c in app.caption)
    prices = next(d.value for d in app.dataframe if "source" in d.value.columns)
    assert set(prices["source"]) == {"reference p3.2xlarge price (not a quote)"}
    assert app.metric[0].delta == "50.4% saved"  # $3.19 against 2.1 h × $3.06 = $6.43


def test_market_filters_narrow_the_series(filled_store: Path, use_store) -> None:
    use_store(filled_store)
    app = page("market")
    app.run()
    app.selectbox[0].set_value("gcp").run()
    series = app.selectbox[3].options
    assert series and all(s.startswith("gcp:") for s in series)


def test_plan_follows_the_inputs(filled_store: Path, use_store) -> None:
    use_store(filled_store)
    app = page("plan")
    app.run()
    first = app.metric[1].value
    app.number_input[0].set_value(56.0).run()  # more GPU-hours cost more
    assert not app.exception
    assert app.metric[1].value != first
    app.number_input[0].set_value(400.0).run()  # more work than the deadline allows
    assert "deadline" in app.warning[0].value and not app.metric


def test_the_policy_bench_runs_from_the_page_with_a_progress_bar(
    tmp_path: Path, filled_store: Path, use_store
) -> None:
    target = tmp_path / "market.duckdb"
    target.write_bytes(filled_store.read_bytes())  # same data, no saved bench
    use_store(target)
    app = page("policies")
    app.run()
    assert charts(app) == 0 and "No bench result" in app.info[0].value
    app.radio[0].set_value("multi").run()
    app.multiselect[0].set_value(["greedy"]).run()
    app.button[0].click().run()
    assert not app.exception
    assert charts(app) == 1


@pytest.mark.parametrize("name", PAGES)
@pytest.mark.parametrize("state", ["missing", "empty"])
def test_an_empty_or_missing_store_says_how_to_load_data(
    name: str, state: str, tmp_path: Path, use_store, empty_operational_store: None
) -> None:
    path = tmp_path / "market.duckdb"
    if state == "empty":
        MarketStore.open(path).close()
    use_store(path)
    app = page(name)
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    shown = " ".join(i.value for i in app.info)
    assert "spotwise data load" in shown or "spotwise demo" in shown or "bench" in shown
    assert not path.exists() or state == "empty"  # a missing store is not created


def test_a_store_that_cannot_be_read_says_why_instead_of_asking_for_data(
    tmp_path: Path, use_store
) -> None:
    path = tmp_path / "market.duckdb"
    path.write_bytes(b"not a duckdb file")
    use_store(path)
    app = page("market")
    app.run()
    assert not app.exception and not app.info
    assert str(path) in " ".join(e.value for e in app.error)


def test_the_app_navigates_to_every_page(filled_store: Path, use_store) -> None:
    use_store(filled_store)
    app = AppTest.from_file(str(Path(data.__file__).with_name("app.py")), default_timeout=120)
    app.run()
    assert not app.exception
    assert app.header[0].value == "Market"

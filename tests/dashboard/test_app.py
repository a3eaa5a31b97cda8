"""Every dashboard page rendered by Streamlit's AppTest on the bundled data and on an empty or
missing store."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from spotwise.dashboard import data
from spotwise.pricing.store import MarketStore
from tests.dashboard.pages import charts, fresh_cache, page  # noqa: F401 (fresh_cache: autouse)

# The session fixture builds a store with forecasts (~30 s): one xdist worker builds it once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("dashboard-store")]

PAGES = ["market", "risk", "plan", "policies", "jobs"]


@pytest.mark.parametrize("name", PAGES)
def test_each_page_draws_its_chart_with_the_labels_units_and_dates_a_reader_needs(
    name: str, filled_store: Path, use_store
) -> None:
    use_store(filled_store)
    app = page(name)
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    assert not app.error
    assert charts(app) >= 1
    LABELS[name](app)  # the labels, units and as_of dates a reader acts on


def jobs_show_the_baseline_and_every_price_with_its_source(app: AppTest) -> None:
    assert "Simulated" in " ".join(c.value for c in app.caption)
    assert any("2.10 h the job needed" in c.value for c in app.caption)
    prices = next(d.value for d in app.dataframe if "source" in d.value.columns)
    assert set(prices["source"]) == {"reference p3.2xlarge price (not a quote)"}
    saved = {m.label: m.value for m in app.metric}
    assert saved["Saved against on-demand"] == "50.4 %"  # $3.19 against 2.1 h × $3.06 = $6.43
    assert saved["Cost so far (simulated)"] == "$3.19"
    assert "1 simulated job: cost" in saved  # the total across jobs, never mixed with real ones
    assert not [m for m in app.metric if m.delta]  # no green arrow on a count
    sweeps = next(
        d.value for d in app.dataframe if "sweep" in d.value.columns and "trials" in d.value.columns
    )
    row = sweeps.iloc[0].to_dict()
    assert (row["sweep"], row["money"], row["trials"], row["completed"]) == (
        "lr-sweep",
        "simulated",
        1,
        1,
    )
    assert round(row["cost_usd"], 2) == 3.19 and round(row["on_demand_cost_usd"], 2) == 6.43


def specs(app: AppTest) -> list[dict]:
    """The Vega-Lite specs of the page's charts."""
    import json

    found = [*app.get("vega_lite_chart"), *app.get("arrow_vega_lite_chart")]
    return [json.loads(chart.proto.spec) for chart in found]


def encodings(spec: dict) -> list[dict]:
    layers = spec.get("layer", [spec])
    return [layer.get("encoding", {}) for layer in layers]


def risk_states_its_horizon_units_and_the_dates_its_inputs_end(app: AppTest) -> None:
    assert "within 60 minutes" in " ".join(h.value for h in app.subheader)
    captions = " ".join(c.value for c in app.caption)
    assert "were down when their trace ends" in captions and "P = 1" in captions
    assert "2023-03-1" in captions  # the trace's end, not only when the forecast was made
    assert any("Stale" in w.value for w in app.warning)
    risk = next(e for spec in specs(app) for e in encodings(spec) if "p_preempt" in str(e))
    assert risk["x"]["title"] == "P(preempted within 60 min)" and risk["x"]["axis"]["format"]
    assert risk["y"]["axis"]["labelLimit"] >= 300  # whole pool names, not cut
    band = next(e for spec in specs(app) for e in encodings(spec) if "band" in str(e.get("y")))
    assert band["y"]["axis"]["values"] == [0, 1, 2, 3, 4]  # whole bands, no 0.5


def plan_names_its_pool_whole_in_usd_with_sources_dates_and_the_next_step(app: AppTest) -> None:
    clouds = [m.value for m in app.markdown if m.value in ("**AWS**", "**GCP**", "**Azure**")]
    assert clouds == ["**AWS**", "**GCP**", "**Azure**"]  # side by side, one column each
    unpriced = " ".join(i.value for i in app.info)
    assert "spotwise collect azure --regions eastus --gpu A100" in unpriced
    assert app.code[0].value.startswith("spotwise run --launcher gcp --region ")
    (pick,) = [h.value for h in app.subheader if h.value.startswith("Recommended: ")]
    assert pick.startswith("Recommended: aws:") and pick.endswith(":p3.2xlarge")
    bars = next(e for spec in specs(app) for e in encodings(spec))
    assert bars["x"]["title"] == "expected cost, USD"
    table = next(d.value for d in app.dataframe)
    assert {"spot as of", "on-demand from", "MTBF from", "P(late on spot)", "stale"} <= set(
        table.columns
    )
    assert list(table["total $"]) == sorted(table["total $"])  # bars and table in one order
    assert set(table["MTBF from"]) <= {"trace", "prior", "default"}
    assert all(str(d).startswith("20") for d in table["spot as of"])
    (stale,) = [w.value for w in app.warning if "older than a week" in w.value]
    assert "`spotwise collect aws`" in stale  # the clouds of the stale pools
    assert app.code[-1].value.startswith("spotwise run --launcher aws --region ")


def policies_label_the_bound_and_the_policy_column(app: AppTest) -> None:
    spec = specs(app)[0]
    assert "omniscient (bound)" in spec["encoding"]["color"]["scale"]["domain"]
    table = next(d.value for d in app.dataframe)
    assert table.columns[0] == "pool" and "omniscient" in table.columns  # a row per pool
    assert "on this store" in app.caption[0].value


def market_says_it_caps_the_series_and_dates_its_prices(app: AppTest) -> None:
    captions = " ".join(c.value for c in app.caption)
    assert "series with the most price changes of the" in captions
    (stale,) = [w.value for w in app.warning if "Stale: the newest price here is of 20" in w.value]
    assert "`spotwise collect aws`" in stale  # the clouds of the prices shown
    assert any(
        h.value.startswith("AWS, GCP, Azure and Huawei Cloud side by side") for h in app.subheader
    )
    lines = next(e for spec in specs(app) for e in encodings(spec) if "price" in str(e.get("y")))
    assert lines["x"]["axis"]["format"] == "%Y-%m-%d"  # the year is on the axis
    sides = [d.value for d in app.dataframe if "gpu" not in d.value.columns]
    assert sides and all("spot_as_of" in d.columns for d in sides)  # the clouds side by side
    savings = next(d.value for d in app.dataframe if "gpu" in d.value.columns)
    gpu = list(savings["gpu"])
    assert gpu == sorted(gpu, reverse=True)  # GPU shapes lead


LABELS = {
    "market": market_says_it_caps_the_series_and_dates_its_prices,
    "risk": risk_states_its_horizon_units_and_the_dates_its_inputs_end,
    "plan": plan_names_its_pool_whole_in_usd_with_sources_dates_and_the_next_step,
    "policies": policies_label_the_bound_and_the_policy_column,
    "jobs": jobs_show_the_baseline_and_every_price_with_its_source,
}


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

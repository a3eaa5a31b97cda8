"""The risk page, run by Streamlit's AppTest."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from spotwise.pricing.operational import open_operational
from spotwise.pricing.views import risk_forecasts
from tests.dashboard.pages import fresh_cache, page  # noqa: F401 (fresh_cache: autouse)

# The session fixture builds a store with forecasts (~30 s): one xdist worker builds it once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("dashboard-store")]


def test_the_risk_forecast_draws_only_pools_with_a_forecast_and_names_the_others(
    filled_store: Path, use_store
) -> None:
    """A pool down when its trace ends has no run to forecast (P = 1): it was drawn as a
    full grey bar; now it is named in the caption, and only forecast pools are drawn."""
    with open_operational(filled_store, read_only=True) as store:
        risk = risk_forecasts(store)
    pools = risk.pool.str.removesuffix(":spot")
    down = set(pools[risk.p_preempt >= 1.0])
    assert down and len(down) < len(risk)  # the bundled traces end with some pools down
    use_store(filled_store)
    app = page("risk").run()
    assert not app.exception
    drawn = next(frame for frame in _chart_data(app) if "p_preempt" in frame.columns)
    assert set(drawn.pool) == set(pools) - down
    said = " ".join(c.value for c in app.caption)
    assert f"Not drawn: {len(down)} were down when their trace ends" in said
    assert all(pool in said for pool in down)


def _chart_data(app: AppTest) -> list[pd.DataFrame]:
    """The data of each chart on the page."""
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    charts = [*app.get("vega_lite_chart"), *app.get("arrow_vega_lite_chart")]
    return [
        convert_arrow_bytes_to_pandas_df(data.data.data)
        for chart in charts
        for data in chart.proto.datasets
    ]

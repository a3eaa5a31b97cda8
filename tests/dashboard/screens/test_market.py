"""The market page, run by Streamlit's AppTest."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.dashboard.pages import fresh_cache, page  # noqa: F401 (fresh_cache: autouse)

# The session fixture builds a store with forecasts (~30 s): one xdist worker builds it once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("dashboard-store")]


def test_market_filters_narrow_the_series(filled_store: Path, use_store) -> None:
    use_store(filled_store)
    app = page("market")
    app.run()
    app.selectbox[0].set_value("gcp").run()
    series = app.selectbox[3].options
    assert series and all(s.startswith("gcp:") for s in series)

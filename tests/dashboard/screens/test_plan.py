"""The plan page, run by Streamlit's AppTest."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.dashboard.pages import fresh_cache, page  # noqa: F401 (fresh_cache: autouse)

# The session fixture builds a store with forecasts (~30 s): one xdist worker builds it once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("dashboard-store")]


def test_plan_follows_the_inputs(filled_store: Path, use_store) -> None:
    use_store(filled_store)
    app = page("plan")
    app.run()
    hours = next(i for i in app.number_input if i.label == "GPU-hours")
    first = app.metric[-4].value  # the one type's expected cost, after the clouds' columns
    hours.set_value(56.0).run()  # more GPU-hours cost more
    assert not app.exception
    assert app.metric[-4].value != first
    hours = next(i for i in app.number_input if i.label == "GPU-hours")
    hours.set_value(400.0).run()  # more work than the deadline allows
    assert any("deadline" in w.value for w in app.warning)
    assert not [h for h in app.subheader if h.value.startswith("Recommended")]

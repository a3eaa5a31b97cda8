"""One dashboard page run by Streamlit's AppTest, its charts, and a cache cleared before each
test (import ``fresh_cache`` into a test module to use it there)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest


def page(name: str) -> AppTest:
    script = f"from dashboard.screens import {name}\n{name}.render()"
    return AppTest.from_string(script, default_timeout=120)


def charts(app: AppTest) -> int:
    return len(app.get("vega_lite_chart")) + len(app.get("arrow_vega_lite_chart"))


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    import streamlit as st

    st.cache_data.clear()

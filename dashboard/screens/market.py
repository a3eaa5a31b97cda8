"""Market: spot and on-demand price history per pool, forecasts with intervals, savings."""

from __future__ import annotations

import streamlit as st

from spotwise.dashboard import charts, data

ALL = "all"


def render() -> None:
    st.header("Market")
    if not data.store_ready():
        return
    options = data.filters()
    left, middle, right = st.columns(3)
    provider = left.selectbox("Provider", [ALL, *options["provider"]])
    region = middle.selectbox("Region", [ALL, *options["region"]])
    instance_type = right.selectbox("Instance type", [ALL, *options["instance_type"]])
    chosen = {
        "provider": None if provider == ALL else provider,
        "region": None if region == ALL else region,
        "instance_type": None if instance_type == ALL else instance_type,
    }
    history = data.view("price_history", **chosen)
    if history.empty:
        st.warning("No prices for this filter; widen it.")
        return
    st.subheader("Price history")
    st.altair_chart(charts.price_lines(history), width="stretch")
    series = st.selectbox("Forecast of", sorted(history.series.unique()))
    forecast = data.view("price_forecasts", series=[series])
    if forecast.empty:
        st.caption("No stored forecast for this series: run `spotwise forecast run`.")
    else:
        level = int(forecast.level.iloc[0])
        st.subheader(f"Forecast with {level}% intervals")
        st.altair_chart(
            charts.forecast_band(history[history.series == series], forecast),
            width="stretch",
        )
    saving = data.view("savings", provider=chosen["provider"])
    st.subheader("Spot savings against on-demand (newest prices)")
    if saving.empty:
        st.caption("No pool here has both a spot and an on-demand price.")
    else:
        st.dataframe(saving, hide_index=True, width="stretch")

"""Risk: spot availability per pool over time, Spot Advisor bands, the risk forecast and its
backtest score."""

from __future__ import annotations

import streamlit as st

from spotwise.dashboard import charts, data
from spotwise.pricing.views import DOWN_AT_END


def render() -> None:
    """The page: availability per pool, the risk forecast, then its backtest."""
    st.header("Preemption risk")
    if not data.store_ready():
        return
    sources = data.sources()
    if sources:
        default = (
            sources.index("cbl-availability-1node") if "cbl-availability-1node" in sources else 0
        )
        source = st.selectbox("Availability traces", sources, index=default)
        left, right = st.columns(2)
        hours = left.select_slider("Bucket (hours)", [1, 3, 6, 12, 24], value=6)
        days = right.select_slider("Last days of the traces", [3, 7, 14, 30, 60], value=30)
        frame = data.view("availability_by_hour", source=source, bucket_hours=hours, days=days)
        st.subheader("Share of time spot capacity was available")
        st.altair_chart(charts.heatmap(frame), width="stretch")
    risk = data.view("risk_forecasts")
    if risk.empty:
        st.subheader("Risk forecast")
        st.caption("No risk forecast stored: run `spotwise forecast run`.")
    else:
        horizon = int(risk.horizon_minutes.iloc[0])
        st.subheader(f"Risk forecast: P(preempted within {horizon} minutes) per pool")
        up = risk[risk.state != DOWN_AT_END]
        if up.empty:
            st.caption("No pool was up when its trace ends: no run to forecast.")
        else:
            st.altair_chart(charts.risk_bars(up, horizon), width="stretch")
        down = sorted(risk.pool[risk.state == DOWN_AT_END].str.removesuffix(":spot"))
        newest, oldest = risk.as_of.max(), risk.as_of.min()
        st.caption(
            f"Forecast by the '{risk.model.iloc[0]}' model, made "
            f"{risk.created_at.max():%Y-%m-%d %H:%M} UTC from each pool's trace as it ends "
            f"({oldest:%Y-%m-%d} to {newest:%Y-%m-%d}). {len(up)} of {len(risk)} pools were up "
            "then and are drawn. "
            + (
                f"Not drawn: {len(down)} were down when their trace ends, so a job there has "
                "no run to lose (P = 1: the plan waits or looks elsewhere): "
                f"{', '.join(down)}."
                if down
                else ""
            )
        )
        if data.stale(newest):
            st.warning(
                f"Stale: the newest trace ends {newest:%Y-%m-%d}, more than a week ago. These "
                "are the risks of then, not of now.",
                icon="⚠️",
            )
    st.subheader("Backtest of the risk forecast the decisions read")
    with st.spinner("backtesting…"):
        result = data.risk_backtest()
    name = result.shipped_forecaster
    st.caption(
        f"The '{name}' forecaster (the one behind the forecasts above, the policies and the "
        "checkpoint interval), fitted before hour 480 of the bundled aws-02-15-2023 traces and "
        "updated tick by tick after it, 60-minute horizon (the same code as "
        f"`spotwise bench risk`; the training ticks alone would choose "
        f"'{result.forecaster_choice}')."
    )
    left, middle, right = st.columns(3)
    model = result.forecasters[name]
    left.metric(
        f"AUC ({name})",
        f"{model['auc']:.3f}",
        f"{model['auc'] - result.persistence_auc:+.3f} vs persistence",
    )
    middle.metric(
        f"Brier ({name})",
        f"{model['brier']:.3f}",
        f"{model['brier'] - result.climatology_brier:+.3f} vs climatology",
        delta_color="inverse",
    )
    right.metric("test ticks", f"{result.n:,}")
    bands = data.view(
        "advisor_bands", instance_type=st.text_input("Spot Advisor bands for", "p3.2xlarge")
    )
    st.subheader("Spot Advisor interruption band by region")
    if bands.empty:
        st.caption("No Spot Advisor data for this instance type.")
    else:
        st.altair_chart(charts.band_bars(bands), width="stretch")
        st.caption(
            "Share of running instances AWS interrupted in the trailing month: band 0 < 5 %, "
            "1 5–10 %, 2 10–15 %, 3 15–20 %, 4 > 20 %. Snapshot of "
            f"{bands.observed.max():%Y-%m-%d}."
        )

"""Chart builders (Altair): plain functions from frames to interactive charts."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd


def price_lines(history: pd.DataFrame) -> alt.Chart:
    """Price change points per series as step lines."""
    return (
        alt.Chart(history)
        .mark_line(interpolate="step-after")
        .encode(
            x=alt.X("ts:T", title="time"),
            y=alt.Y("price:Q", title="USD per hour"),
            color=alt.Color("series:N", legend=alt.Legend(orient="bottom", columns=2)),
            tooltip=["series", "ts:T", "price:Q"],
        )
        .interactive()
    )


def forecast_band(
    history: pd.DataFrame, forecast: pd.DataFrame, *, days: float = 7
) -> alt.LayerChart:
    """One series' last ``days`` of history with each model's forecast mean and interval."""
    since = pd.Timestamp(forecast["ds"].min()) - pd.Timedelta(days=days)
    ts = pd.to_datetime(history["ts"], utc=True)
    # The price in force at ``since`` is the newest change before it: start the line there.
    first = max(int((ts < since).sum()) - 1, 0)
    recent = history.iloc[first:].assign(ts=ts.iloc[first:].clip(lower=since))
    past = (
        alt.Chart(recent)
        .mark_line(interpolate="step-after", color="black")
        .encode(
            x=alt.X("ts:T", title="time"),
            y=alt.Y("price:Q", title="USD per hour", scale=alt.Scale(zero=False)),
        )
    )
    band = (
        alt.Chart(forecast)
        .mark_area(opacity=0.2)
        .encode(x="ds:T", y="lo:Q", y2="hi:Q", color=alt.Color("model:N"))
    )
    mean = (
        alt.Chart(forecast)
        .mark_line()
        .encode(
            x="ds:T", y="mean:Q", color="model:N", tooltip=["model", "ds:T", "mean", "lo", "hi"]
        )
    )
    return (past + band + mean).interactive()


def heatmap(frame: pd.DataFrame) -> alt.Chart:
    """Share of time available, pool × time bucket."""
    return (
        alt.Chart(frame)
        .mark_rect()
        .encode(
            x=alt.X("bucket:T", title="time"),
            x2="bucket_end:T",
            y=alt.Y("pool:N", title=None),
            color=alt.Color(
                "available:Q",
                scale=alt.Scale(scheme="redyellowgreen", domain=[0, 1]),
                title="available",
            ),
            tooltip=["pool", "bucket:T", alt.Tooltip("available:Q", format=".0%")],
        )
    )


def bars(frame: pd.DataFrame, x: str, y: str, color: str | None = None, **kw: Any) -> alt.Chart:
    """A bar chart with tooltips."""
    encoding: dict[str, Any] = {"x": alt.X(x, sort="-y"), "y": y, "tooltip": list(frame.columns)}
    if color:
        encoding["color"] = color
    return alt.Chart(frame).mark_bar(**kw).encode(**encoding)


def policy_bars(summary: dict[str, Any]) -> alt.LayerChart:
    """Mean cost ratio per pool and policy, the omniscient bound as ticks."""
    rows = [
        {"pool": pool, "policy": name, "cost_ratio": stats["mean_cost_ratio"]}
        for pool, per_policy in summary["results"].items()
        for name, stats in per_policy.items()
    ]
    frame = pd.DataFrame(rows)
    policies = frame[frame.policy != "omniscient"]
    bound = frame[frame.policy == "omniscient"]
    chart = (
        alt.Chart(policies)
        .mark_bar()
        .encode(
            x=alt.X("pool:N", title=None),
            xOffset="policy:N",
            y=alt.Y("cost_ratio:Q", title="mean cost ratio (1 = on-demand)"),
            color="policy:N",
            tooltip=["pool", "policy", alt.Tooltip("cost_ratio:Q", format=".3f")],
        )
    )
    ticks = (
        alt.Chart(bound)
        .mark_tick(color="black", thickness=3, size=40)
        .encode(x="pool:N", y="cost_ratio:Q", tooltip=["pool", "cost_ratio"])
    )
    return chart + ticks

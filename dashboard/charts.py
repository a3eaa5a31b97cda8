"""Chart builders (Altair): plain functions from frames to interactive charts."""

from __future__ import annotations

from typing import TYPE_CHECKING

import altair as alt
import pandas as pd

if TYPE_CHECKING:
    from spotwise.policy.lab.bench import BenchSummary

DATE_AXIS = alt.Axis(format="%Y-%m-%d", labelAngle=0, title=None)
"""Time axes say the year: the bundled data is years old."""
PERCENT = alt.Axis(format="%")


def cost_parts(parts: pd.DataFrame) -> alt.Chart:
    """A job's cost by part beside its on-demand baseline, in USD, one labelled row each."""
    return (
        alt.Chart(parts)
        .mark_bar()
        .encode(
            y=alt.Y("part:N", sort=list(parts["part"]), title=None),
            x=alt.X("usd:Q", title="USD"),
            color=alt.Color("part:N", legend=None),
            tooltip=["part", alt.Tooltip("usd:Q", format="$,.2f")],
        )
    )


BOUND = "omniscient (bound)"


def price_lines(history: pd.DataFrame, *, log: bool = False) -> alt.Chart:
    """Price change points per series as step lines (``log``: a log scale, so one large
    instance type does not flatten the others)."""
    scale = alt.Scale(type="log") if log else alt.Scale(zero=False)
    return (
        alt.Chart(history)
        .mark_line(interpolate="step-after")
        .encode(
            x=alt.X("ts:T", axis=DATE_AXIS),
            y=alt.Y("price:Q", title="USD per hour" + (" (log scale)" if log else ""), scale=scale),
            color=alt.Color(
                "series:N", legend=alt.Legend(orient="bottom", columns=2, labelLimit=400)
            ),
            tooltip=["series", alt.Tooltip("ts:T", format="%Y-%m-%d %H:%M"), "price:Q"],
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
            x=alt.X("ts:T", axis=DATE_AXIS),
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
            x=alt.X("bucket:T", axis=DATE_AXIS),
            x2="bucket_end:T",
            y=alt.Y("pool:N", title=None, axis=alt.Axis(labelLimit=400)),
            color=alt.Color(
                "available:Q",
                scale=alt.Scale(scheme="redyellowgreen", domain=[0, 1]),
                title="available",
            ),
            tooltip=["pool", "bucket:T", alt.Tooltip("available:Q", format=".0%")],
        )
    )


def risk_bars(risk: pd.DataFrame, horizon_minutes: int) -> alt.Chart:
    """P(preempted within the horizon) per pool, one bar a row (the whole pool name), riskiest
    on top. Only pools up when their trace ends have a forecast to draw: the page names the
    others."""
    title = f"P(preempted within {horizon_minutes} min)"
    risk = risk.assign(pool=risk["pool"].str.removesuffix(":spot"))
    return (
        alt.Chart(risk)
        .mark_bar()
        .encode(
            x=alt.X("p_preempt:Q", title=title, scale=alt.Scale(domain=[0, 1]), axis=PERCENT),
            y=alt.Y("pool:N", sort="-x", title=None, axis=alt.Axis(labelLimit=400)),
            tooltip=[
                "pool",
                alt.Tooltip("p_preempt:Q", title=title, format=".0%"),
                alt.Tooltip("expected_hours_to_preemption:Q", title="MTBF h", format=".2f"),
                alt.Tooltip("as_of:T", title="trace ends", format="%Y-%m-%d %H:%M"),
            ],
        )
    )


def band_bars(bands: pd.DataFrame) -> alt.Chart:
    """The Spot Advisor band per region: whole bands only (0 < 5 % … 4 > 20 % a month)."""
    return (
        alt.Chart(bands)
        .mark_bar()
        .encode(
            x=alt.X("region:N", sort="-y", title=None, axis=alt.Axis(labelAngle=-30)),
            y=alt.Y(
                "band:Q",
                title="interruption band",
                scale=alt.Scale(domain=[0, 4]),
                axis=alt.Axis(values=[0, 1, 2, 3, 4], format="d"),
            ),
            color=alt.Color("savings_pct:Q", title="saving %"),
            tooltip=["region", "instance_type", "band", "savings_pct", "observed:T"],
        )
    )


def plan_bars(frame: pd.DataFrame) -> alt.Chart:
    """Each pool's expected cost, split into its parts, cheapest on top (the table's order)."""
    order = list(frame.drop_duplicates("pool")["pool"])
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            y=alt.Y("pool:N", sort=order, title=None, axis=alt.Axis(labelLimit=400)),
            x=alt.X("usd:Q", title="expected cost, USD", stack="zero"),
            color=alt.Color("part:N", title=None, legend=alt.Legend(orient="top")),
            order=alt.Order("part:N"),
            tooltip=["pool", "part", alt.Tooltip("usd:Q", format="$,.2f")],
        )
    )


def policy_bars(summary: BenchSummary) -> alt.Chart:
    """Mean cost ratio per pool and policy; the omniscient bound the black bar, with its own
    legend entry."""
    rows = [
        {
            "pool": pool,
            "policy": BOUND if name == "omniscient" else name,
            "cost_ratio": stats.mean_cost_ratio,
        }
        for pool, per_policy in summary.results.items()
        for name, stats in per_policy.items()
    ]
    frame = pd.DataFrame(rows)
    names = [n for n in dict.fromkeys(frame.policy) if n != BOUND]
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
    order = [*names, BOUND] if BOUND in set(frame.policy) else names
    color = alt.Color(
        "policy:N",
        title=None,
        sort=order,
        scale=alt.Scale(domain=order, range=[*palette[: len(names)], "black"][: len(order)]),
        legend=alt.Legend(orient="bottom", labelLimit=400),
    )
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X(
                "pool:N",
                title=None,
                axis=alt.Axis(labelAngle=-40, labelLimit=400, labelOverlap=False),
            ),
            xOffset=alt.XOffset("policy:N", sort=order),
            y=alt.Y("cost_ratio:Q", title="mean cost ratio (1 = on-demand)"),
            color=color,
            tooltip=["pool", "policy", alt.Tooltip("cost_ratio:Q", format=".3f")],
        )
    )

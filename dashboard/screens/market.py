"""Market: spot and on-demand price history per pool, forecasts with intervals, savings."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from spotwise.dashboard import charts, data
from spotwise.pricing.clouds.registry import PROFILES
from spotwise.pricing.collect_commands import collect_each

ALL = "all"
CLOUDS = tuple(PROFILES)
PER_CLOUD = 5
"""Rows per cloud in the side-by-side table."""
SIDE_COLUMNS = ("instance_type", "region", "spot_price", "saving_pct", "spot_as_of")


def render() -> None:
    """The page: the clouds side by side, then price history and forecasts."""
    st.header("Market")
    if not data.store_ready():
        return
    _clouds_side_by_side()
    _history()


def _titles(clouds: tuple[str, ...]) -> str:
    """The clouds as people write them, as a phrase: ``AWS, GCP and Azure``."""
    written = [PROFILES[cloud].title for cloud in clouds]
    return " and ".join([", ".join(written[:-1]), written[-1]] if len(written) > 1 else written)


def _clouds_side_by_side() -> None:
    """Each cloud's newest spot prices against on-demand, GPU shapes first, in one table (a
    third of the page is too narrow for a table of its own: its columns were cut); the clouds
    without such prices, with the command that collects them."""
    st.subheader(f"{_titles(CLOUDS)} side by side (newest prices, GPU shapes first)")
    rows, missing = [], []
    for cloud in CLOUDS:
        saving = data.view("savings", provider=cloud)
        if saving.empty:
            missing.append(cloud)
            continue
        kept = [c for c in SIDE_COLUMNS if c in saving.columns]
        rows.append(saving.head(PER_CLOUD)[kept].assign(cloud=PROFILES[cloud].title))
    if rows:
        shown = pd.concat(rows, ignore_index=True)
        st.dataframe(
            shown[["cloud", *[c for c in shown.columns if c != "cloud"]]],
            hide_index=True,
            width="stretch",
            column_config={
                "spot_price": st.column_config.NumberColumn("spot $/h", format="$%.3f"),
                "saving_pct": st.column_config.NumberColumn("saving", format="%.0f %%"),
                "spot_as_of": st.column_config.DatetimeColumn("as of", format="YYYY-MM-DD"),
            },
        )
    for cloud in missing:
        st.info(
            f"No {cloud} pool here has a spot and an on-demand price the savings view pairs: "
            f"`spotwise collect {cloud}`"
        )


def _filter() -> dict[str, str | None]:
    """The provider, region and instance type picked (None: all)."""
    options = data.filters()
    left, middle, right = st.columns(3)
    provider = left.selectbox("Provider", [ALL, *options["provider"]])
    region = middle.selectbox("Region", [ALL, *options["region"]])
    instance_type = right.selectbox("Instance type", [ALL, *options["instance_type"]])
    return {
        "provider": None if provider == ALL else provider,
        "region": None if region == ALL else region,
        "instance_type": None if instance_type == ALL else instance_type,
    }


def _warn_if_stale(history: pd.DataFrame) -> None:
    """A warning, with each shown cloud's collect command, when the newest price is stale."""
    newest = history.ts.max()
    if data.stale(newest):
        commands = collect_each(history.series.str.split(":").str[0])
        st.warning(
            f"Stale: the newest price here is of {newest:%Y-%m-%d}. Collect fresh ones with "
            f"{commands}.",
            icon="⚠️",
        )


def _history() -> None:
    """Price history, forecasts and savings of the filtered pools."""
    chosen = _filter()
    history = data.view("price_history", **chosen)
    if history.empty:
        st.warning("No prices for this filter; widen it.")
        return
    st.subheader("Price history")
    total = data.series_count(**chosen)
    shown = history.series.nunique()
    prices = history.price[history.price > 0]
    wide = not prices.empty and prices.max() / prices.min() > 10
    log = st.checkbox("Log scale", value=wide, help="One large instance type flattens the rest")
    st.altair_chart(charts.price_lines(history, log=log), width="stretch")
    if shown < total:
        st.caption(
            f"The {shown} series with the most price changes of the {total} this filter holds: "
            "narrow it (provider, region, instance type) to see the others."
        )
    _warn_if_stale(history)
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
    st.subheader("Spot savings against on-demand (newest prices, GPU shapes first)")
    if saving.empty:
        st.caption("No pool here has both a spot and an on-demand price.")
    else:
        st.dataframe(
            saving,
            hide_index=True,
            width="stretch",
            column_config={
                "spot_price": st.column_config.NumberColumn("spot $/h", format="$%.3f"),
                "on_demand_price": st.column_config.NumberColumn("on-demand $/h", format="$%.3f"),
                "saving_pct": st.column_config.NumberColumn("saving", format="%.1f %%"),
                "spot_as_of": st.column_config.DatetimeColumn("spot as of", format="YYYY-MM-DD"),
                "on_demand_as_of": st.column_config.DatetimeColumn(
                    "on-demand as of", format="YYYY-MM-DD"
                ),
            },
        )

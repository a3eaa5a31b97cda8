"""Jobs: the executor's ledger — cost so far, preemptions, migrations, lost work, savings."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pandas as pd
import streamlit as st

from spotwise.dashboard import charts, data


def render() -> None:
    st.header("Jobs")
    jobs = data.jobs()
    if jobs.empty:
        st.info("No supervised job yet: run `spotwise demo` or `spotwise run -- COMMAND`.")
        return
    st.dataframe(jobs, hide_index=True, width="stretch")
    job_id = st.selectbox("Job", list(jobs.job_id))
    report = data.job(job_id)
    a, b, c, d = st.columns(4)
    a.metric(
        "Cost so far",
        f"${report.cost_usd:,.2f}",
        f"{report.savings_pct:.1f}% saved",
    )
    b.metric("Preemptions", report.preemptions, f"{report.notices} notices", delta_color="off")
    c.metric("Migrations", report.migrations)
    d.metric("Lost work", f"{report.lost_work_hours:.2f} h")
    if report.simulated:
        st.caption("Simulated: hours and dollars of a replayed market, not a bill.")
    parts = pd.DataFrame(
        [
            {"part": part, "usd": usd}
            for part, usd in [
                *asdict(report.breakdown).items(),
                ("on-demand", report.on_demand_cost_usd),
            ]
        ]
    )
    st.subheader("Cost breakdown against running it all on demand")
    st.altair_chart(charts.bars(parts, "part:N", "usd:Q", color="part:N"), width="stretch")
    if report.prices:
        st.caption(
            f"On demand: the {report.hours_needed:.2f} h the job needed (instance hours less "
            f"work redone), each at the on-demand price of {report.prices['instance_type']} in "
            "the region it ran in. Every price, with where it came from and when it held:"
        )
        st.dataframe(price_table(report.prices), hide_index=True, width="stretch")
    markets = pd.DataFrame([{"market": m, **asdict(v)} for m, v in report.markets.items()])
    st.dataframe(markets, hide_index=True, width="stretch")


def price_table(prices: dict[str, Any]) -> pd.DataFrame:
    """One row per quote of a job's price book: market, pool or region, $/h, source, as of."""
    rows = [
        {"market": market, "where": place or "every pool", **quote}
        for market, by_place in (("spot", prices["spot"]), ("on-demand", prices["on_demand"]))
        for place, quote in by_place.items()
    ]
    return pd.DataFrame(rows).rename(columns={"usd_per_hour": "$/h", "as_of": "as of"})

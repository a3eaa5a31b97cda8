"""Jobs: the executor's ledger — cost so far, preemptions, migrations, lost work, savings."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

import pandas as pd
import streamlit as st

from spotwise.dashboard import charts, data
from spotwise.pricing.errors import PricingError

if TYPE_CHECKING:
    from spotwise.executor.ledger.ledger import JobReport
    from spotwise.executor.ledger.prices import PriceBook


USEFUL = ("running", "completed")
"""The statuses of a job worth opening the page on: it is running, or it did its work."""
STATUS_SAYS = {
    "running": "running: its cost so far, not its last",
    "failed": "failed: its command ended with an error (`spotwise jobs logs {job}` shows why); "
    "the hours it ran count as work lost",
    "cancelled": "cancelled before its work was done",
    "pruned": "pruned by its sweep: stopped for good before its work was done",
}
"""What the page says of a job that is not completed (``{job}``: its id)."""
UNDATED = "no date (not a quote)"
"""The ``as of`` of a price with no time of its own (a reference price)."""
NO_FLEET = "—"
"""The fleet cell of a job in no fleet, as the column's help says."""


def render() -> None:
    """The page: totals, sweeps, fleets, every job, then one job's report (the newest
    running or completed job first: a failed try of a queue's task has little to show)."""
    st.header("Jobs")
    jobs = _jobs()
    if jobs is None:
        return
    _totals()
    _sweeps()
    _fleets(jobs)
    shown = jobs_table(jobs)
    st.dataframe(
        shown,
        hide_index=True,
        width="stretch",
        column_config={
            "cost_usd": st.column_config.NumberColumn("cost", format="$%.2f"),
            "on_demand_hours": st.column_config.NumberColumn("on-demand h", format="%.2f"),
            "started": st.column_config.DatetimeColumn("started (UTC)", format="YYYY-MM-DD HH:mm"),
            "fleet": st.column_config.TextColumn(
                help=f"The fleet and the job's tier in it ({NO_FLEET}: none)"
            ),
        },
    )
    ids = list(jobs.job_id)
    labels = {
        row.job_id: f"{row.job_id}: {row.name} ({row.status}, {row.launcher})"
        for row in jobs.itertuples()
    }
    job_id = st.selectbox(
        "Job", ids, index=ids.index(first_job(jobs)), format_func=labels.__getitem__
    )
    _job(data.job(job_id))


def jobs_table(jobs: pd.DataFrame) -> pd.DataFrame:
    """The jobs as the page lists them, no empty cell and nothing said twice: a fleet's job
    with its fleet and tier in one column (left out when no job ran in a fleet;
    :data:`NO_FLEET` for a job that did not); the money real or simulated when both are
    there (the totals above say which it is otherwise). A sweep's job is named by its sweep
    and trial already; the launcher is in the job chooser below."""
    table = jobs.assign(money=["simulated" if s else "real" for s in jobs.simulated])
    columns = ["job_id", "name", "status", "cost_usd", "started"]
    if table.money.nunique() > 1:
        columns.insert(3, "money")
    if table.fleet.notna().any():
        table["fleet"] = [
            NO_FLEET if pd.isna(fleet) else f"{fleet} ({tier})"
            for fleet, tier in zip(table.fleet, table.tier, strict=True)
        ]
        columns.append("fleet")
    columns += ["preemptions", "migrations", "on_demand_hours"]
    if table.pending.any():
        columns.append("pending")
    return table[columns]


def first_job(jobs: pd.DataFrame) -> str:
    """The job the page opens on: the newest running or completed one, else the newest
    (``jobs`` is newest first)."""
    useful = jobs[jobs.status.isin(USEFUL)]
    return str((useful if not useful.empty else jobs).job_id.iloc[0])


def _jobs() -> pd.DataFrame | None:
    """The store's jobs, or None after saying why there are none to show."""
    try:
        jobs = data.jobs()
    except PricingError as exc:
        st.error(f"The jobs in this store cannot be read: {exc}")
        return None
    if jobs.empty:
        st.info("No supervised job yet: run `spotwise demo` or `spotwise run -- COMMAND`.")
        return None
    return jobs


def _totals() -> None:
    """Cost, the same hours on demand and the saving, per kind of money (real, simulated)."""
    totals = data.job_totals()
    for kind, total in totals.items():
        a, b, c = st.columns(3)
        a.metric(
            f"{total.jobs} {kind} job{'s' if total.jobs != 1 else ''}: cost",
            f"${total.cost_usd:,.2f}",
        )
        b.metric("The same hours on demand", f"${total.on_demand_usd:,.2f}")
        c.metric("Saved", f"{total.saved_pct:.1f} %")
    if "simulated" in totals:
        st.caption(
            "Simulated jobs ran on replayed markets: their dollars are what those hours would "
            "have cost, not a bill. They are never added to real ones."
        )


def _sweeps() -> None:
    """Each sweep's cost against the same hours on demand (nothing without sweeps)."""
    sweeps = data.sweeps()
    if sweeps.empty:
        return
    st.subheader("Sweeps")
    st.caption(
        "Each trial of a sweep is a supervised job; a trial retried (its worker died, its "
        "job failed) has more than one. Cost against the same hours on demand, per sweep."
    )
    st.dataframe(
        sweeps,
        hide_index=True,
        width="stretch",
        column_config={
            "started": st.column_config.DatetimeColumn("started (UTC)", format="YYYY-MM-DD HH:mm"),
            "cost_usd": st.column_config.NumberColumn("cost", format="$%.2f"),
            "on_demand_cost_usd": st.column_config.NumberColumn("on demand", format="$%.2f"),
            "saved_pct": st.column_config.NumberColumn("saved", format="%.1f %%"),
        },
    )
    st.subheader("Jobs")


def _fleets(jobs: pd.DataFrame) -> None:
    """The jobs of fleets per fleet and tier (nothing without fleets)."""
    fleets = fleet_tiers(jobs)
    if fleets.empty:
        return
    st.subheader("Fleets by tier")
    st.caption(
        "Jobs of a fleet share its budget: high priority gets what the policy decides, "
        "normal gets on-demand only while the budget has room (or its deadline asks), low "
        "runs only on spot. An elastic job keeps its rendezvous host and the floor its "
        "deadline asks for on on-demand."
    )
    st.dataframe(
        fleets,
        hide_index=True,
        width="stretch",
        column_config={"cost_usd": st.column_config.NumberColumn("cost", format="$%.2f")},
    )
    st.subheader("Jobs")


def _job(report: JobReport) -> None:
    """One job: its cost, saving, preemptions and migrations, and where its money went."""
    label = " (simulated)" if report.simulated else ""
    if report.status != "completed":
        says = STATUS_SAYS.get(report.status, report.status).format(job=report.job_id)
        st.caption(f"Status: {says}.")
    a, b, c, d = st.columns(4)
    a.metric(f"Cost so far{label}", f"${report.cost_usd:,.2f}")
    b.metric("Saved against on-demand", f"{report.savings_pct:.1f} %")
    c.metric("Preemptions", report.preemptions)
    d.metric("Migrations", report.migrations)
    st.caption(
        f"{report.notices} of the {report.preemptions} preemptions came with a notice; "
        f"{report.lost_work_hours:.2f} h of work was lost and redone."
        + (" Simulated: hours and dollars of a replayed market, not a bill." if label else "")
    )
    _breakdown(report, label)
    markets = pd.DataFrame([{"market": m, **asdict(v)} for m, v in report.markets.items()])
    st.dataframe(markets, hide_index=True, width="stretch")
    if report.nodes:
        st.subheader(f"Per node{label}")
        st.dataframe(_node_table(report), hide_index=True, width="stretch")


def _breakdown(report: JobReport, label: str) -> None:
    """The cost breakdown against all on demand, and every price with its source."""
    parts = pd.DataFrame(
        [
            {"part": part, "usd": usd}
            for part, usd in [
                *asdict(report.breakdown).items(),
                ("on-demand", report.on_demand_cost_usd),
            ]
        ]
    )
    st.subheader(f"Cost breakdown against running it all on demand, USD{label}")
    st.altair_chart(charts.cost_parts(parts), width="stretch")
    if report.prices:
        st.caption(
            f"On demand: the {report.hours_needed:.2f} h the job needed (instance hours less "
            f"work redone), each at the on-demand price of {report.prices.instance_type} in "
            "the region it ran in. Every price, with where it came from and when it held:"
        )
        st.dataframe(price_table(report.prices), hide_index=True, width="stretch")


def _node_table(report: JobReport) -> pd.DataFrame:
    """Hours and cost per node and market."""
    return pd.DataFrame(
        [
            {"node": node, "market": market, **asdict(use)}
            for node, by_market in report.nodes.items()
            for market, use in by_market.items()
        ]
    )


def fleet_tiers(jobs: pd.DataFrame) -> pd.DataFrame:
    """Jobs that ran in a fleet, per fleet and tier: how many, how many completed, cost and
    whether the money is real or simulated (never added together)."""
    if "fleet" not in jobs or jobs.fleet.isna().all():
        return pd.DataFrame()
    ran = jobs.dropna(subset=["fleet"]).assign(
        money=lambda f: ["simulated" if s else "real" for s in f.simulated],
        completed=lambda f: f.status == "completed",
        order=lambda f: f.tier.map({"high": 0, "normal": 1, "low": 2}),
    )
    grouped = ran.groupby(["fleet", "order", "tier", "money"], as_index=False).agg(
        jobs=("job_id", "count"), completed=("completed", "sum"), cost_usd=("cost_usd", "sum")
    )
    return grouped.drop(columns="order")


def price_table(prices: PriceBook) -> pd.DataFrame:
    """One row per quote of a job's price book: market, pool or region, $/h, source, as of
    (:data:`UNDATED` for a price that held at no known time: a reference one)."""
    rows = [
        {
            "market": market,
            "where": place or "every pool",
            **asdict(quote),
            "as_of": quote.as_of or UNDATED,
        }
        for market, by_place in (("spot", prices.spot), ("on-demand", prices.on_demand))
        for place, quote in by_place.items()
    ]
    return pd.DataFrame(rows).rename(columns={"usd_per_hour": "$/h", "as_of": "as of"})

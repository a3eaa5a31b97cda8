"""Policies: benchmark results per pool and policy against the omniscient bound."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from spotwise import policy
from spotwise.dashboard import charts, data
from spotwise.policy.errors import PolicyError
from spotwise.policy.lab.bench import BenchSummary


def render() -> None:
    """The page: the last bench of the chosen zones (or a form to run one), as bars and a table."""
    st.header("Policies against the omniscient bound")
    zones, summary = _saved_bench()
    summary = _run_form(zones, summary)
    if summary is None:
        st.info("No bench result yet: run one above or with `spotwise bench policy`.")
        return
    _results(summary)


def _saved_bench() -> tuple[str, BenchSummary | None]:
    """The zones mode chosen (a saved one first) and its last bench result, if any (a file
    that is not one: said, and none)."""
    modes = ["single", "multi"]
    saved = [mode for mode in modes if _kept(mode, quiet=True) is not None]
    zones = st.radio("Zones", modes, index=modes.index(saved[0]) if saved else 0, horizontal=True)
    summary = _kept(zones)
    if summary is not None:
        when = (summary.saved_at or "")[:16].replace("T", " ")
        st.caption(
            f"From the last `spotwise bench policy` run on this store ({when} UTC). Cost ratio "
            "= cost / cost on demand: 1 is all on demand, lower is cheaper; the black bar is "
            "the omniscient bound, the least any schedule could pay knowing the future."
        )
    return zones, summary


def _kept(zones: str, *, quiet: bool = False) -> BenchSummary | None:
    """The bench result kept for ``zones``; a file that is not one: none, and why (unless
    ``quiet``)."""
    try:
        return data.bench_summary(zones)
    except PolicyError as exc:
        if not quiet:
            st.error(str(exc))
        return None


def _run_form(zones: str, summary: BenchSummary | None) -> BenchSummary | None:
    """The form that runs the bench here; the result it ran, else ``summary``."""
    with st.expander("Run the bench here", expanded=summary is None):
        test_from = st.number_input("Test from hour", min_value=0.0, value=480.0, step=24.0)
        names = st.multiselect(
            "Policies",
            policy.names(),
            default=["greedy", "uniform_progress", "best", "omniscient"],
        )
        if st.button("Run", type="primary") and names:
            bar = st.progress(0.0, text="simulating")
            summary = data.run_policy_bench(
                zones, tuple(names), test_from, lambda done: bar.progress(done, text="simulating")
            )
            bar.empty()
    return summary


def _results(summary: BenchSummary) -> None:
    """The bars per pool and policy, and the mean cost ratios as a table: a row per pool, a
    column per policy (the pools outnumber the policies: a column each ran past the page)."""
    st.altair_chart(charts.policy_bars(summary), width="stretch")
    table = pd.DataFrame(
        {
            pool: {name: stats.mean_cost_ratio for name, stats in per_policy.items()}
            for pool, per_policy in summary.results.items()
        }
    ).T
    table = table.rename_axis("pool").reset_index()
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config={
            c: st.column_config.NumberColumn(format="%.3f") for c in table if c != "pool"
        },
    )

"""Plan: a what-if for one job, from the same code as ``spotwise plan``."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from spotwise.dashboard import charts, data
from spotwise.policy.cost import StorageTerms
from spotwise.policy.errors import PolicyError
from spotwise.policy.plan import PlanInputs


def render() -> None:
    st.header("Plan a job")
    if not data.store_ready():
        return
    left, middle, right = st.columns(3)
    gpu_hours = left.number_input("GPU-hours", min_value=1.0, value=48.0, step=8.0)
    deadline = middle.number_input("Deadline (hours)", min_value=1.0, value=60.0, step=8.0)
    instance_type = (
        right.selectbox(
            "Instance type", data.filters()["instance_type"], index=None, placeholder="p3.2xlarge"
        )
        or "p3.2xlarge"
    )
    left, middle, right = st.columns(3)
    checkpoint_gb = left.number_input("Checkpoint size (GB)", min_value=0.1, value=10.0)
    storage_price = middle.number_input(
        "Storage $/GB-month", min_value=0.0, value=StorageTerms().usd_per_gb_month, format="%.3f"
    )
    provider = right.selectbox("Provider", ["all", "aws", "gcp"])
    on_demand = st.number_input(
        "On-demand $/h (0 = from the store or estimated)", min_value=0.0, value=0.0
    )
    inputs = PlanInputs(
        gpu_hours=gpu_hours,
        deadline_hours=deadline,
        checkpoint_gb=checkpoint_gb,
        storage=StorageTerms(usd_per_gb_month=storage_price),
    )
    try:
        plan = data.plan(inputs, instance_type, provider, on_demand or None)
    except PolicyError as exc:
        st.warning(str(exc))
        return
    best = plan.best
    a, b, c = st.columns(3)
    a.metric("Recommended pool", best.pool.name)
    b.metric(
        "Expected cost",
        f"${best.cost.total:,.2f}",
        f"-{best.cost.saved_pct:.1f}% vs on-demand",
        delta_color="inverse",
    )
    c.metric(
        "Checkpoint every",
        f"{60 * best.checkpoint_interval_hours:.0f} min",
        f"{best.spot_share:.0%} on spot",
        delta_color="off",
    )
    rows = pd.DataFrame(
        [
            {
                "pool": p.pool.name,
                "compute": p.cost.compute,
                "storage": p.cost.storage,
                "recovery": p.cost.recovery,
                "on-demand": p.cost.on_demand,
                "spot share": p.spot_share,
                "MTBF h": p.pool.mtbf_hours,
            }
            for p in plan.pools[:10]
        ]
    )
    long = rows.melt(id_vars="pool", value_vars=["compute", "storage", "recovery"], var_name="part")
    st.subheader("Cost breakdown of the ten cheapest pools")
    st.altair_chart(charts.bars(long, "pool:N", "sum(value):Q", color="part:N"), width="stretch")
    st.dataframe(rows, hide_index=True, width="stretch")
    with st.expander("Assumptions"):
        for line in plan.assumptions:
            st.markdown(f"- {line}")

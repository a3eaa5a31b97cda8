"""Plan: a what-if for one job, from the same code as ``spotwise plan``."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from spotwise.dashboard import charts, data
from spotwise.policy.cost import StorageTerms
from spotwise.policy.errors import PolicyError
from spotwise.policy.plan import Plan, PlanInputs, next_step, price_sources
from spotwise.pricing.clouds.registry import PROFILES
from spotwise.pricing.collect_commands import collect_each

CLOUDS = tuple(PROFILES)


def render() -> None:
    """The page: the clouds side by side for one GPU, then the what-if of one type."""
    st.header("Plan a job")
    if not data.store_ready():
        return
    _clouds_side_by_side()
    st.divider()
    _one_type()


def _clouds_side_by_side() -> None:
    """``spotwise plan --gpu``: each cloud's cheapest equivalent shape in a column."""
    st.subheader("One GPU, three clouds")
    left, middle, right, far = st.columns(4)
    models = data.gpu_models()
    gpu = left.selectbox("GPU", models, index=models.index("A100") if "A100" in models else 0)
    count = int(middle.number_input("GPUs", min_value=1, max_value=16, value=1))
    gpu_hours = right.number_input("GPU-hours ", min_value=1.0, value=100.0, step=8.0)
    deadline = far.number_input("Deadline (hours) ", min_value=1.0, value=150.0, step=8.0)
    inputs = PlanInputs(gpu_hours=gpu_hours / count, deadline_hours=deadline)
    try:
        plan = data.plan_gpu(inputs, gpu, count)
    except PolicyError as exc:
        st.warning(str(exc))
        return
    for column, cloud in zip(st.columns(len(CLOUDS)), CLOUDS, strict=True):
        _cloud_column(column, cloud, plan, count)
    st.markdown(f"Run the cheapest ({plan.best.pool.provider}):")
    st.code(next_step(plan, inputs), language="bash", wrap_lines=True)


def _cloud_column(column: Any, cloud: str, plan: Plan, count: int) -> None:
    """One cloud's cheapest pool of the plan, or the command that collects its prices."""
    column.markdown(f"**{PROFILES[cloud].title}**")
    mine = [p for p in plan.pools if p.pool.provider == cloud]
    if not mine:
        why = plan.unpriced.get(cloud, "no shape of this GPU in the GPU table")
        column.info(f"No stored price. Collect one: `{why}`")
        return
    best = mine[0]
    pool = best.pool
    shape = pool.instance_type
    if pool.shape is not None and pool.shape.gpu_count != count:
        shape += f" ({pool.shape.gpu_count} GPUs: the whole machine is paid)"
    column.metric("Expected cost", f"${best.cost.total:,.2f}", f"{best.cost.saved_pct:.1f} % saved")
    column.caption(
        f"{shape} in {pool.zone or pool.region}; spot {pool.spot.describe()}; on demand "
        f"{pool.on_demand.describe()}; notice {pool.notice_s or 0:.0f} s; storage and egress "
        f"${best.cost.storage:,.2f}, recovery ${best.cost.recovery:,.2f}"
        + ("; stale inputs" if plan.stale(best) else "")
    )


def _one_type() -> None:
    """The what-if of one instance type, as ``spotwise plan --instance-type``."""
    inputs, instance_type, provider, on_demand = _one_type_inputs()
    try:
        plan = data.plan(inputs, instance_type, provider, on_demand or None)
    except PolicyError as exc:
        st.warning(str(exc))
        return
    _recommended(plan)
    _cheapest_pools(plan)
    st.markdown("Run it:")
    st.code(next_step(plan, inputs), language="bash", wrap_lines=True)
    with st.expander("Assumptions"):
        for line in plan.assumptions:
            st.markdown(f"- {line}")
        for name, why in plan.left_out.items():
            st.markdown(f"- left out {name}: {why}")


def _one_type_inputs() -> tuple[PlanInputs, str, str, float]:
    """The job, instance type, provider and on-demand price (0: the store's) typed in."""
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
    provider = right.selectbox("Provider", ["all", *CLOUDS])
    on_demand = st.number_input(
        "On-demand $/h for every region (0 = each region's from the store)",
        min_value=0.0,
        value=0.0,
    )
    inputs = PlanInputs(
        gpu_hours=gpu_hours,
        deadline_hours=deadline,
        checkpoint_gb=checkpoint_gb,
        storage=StorageTerms(usd_per_gb_month=storage_price),
    )
    return inputs, instance_type, provider, on_demand


def _recommended(plan: Plan) -> None:
    """The best pool's cost, saving, checkpoint interval and risk, and a stale-inputs warning."""
    best = plan.best
    st.subheader(f"Recommended: {best.pool.name}")
    a, b, c, d = st.columns(4)
    a.metric("Expected cost", f"${best.cost.total:,.2f}")
    b.metric("Saved against on-demand", f"{best.cost.saved_pct:.1f} %")
    c.metric("Checkpoint every", f"{60 * best.checkpoint_interval_hours:.0f} min")
    d.metric("P(spot alone is late)", f"{best.p_late_on_spot:.0%}")
    st.caption(
        f"{best.spot_share:.0%} of the work on spot, {best.pool.risk.describe()}. "
        f"Prices: {price_sources(best.pool)}. When spot alone would be late, the supervisor's "
        "on-demand fallback keeps the deadline."
    )
    stale = [p for p in plan.pools if plan.stale(p)]
    if stale:
        commands = collect_each(p.pool.provider for p in stale)
        st.warning(
            f"{len(stale)} of {len(plan.pools)} pools rest on inputs older than a week (on "
            f"{plan.made_at:%Y-%m-%d}): collect fresh prices with {commands} before acting on "
            "this plan.",
            icon="⚠️",
        )


def _cheapest_pools(plan: Plan) -> None:
    """The ten cheapest pools' expected cost as bars and as a table."""
    shown = plan.pools[:10]
    rows = pd.DataFrame(
        [
            {
                "pool": p.pool.name.removesuffix(f":{p.pool.instance_type}"),
                "total $": p.cost.total,
                "saved %": p.cost.saved_pct,
                "spot $/h": p.pool.spot_price,
                "spot as of": (p.pool.spot.as_of or "")[:10],
                "on-demand $/h": p.pool.on_demand_price,
                "on-demand from": p.pool.on_demand.kind,
                "MTBF h": p.pool.mtbf_hours,
                "MTBF from": p.pool.risk.kind,
                "P(late on spot)": 100 * p.p_late_on_spot,
                "spot share %": 100 * p.spot_share,
                "stale": ", ".join(plan.stale(p)),
            }
            for p in shown
        ]
    )
    parts = pd.DataFrame(
        [
            {"pool": p.pool.name, "part": part, "usd": usd}
            for p in shown
            for part, usd in (
                ("compute", p.cost.compute),
                ("recovery", p.cost.recovery),
                ("storage", p.cost.storage),
            )
        ]
    )
    st.subheader("Expected cost of the ten cheapest pools, in USD")
    st.altair_chart(charts.plan_bars(parts), width="stretch")
    money = st.column_config.NumberColumn(format="$%.2f")
    price = st.column_config.NumberColumn(format="$%.3f")
    st.dataframe(
        rows,
        hide_index=True,
        width="stretch",
        column_config={
            "pool": st.column_config.TextColumn(
                help="The cloud and the zone (or region); the instance type is the plan's"
            ),
            "total $": money,
            "saved %": st.column_config.NumberColumn(format="%.1f %%"),
            "spot $/h": price,
            "spot as of": st.column_config.TextColumn("as of", help="When the spot price held"),
            "on-demand $/h": price,
            "on-demand from": st.column_config.TextColumn(
                "from", help="Where the on-demand price comes from (see below)"
            ),
            "MTBF h": st.column_config.NumberColumn(format="%.2f"),
            "P(late on spot)": st.column_config.NumberColumn(
                "P(late)", format="%.0f %%", help="P(late on spot): spot alone misses the deadline"
            ),
            "spot share %": st.column_config.NumberColumn(
                "on spot", format="%.0f %%", help="The share of the work done on spot"
            ),
        },
    )
    st.caption(
        "on-demand from: store = the price list in the store, estimate = from a Spot Advisor "
        "saving, reference = the reference price (not a quote), given = typed above. MTBF "
        "from: trace = the pool's own traces, prior = the traced pools' median (no trace of "
        "its own)."
    )

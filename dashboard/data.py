"""The dashboard's only door to the data: cached calls of package functions on the store.

Pages never query the store or compute anything themselves; they call these functions."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd
import streamlit as st

from spotwise.core import settings
from spotwise.executor.ledger import ledger
from spotwise.policy.lab.bench import BenchSummary, last_summary
from spotwise.policy.market import pools_from_store, require_pools
from spotwise.policy.plan import Plan, PlanInputs, plan_job
from spotwise.pricing import views
from spotwise.pricing.database import PostgresStore
from spotwise.pricing.errors import PricingError
from spotwise.pricing.frames import utc_now
from spotwise.pricing.local_operational import SqliteStore
from spotwise.pricing.operational import open_operational, operational_exists
from spotwise.pricing.quotes import is_stale
from spotwise.pricing.store import MarketStore

if TYPE_CHECKING:
    from spotwise.pricing.forecast.risk_bench import RiskBench

HOW_TO_LOAD = (
    "No market data in the store yet. Load the bundled real data with `spotwise data load` "
    "(or run the whole demo with `spotwise demo`), then reload this page."
)


def store_path() -> Path:
    """The store file the dashboard reads (the settings' default)."""
    return settings.store_path(None)


def _open() -> MarketStore:
    return MarketStore.open(store_path(), read_only=True)


def _open_operational() -> SqliteStore | PostgresStore:
    """The jobs, ledger and forecasts: the SQLite file beside the store file, or the
    operational database."""
    return open_operational(store_path(), read_only=True)


OPERATIONAL_VIEWS = {"price_forecasts", "risk_forecasts"}
"""The views that read operational tables."""


def stale(as_of: pd.Timestamp | str | None) -> bool:
    """Whether ``as_of`` is more than a week old now (the planner's rule)."""
    return is_stale(as_of, utc_now())


def store_ready() -> bool:
    """Whether the store exists and holds prices; if not, say how to load them."""
    try:
        with _open() as store:
            if not views.is_empty(store):
                return True
    except PricingError as exc:
        if store_path().exists():  # there, but not readable: say why, not "load data"
            st.error(str(exc))
            return False
    st.info(HOW_TO_LOAD, icon="ℹ️")
    return False


@st.cache_data(ttl=60, show_spinner=False)
def view(name: str, **kwargs: Any) -> pd.DataFrame:
    """A :mod:`spotwise.pricing.views` function's frame (cached for a minute)."""
    with _open_operational() if name in OPERATIONAL_VIEWS else _open() as store:
        result: pd.DataFrame = getattr(views, name)(store, **kwargs)
        return result


@st.cache_data(ttl=60, show_spinner=False)
def series_count(**filters: str | None) -> int:
    """How many price series the filters hold (the history chart shows a dozen)."""
    with _open() as store:
        return views.price_series_count(store, **filters)


@st.cache_data(ttl=60, show_spinner=False)
def filters() -> dict[str, list[str]]:
    """The providers, regions and instance types with prices (cached for a minute)."""
    with _open() as store:
        return views.price_filters(store)


@st.cache_data(ttl=60, show_spinner=False)
def sources() -> list[str]:
    """The sources holding availability traces (cached for a minute)."""
    with _open() as store:
        return views.availability_sources(store)


@st.cache_data(ttl=300, show_spinner=False)
def plan(inputs: PlanInputs, instance_type: str, provider: str, on_demand: float | None) -> Plan:
    """The planner's ranking, exactly as ``spotwise plan`` computes it."""
    with _open() as store:
        found = pools_from_store(store, instance_type, provider, on_demand)
    require_pools(found, instance_type)
    return plan_job(inputs, found.pools, left_out=found.left_out)


@st.cache_data(ttl=300, show_spinner=False)
def plan_gpu(inputs: PlanInputs, gpu: str, count: int) -> Plan:
    """``spotwise plan --gpu GPU --gpus COUNT``: every cloud's equivalent shapes ranked, with
    the clouds that have no stored price and the command that collects one."""
    from spotwise.executor.clouds.registry import CLOUDS
    from spotwise.policy.market import pools_for_gpu, require_gpu_pools

    notices = {name: c.notice_s for name, c in CLOUDS.items()}
    with _open() as store:
        found = pools_for_gpu(store, gpu, count, notices=notices)
    require_gpu_pools(found, gpu, count)
    return plan_job(
        inputs,
        found.pools,
        left_out=found.left_out,
        unpriced=found.unpriced,
    )


@st.cache_data(ttl=300, show_spinner=False)
def gpu_models() -> list[str]:
    """The GPU models of the GPU equivalence table."""
    from spotwise.pricing.gpus import gpu_models as models

    return list(models())


def bench_summary(zones: str) -> BenchSummary | None:
    """The last ``spotwise bench policy`` result kept next to the store.

    Raises:
        PolicyError: when the file kept there is not a bench summary.
    """
    return last_summary(store_path(), "single" if zones == "single" else "multi")


@st.cache_data(ttl=10, show_spinner=False)
def jobs() -> pd.DataFrame:
    """The ledger's jobs (none when there is no store yet).

    Raises:
        PricingError: when a store is there but its jobs cannot be read (a ledger of another
            schema version, a damaged file): the page says why rather than "no job yet".
    """
    if not operational_exists(store_path()):
        return pd.DataFrame()
    with _open_operational() as store:
        return pd.DataFrame([job.to_dict() for job in ledger.list_jobs(store)])


@st.cache_data(ttl=10, show_spinner=False)
def sweeps() -> pd.DataFrame:
    """The ledger's jobs grouped by sweep (none when no job ran in a sweep)."""
    from spotwise.executor.sweeps.report import ledger_sweeps

    try:
        with _open_operational() as store:
            return pd.DataFrame([sweep.to_dict() for sweep in ledger_sweeps(store)])
    except PricingError:
        return pd.DataFrame()


@dataclass(frozen=True, slots=True)
class JobTotals:
    """The cost of some jobs against the same hours on demand."""

    jobs: int
    cost_usd: float
    on_demand_usd: float

    @property
    def saved_pct(self) -> float:
        """Percent saved against on demand (0 when nothing ran on demand)."""
        return 100 * (1 - self.cost_usd / self.on_demand_usd) if self.on_demand_usd else 0.0


@st.cache_data(ttl=10, show_spinner=False)
def job_totals() -> dict[str, JobTotals]:
    """Totals over every job, real and simulated apart (replayed dollars are not a bill)."""
    totals: dict[str, JobTotals] = {}
    with _open_operational() as store:
        for row in ledger.list_jobs(store):
            report = ledger.job_report(store, row.job_id)
            kind = "simulated" if report.simulated else "real"
            before = totals.get(kind, JobTotals(0, 0.0, 0.0))
            totals[kind] = JobTotals(
                before.jobs + 1,
                before.cost_usd + report.cost_usd,
                before.on_demand_usd + report.on_demand_cost_usd,
            )
    return dict(sorted(totals.items()))


@st.cache_data(ttl=10, show_spinner=False)
def job(job_id: str) -> ledger.JobReport:
    """One job's ledger report (cached for ten seconds)."""
    with _open_operational() as store:
        return ledger.job_report(store, job_id)


@st.cache_data(show_spinner=False)
def risk_backtest() -> RiskBench:
    """The risk bench (logistic model) on the bundled 9-zone traces, test from hour 480."""
    from spotwise.pricing.forecast.risk_bench import bench_risk

    return bench_risk(
        settings.bundled_traces(),
        test_from_hours=480,
        horizon_minutes=60,
        models=("logistic",),
        advisor=settings.bundled_advisor_snapshots(),
    )


@st.cache_data(show_spinner=False)
def run_policy_bench(
    zones: str, names: tuple[str, ...], test_from_hours: float, _on_progress: Any = None
) -> BenchSummary:
    """``spotwise bench policy`` on the bundled traces with the issue's job (48 h of work in
    60 h, 0.2 h changeover, $0.918 spot, $3.06 on demand); ``_on_progress(share done)``."""
    from spotwise.policy.job import REFERENCE
    from spotwise.policy.lab.bench import count_jobs, run_bench
    from spotwise.policy.traces import load_traces

    traces = load_traces(settings.bundled_traces())
    spec = REFERENCE
    mode: Literal["single", "multi"] = "single" if zones == "single" else "multi"
    total = count_jobs(
        traces,
        spec,
        zones=mode,
        n_policies=len(names),
        test_from_hours=test_from_hours,
        start_every_hours=12,
    )
    done = [0]

    def advance(*_: str) -> None:
        done[0] += 1
        if _on_progress is not None:
            _on_progress(min(1.0, done[0] / total))

    run = run_bench(
        traces,
        spec,
        zones=mode,
        policies=list(names),
        test_from_hours=test_from_hours,
        start_every_hours=12,
        on_job=advance,
    )
    return run.summary()

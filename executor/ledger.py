"""The cost ledger: every instance, preemption, notice, migration, lost work and checkpoint of a
supervised job, written to the store as it happens (tables ``jobs`` and ``ledger``).

Hours are the cloud's hours: under the local launcher's replayed traces they are trace hours
(wall time × the replay's clock scale), so costs read as they would have on the real pools.
"""

from __future__ import annotations

import enum
import json
import os
import socket
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import spotwise.executor.ledger_schema  # noqa: F401  (the store holds the executor's tables)
from spotwise.policy.cost import StorageTerms
from spotwise.pricing.errors import StoreError
from spotwise.pricing.store import MarketStore


class EntryKind(enum.StrEnum):
    """What a ledger entry records."""

    INSTANCE = "instance"
    NOTICE = "notice"
    PREEMPTION = "preemption"
    MIGRATION = "migration"
    LOST_WORK = "lost_work"
    CHECKPOINT = "checkpoint"
    FAILURE = "failure"


class JobStatus(enum.StrEnum):
    """Where a supervised job stands."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


USD_PER_GB_MONTH = StorageTerms().usd_per_gb_month


@dataclass(frozen=True, slots=True, kw_only=True)
class JobInfo:
    """What the ledger keeps about a job besides its entries."""

    name: str
    command: str
    launcher: str
    compute_hours: float
    deadline_hours: float
    on_demand_price: float
    simulated: bool
    """Run on a replayed market: its hours and dollars are simulated."""
    simulation: str | None = None
    """What the replay was and how fast it ran."""
    checkpoint_usd_per_gb_month: float = USD_PER_GB_MONTH
    prices: dict[str, Any] | None = None
    """The job's price book (:class:`spotwise.executor.prices.PriceBook`), sources included."""


class Ledger:
    """Appends one job's entries to the store (opening it per write, so readers can look in)."""

    def __init__(self, store_path: Path, info: JobInfo, job_id: str | None = None) -> None:
        self.store_path = store_path
        self.job_id = job_id or uuid.uuid4().hex[:12]
        self._seq = 0
        with MarketStore.open(store_path) as store:
            store.execute(
                "INSERT INTO jobs (job_id, name, command, launcher, started, status, "
                "compute_hours, deadline_hours, on_demand_price, checkpoint_usd_per_gb_month, "
                "host, supervisor_pid, simulated, prices, simulation) "
                "VALUES (?, ?, ?, ?, now(), 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    self.job_id,
                    info.name,
                    info.command,
                    info.launcher,
                    info.compute_hours,
                    info.deadline_hours,
                    info.on_demand_price,
                    info.checkpoint_usd_per_gb_month,
                    socket.gethostname(),
                    os.getpid(),
                    info.simulated,
                    json.dumps(info.prices) if info.prices is not None else None,
                    info.simulation,
                ],
            )

    def record(
        self,
        kind: EntryKind,
        *,
        pool: str | None = None,
        market: str | None = None,
        hours: float | None = None,
        price: float | None = None,
        cost_usd: float | None = None,
        nbytes: int | None = None,
        detail: str | None = None,
        on_demand_price: float | None = None,
    ) -> None:
        """Append one entry (``on_demand_price``: the baseline's rate for its hours)."""
        self._seq += 1
        with MarketStore.open(self.store_path) as store:
            store.execute(
                "INSERT INTO ledger (job_id, seq, ts, kind, pool, market, hours, price, "
                "cost_usd, bytes, detail, on_demand_price) "
                "VALUES (?, ?, now(), ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    self.job_id,
                    self._seq,
                    kind.value,
                    pool,
                    market,
                    hours,
                    price,
                    cost_usd,
                    nbytes,
                    detail,
                    on_demand_price,
                ],
            )

    def running_in(self, process_group: int | None) -> None:
        """Record the local process group the job's command runs in now (None: none here)."""
        with MarketStore.open(self.store_path) as store:
            store.execute(
                "UPDATE jobs SET worker_pgid = ? WHERE job_id = ?", [process_group, self.job_id]
            )

    def finish(self, status: JobStatus) -> None:
        """Mark the job ``completed``, ``failed`` or ``cancelled``, with its end time."""
        with MarketStore.open(self.store_path) as store:
            store.execute(
                "UPDATE jobs SET ended = now(), status = ? WHERE job_id = ?",
                [status.value, self.job_id],
            )


def list_jobs(store: MarketStore) -> list[dict[str, Any]]:
    """Every job with its status, cost so far, preemptions and migrations (newest first)."""
    return store.records(
        """
        SELECT j.job_id, j.name, j.launcher, j.status, coalesce(j.simulated, false) AS simulated,
            j.started, j.ended,
            coalesce(sum(l.cost_usd) FILTER (WHERE l.kind = 'instance'), 0) AS cost_usd,
            count(*) FILTER (WHERE l.kind = 'preemption') AS preemptions,
            count(*) FILTER (WHERE l.kind = 'migration') AS migrations
        FROM jobs j LEFT JOIN ledger l USING (job_id)
        GROUP BY ALL ORDER BY j.started DESC
        """
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class MarketUse:
    """Hours and cost in one market (spot or on-demand)."""

    hours: float
    cost_usd: float


@dataclass(frozen=True, slots=True, kw_only=True)
class CostBreakdown:
    """The cost model's terms: compute, checkpoint storage and recovery (lost work)."""

    compute: float
    storage: float
    recovery: float


@dataclass(frozen=True, slots=True, kw_only=True)
class JobReport:
    """One job's cost so far against on-demand, and what happened to it."""

    job_id: str
    name: str
    launcher: str
    status: JobStatus
    simulated: bool
    """Hours and dollars of a replayed market, not a bill."""
    simulation: str | None
    """What the replay was and how fast it ran."""
    cost_usd: float
    hours_needed: float
    """Instance hours less the work lost and redone: what the job took."""
    on_demand_cost_usd: float
    """The baseline: the hours needed, each at the on-demand price of the same instance type
    in the region it ran in."""
    savings_usd: float
    savings_pct: float
    prices: dict[str, Any] | None
    """The job's price book with every price's source and time (None: a job from before)."""
    breakdown: CostBreakdown
    markets: dict[str, MarketUse]
    instances: int
    preemptions: int
    notices: int
    migrations: int
    lost_work_hours: float
    checkpoint_bytes: int

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values."""
        return {**asdict(self), "status": self.status.value}


def job_report(store: MarketStore, job_id: str) -> JobReport:
    """One job's cost so far, savings against on-demand and the cost model's breakdown.

    Raises:
        StoreError: for an unknown job (naming the known ones).
    """
    jobs = store.query("SELECT * FROM jobs WHERE job_id = ?", [job_id])
    if jobs.empty:
        known = store.query("SELECT job_id FROM jobs ORDER BY started DESC LIMIT 5")["job_id"]
        raise StoreError(f"no job {job_id!r} in the ledger; recent jobs: {list(known)}")
    job = jobs.iloc[0]
    entries = store.query("SELECT * FROM ledger WHERE job_id = ? ORDER BY seq", [job_id])
    instances = entries[entries.kind == EntryKind.INSTANCE]
    by_market = {
        str(market): MarketUse(
            hours=round(float(group.hours.sum()), 4),
            cost_usd=round(float(group.cost_usd.sum()), 4),
        )
        for market, group in instances.groupby("market")
    }
    lost = entries[entries.kind == EntryKind.LOST_WORK]
    lost_hours = float(lost.hours.sum()) if not lost.empty else 0.0
    recovery = float((lost.hours * lost.price).sum()) if not lost.empty else 0.0
    checkpoint_bytes = int(entries[entries.kind == EntryKind.CHECKPOINT].bytes.sum())
    storage = StorageTerms(
        checkpoint_gb=checkpoint_bytes / 1e9,
        usd_per_gb_month=float(job.checkpoint_usd_per_gb_month),
    ).cost()
    compute = float(instances.cost_usd.sum()) - recovery
    rate = entries.on_demand_price.fillna(float(job.on_demand_price))
    needed = float(instances.hours.sum()) - lost_hours
    on_demand = float((instances.hours * rate[instances.index]).sum())
    if not lost.empty:
        on_demand -= float((lost.hours * rate[lost.index]).sum())
    total = compute + recovery + storage
    prices = job.get("prices")
    return JobReport(
        job_id=job_id,
        name=str(job["name"]),
        launcher=str(job.launcher),
        status=JobStatus(job.status),
        simulated=bool(job.simulated),
        simulation=job.get("simulation") if isinstance(job.get("simulation"), str) else None,
        cost_usd=round(total, 4),
        hours_needed=round(needed, 4),
        on_demand_cost_usd=round(on_demand, 4),
        savings_usd=round(on_demand - total, 4),
        savings_pct=round(100 * (1 - total / on_demand), 2) if on_demand > 0 else 0.0,
        prices=json.loads(prices) if isinstance(prices, str) else None,
        breakdown=CostBreakdown(
            compute=round(compute, 4), storage=round(storage, 4), recovery=round(recovery, 4)
        ),
        markets=by_market,
        instances=len(instances),
        preemptions=int((entries.kind == EntryKind.PREEMPTION).sum()),
        notices=int((entries.kind == EntryKind.NOTICE).sum()),
        migrations=int((entries.kind == EntryKind.MIGRATION).sum()),
        lost_work_hours=round(lost_hours, 4),
        checkpoint_bytes=checkpoint_bytes,
    )

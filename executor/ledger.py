"""The cost ledger: every instance, preemption, notice, migration, lost work and checkpoint of a
supervised job, written to the store as it happens (tables ``jobs`` and ``ledger``).

Hours are the cloud's hours: under the local launcher's replayed traces they are trace hours
(wall time × the replay's clock scale), so costs read as they would have on the real pools.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policy.cost import StorageTerms
from pricing.errors import StoreError
from pricing.store import MarketStore

KINDS = ("instance", "notice", "preemption", "migration", "lost_work", "checkpoint", "failure")
USD_PER_GB_MONTH = 0.023


@dataclass(frozen=True, slots=True, kw_only=True)
class JobInfo:
    """What the ledger keeps about a job besides its entries."""

    name: str
    command: str
    launcher: str
    compute_hours: float
    deadline_hours: float
    on_demand_price: float
    checkpoint_usd_per_gb_month: float = USD_PER_GB_MONTH


class Ledger:
    """Appends one job's entries to the store (opening it per write, so readers can look in)."""

    def __init__(self, store_path: Path, info: JobInfo, job_id: str | None = None) -> None:
        self.store_path = store_path
        self.job_id = job_id or uuid.uuid4().hex[:12]
        self._seq = 0
        with MarketStore.open(store_path) as store:
            store.execute(
                "INSERT INTO jobs VALUES "
                "(?, ?, ?, ?, now(), NULL, 'running', ?, ?, ?, ?, ?, ?, NULL)",
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
                ],
            )

    def record(
        self,
        kind: str,
        *,
        pool: str | None = None,
        market: str | None = None,
        hours: float | None = None,
        price: float | None = None,
        cost_usd: float | None = None,
        nbytes: int | None = None,
        detail: str | None = None,
    ) -> None:
        """Append one entry."""
        if kind not in KINDS:
            raise ValueError(f"unknown ledger kind {kind!r}; one of {KINDS}")
        self._seq += 1
        with MarketStore.open(self.store_path) as store:
            store.execute(
                "INSERT INTO ledger VALUES (?, ?, now(), ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    self.job_id,
                    self._seq,
                    kind,
                    pool,
                    market,
                    hours,
                    price,
                    cost_usd,
                    nbytes,
                    detail,
                ],
            )

    def running_in(self, process_group: int | None) -> None:
        """Record the local process group the job's command runs in now (None: none here)."""
        with MarketStore.open(self.store_path) as store:
            store.execute(
                "UPDATE jobs SET worker_pgid = ? WHERE job_id = ?", [process_group, self.job_id]
            )

    def finish(self, status: str) -> None:
        """Mark the job ``completed``, ``failed`` or ``cancelled``, with its end time."""
        with MarketStore.open(self.store_path) as store:
            store.execute(
                "UPDATE jobs SET ended = now(), status = ? WHERE job_id = ?", [status, self.job_id]
            )


def list_jobs(store: MarketStore) -> list[dict[str, Any]]:
    """Every job with its status, cost so far, preemptions and migrations (newest first)."""
    return store.records(
        """
        SELECT j.job_id, j.name, j.launcher, j.status, j.started, j.ended,
            coalesce(sum(l.cost_usd) FILTER (WHERE l.kind = 'instance'), 0) AS cost_usd,
            count(*) FILTER (WHERE l.kind = 'preemption') AS preemptions,
            count(*) FILTER (WHERE l.kind = 'migration') AS migrations
        FROM jobs j LEFT JOIN ledger l USING (job_id)
        GROUP BY ALL ORDER BY j.started DESC
        """
    )


def job_report(store: MarketStore, job_id: str) -> dict[str, Any]:
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
    instances = entries[entries.kind == "instance"]
    by_market = {
        market: {
            "hours": round(float(group.hours.sum()), 4),
            "cost_usd": round(float(group.cost_usd.sum()), 4),
        }
        for market, group in instances.groupby("market")
    }
    lost = entries[entries.kind == "lost_work"]
    lost_hours = float(lost.hours.sum()) if not lost.empty else 0.0
    recovery = float((lost.hours * lost.price).sum()) if not lost.empty else 0.0
    checkpoint_bytes = int(entries[entries.kind == "checkpoint"].bytes.sum())
    storage = StorageTerms(
        checkpoint_gb=checkpoint_bytes / 1e9,
        usd_per_gb_month=float(job.checkpoint_usd_per_gb_month),
    ).cost()
    compute = float(instances.cost_usd.sum()) - recovery
    on_demand = float(job.compute_hours) * float(job.on_demand_price)
    total = compute + recovery + storage
    return {
        "job_id": job_id,
        "name": job["name"],
        "launcher": job.launcher,
        "status": job.status,
        "cost_usd": round(total, 4),
        "on_demand_cost_usd": round(on_demand, 4),
        "savings_usd": round(on_demand - total, 4),
        "savings_pct": round(100 * (1 - total / on_demand), 2) if on_demand else 0.0,
        "breakdown": {
            "compute": round(compute, 4),
            "storage": round(storage, 4),
            "recovery": round(recovery, 4),
        },
        "markets": by_market,
        "instances": len(instances),
        "preemptions": int((entries.kind == "preemption").sum()),
        "notices": int((entries.kind == "notice").sum()),
        "migrations": int((entries.kind == "migration").sum()),
        "lost_work_hours": round(lost_hours, 4),
        "checkpoint_bytes": checkpoint_bytes,
    }

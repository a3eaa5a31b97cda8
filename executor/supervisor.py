"""The supervisor: runs a training command to completion across preemptions.

It asks the policy where to run, launches the command there, forwards preemption notices,
and when the command exits with the preempted code asks again and relaunches (same pool,
another pool, or on-demand). It moves proactively when the risk forecast for the current pool
crosses ``migrate_risk`` and a safer pool is free, falls back to on-demand for good after
``on_demand_after`` preemptions, and stops with a clear error on exits that are not
preemptions once ``max_failures`` is reached. Every instance, notice, preemption, migration and
lost hour goes to the ledger.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from executor.errors import PREEMPTED_EXIT_CODE, ExecutorError, NoCapacity
from executor.launchers.base import Instance, Launcher, Placement
from executor.ledger import Ledger
from policy.client import PolicyClient
from policy.schemas import DecisionRequest, JobState, JobTerms, PoolNow

Progress = Callable[[str], None]
ClientFor = Callable[[np.ndarray, int, tuple[str, ...]], PolicyClient]
"""Builds a policy client over the availability history so far (pools × ticks, gap seconds)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SupervisorConfig:
    """How the supervisor runs a job."""

    job: JobTerms
    policy: str = "best"
    lead_s: float = 2.0
    """Wall seconds between a notice and the preemption (the cloud's 30 s – 2 min, scaled)."""
    grace_s: float = 5.0
    """Wall seconds after the preemption before the instance is killed."""
    on_demand_after: int = 3
    migrate_risk: float = 0.5
    """Move when P(preempted within 60 min) of the current pool exceeds this (1 = never)."""
    max_failures: int = 2
    poll_s: float = 0.02
    no_capacity_s: float = 60.0
    """Wall seconds a pool that refused a launch is left alone."""
    ckpt_dirs: tuple[Path, ...] = ()
    """Local checkpoint folders whose size is reported to the ledger at the end."""


@dataclass(slots=True)
class RunReport:
    """How the supervised run went."""

    completed: bool = False
    preemptions: int = 0
    migrations: int = 0
    failures: int = 0
    instances: int = 0
    cost_usd: float = 0.0
    progress_hours: float = 0.0
    lost_hours: float = 0.0
    placements: list[str] = field(default_factory=list)
    events: list[dict[str, object]] = field(default_factory=list)


class Supervisor:
    """Runs one command to completion on a launcher, guided by a policy client."""

    def __init__(
        self,
        launcher: Launcher,
        client_for: ClientFor,
        config: SupervisorConfig,
        ledger: Ledger,
        progress: Progress = lambda _: None,
    ) -> None:
        self.launcher, self.client_for, self.config = launcher, client_for, config
        self.ledger, self.progress = ledger, progress
        self.report = RunReport()
        self._reclaimed: dict[str, float] = {}
        """Pools under a preemption notice, until (wall clock) the provider takes them back."""
        self._cached_client: tuple[tuple[object, ...], PolicyClient] | None = None

    def _client(self) -> PolicyClient:
        """The policy client over the history so far, built again only when it has grown."""
        history, gap = self.launcher.history()
        key = (history.shape, gap)
        if self._cached_client is None or self._cached_client[0] != key:
            self._cached_client = (key, self.client_for(history, gap, self.launcher.pools))
        return self._cached_client[1]

    def _place(self, client: PolicyClient, avoid: str | None) -> Placement | None:
        """Where to run next (None = wait), from the policy or the on-demand fallback."""
        job = self.config.job
        if self.report.preemptions >= self.config.on_demand_after:
            return Placement(market="on-demand", pool=None, price=job.on_demand_price)
        now = time.monotonic()
        available = {
            p: a and p != avoid and self._reclaimed.get(p, 0.0) <= now
            for p, a in self.launcher.available().items()
        }
        pools = {p: PoolNow(available=a) for p, a in available.items()}
        decision = client.decide(
            DecisionRequest(
                policy=self.config.policy,
                job=job,
                state=JobState(
                    elapsed_hours=self.launcher.now_hours(),
                    progress_hours=min(self.report.progress_hours, job.compute_hours),
                ),
                pools=pools,
            )
        )
        if decision.action == "wait":
            return None
        if decision.action == "on-demand":
            return Placement(market="on-demand", pool=None, price=job.on_demand_price)
        return Placement(market="spot", pool=decision.pool, price=job.spot_price)

    def run(self, command: Sequence[str]) -> RunReport:
        """Run ``command`` until it completes.

        Raises:
            ExecutorError: after ``max_failures`` exits that were not preemptions.
        """
        avoid: str | None = None
        env = dict(os.environ)
        while True:
            placement = self._place(self._client(), avoid)
            avoid = None
            if placement is None:
                time.sleep(self.config.poll_s * 5)
                continue
            env.update(SPOTWISE_POOL=placement.pool or "", SPOTWISE_MARKET=placement.market)
            self.progress(f"launching on {placement.describe()}")
            try:
                instance = self.launcher.launch(placement, command, env)
            except NoCapacity as exc:
                self.progress(f"no capacity ({exc}): choosing again")
                self._reclaimed[placement.pool or ""] = time.monotonic() + self.config.no_capacity_s
                continue
            self.report.instances += 1
            self.report.placements.append(placement.describe())
            outcome, code = self._watch(instance)
            self._account(instance, outcome)
            if outcome == "done":
                self.report.completed = True
                break
            if outcome == "migrated":
                self.report.migrations += 1
                avoid = placement.pool
                self.ledger.record("migration", pool=placement.pool, market=placement.market)
                self.progress(f"moved off {placement.pool}: its risk forecast crossed the bar")
            elif outcome == "preempted":
                self.report.preemptions += 1
                self.ledger.record("preemption", pool=placement.pool, market=placement.market)
                self.progress(f"preempted on {placement.describe()}")
            else:
                self.report.failures += 1
                self.ledger.record("failure", pool=placement.pool, detail=f"exit code {code}")
                if self.report.failures >= self.config.max_failures:
                    self.ledger.finish("failed")
                    raise ExecutorError(
                        f"{command[0]} exited with code {code} (not a preemption) "
                        f"{self.report.failures} times; fix the job and run again"
                    )
                self.progress(f"exit code {code} (not a preemption): relaunching once more")
        for folder in self.config.ckpt_dirs:
            size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
            self.ledger.record("checkpoint", nbytes=size, detail=str(folder))
        self.ledger.finish("completed")
        return self.report

    def _watch(self, instance: Instance) -> tuple[str, int]:
        """Follow one instance to its end: forward notices, move on high risk."""
        noticed = migrating = killed = False
        notice_at = kill_at = None
        next_risk_check = time.monotonic()
        pool = instance.placement.pool
        while (code := instance.poll()) is None:
            now = time.monotonic()
            started = any(e.get("event") in ("fresh", "resumed") for e in instance.events)
            if started and notice_at is None and not migrating:
                due = self.launcher.preemption_in_s(instance)
                if due is not None:
                    notice_at, kill_at = (
                        now + due - self.config.lead_s,
                        now + due + self.config.grace_s,
                    )
            if notice_at is not None and not noticed and now >= notice_at:
                if not migrating:  # a moving instance has had its notice: one is enough
                    instance.notice()
                noticed = True
                if pool and kill_at is not None:
                    self._reclaimed[pool] = kill_at - self.config.grace_s + 0.05
                self.ledger.record("notice", pool=pool, market="spot")
            if kill_at is not None and not killed and now >= kill_at:
                instance.kill()
                killed = True
            if started and pool and not noticed and not migrating and now >= next_risk_check:
                next_risk_check = now + max(self.config.poll_s * 10, 0.2)
                if self._should_move(pool):
                    instance.notice()
                    migrating = True
            time.sleep(self.config.poll_s)
        instance.terminate()
        if code == 0:
            return "done", code
        # A move that got out before the kill is a move, even if the pool's own notice came
        # while it was checkpointing.
        if migrating and not killed and code == PREEMPTED_EXIT_CODE:
            return "migrated", code
        if code == PREEMPTED_EXIT_CODE or killed or (noticed and code < 0):
            return "preempted", code
        return "failed", code

    def _should_move(self, pool: str) -> bool:
        """The current pool's 60-minute risk is above the bar and a free pool is half as risky."""
        if self.config.migrate_risk >= 1.0:
            return False
        client = self._client()
        risk = client.forecast(pool).preemption_probability_60min
        if risk is None or risk <= self.config.migrate_risk:
            return False
        for other, up in self.launcher.available().items():
            if up and other != pool:
                alt = client.forecast(other).preemption_probability_60min
                if alt is not None and alt < risk / 2:
                    return True
        return False

    def _account(self, instance: Instance, outcome: str) -> None:
        """Bill the instance and credit its productive time (none if it was killed)."""
        end = time.monotonic()
        started = getattr(instance, "started", end)
        hours = self.launcher.hours_between(started, end)
        placement = instance.placement
        cost = hours * placement.price
        self.report.cost_usd += cost
        self.ledger.record(
            "instance",
            pool=placement.pool,
            market=placement.market,
            hours=hours,
            price=placement.price,
            cost_usd=cost,
        )
        first = next((e for e in instance.events if e.get("event") == "first_step"), None)
        clean = any(e.get("event") in ("done", "preempted") for e in instance.events)
        self.report.events.extend(instance.events)
        if not instance.events:  # a remote instance: its exit code is all there is
            first, clean = {"wall": started}, outcome in ("done", "preempted", "migrated")
        if first is None:
            return
        productive = self.launcher.hours_between(float(str(first["wall"])), end)
        if clean:
            self.report.progress_hours += productive
        else:
            self.report.lost_hours += productive
            self.ledger.record(
                "lost_work", pool=placement.pool, hours=productive, price=placement.price
            )

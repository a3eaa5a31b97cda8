"""The supervisor: runs a training command to completion across preemptions.

It asks the policy where to run, launches the command there, forwards preemption notices, and
when the command exits with the preempted code asks again and relaunches (same pool, another
pool, or on-demand). It decides nothing of its own: while a spot instance runs it asks the
policy, as often as ``move_check_s``, what the job should do now, and moves when the policy
says another pool (the decision core prices a move as paying: a cheaper pool that came back;
the ledger keeps the policy's reason with its expected costs), and, on a capped spot instance
(the policy's bid, the launcher's ``--max-price``), when the stored price forecast says the
price will rise above the cap within the next checkpoint interval (the cloud would evict it).
It falls back to on-demand for good after ``on_demand_after`` preemptions (the cloud's: a drill
never counts); on on-demand it asks
the policy every ``spot_check_s`` whether it would run on spot now, and if so the job
checkpoints, the on-demand instance is released and the job goes back to spot. It stops with a
clear error on exits that are not preemptions once ``max_failures`` is reached. A command that
stops stepping for ``stall_timeout_s`` is killed and counts as a failure (it resumes from its
checkpoint). SIGTERM or SIGINT to the supervisor passes a notice to the job, gives it
``cancel_grace_s`` to checkpoint, stops it and records the job ``cancelled``. Every instance,
notice, preemption, migration and lost hour goes to the ledger, and the job never stays
``running`` after the supervisor returns.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import numpy as np

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.core.progress import Progress, silent
from spotwise.core.settings import SettingsError, current
from spotwise.executor.checkpoint.places import CheckpointPlace
from spotwise.executor.errors import (
    PREEMPTED_EXIT_CODE,
    Cancelled,
    ExecutorError,
    LaunchError,
    NoCapacity,
    Stopped,
)
from spotwise.executor.launchers.base import (
    Instance,
    Launcher,
    Placement,
    Preemption,
    RidesOut,
)
from spotwise.executor.ledger.ledger import DRILL_DETAIL, EntryKind, JobStatus, Ledger
from spotwise.executor.ledger.prices import PriceBook
from spotwise.executor.supervise.job_log import JobLog
from spotwise.executor.supervise.price_cap import PriceOutlook
from spotwise.executor.supervise.watch import (
    Cancelling,
    Drill,
    EventStop,
    Every,
    GuardStart,
    Notices,
    Outcome,
    Stall,
    Steps,
    Waiting,
    Watch,
    Watcher,
)
from spotwise.executor.training.interval import DEFAULT_INTERVAL_S
from spotwise.policy.errors import PolicyError
from spotwise.policy.service.client import PolicyClient
from spotwise.policy.service.schemas import (
    Decision,
    DecisionRequest,
    IdleState,
    JobTerms,
    PoolNow,
    SpotState,
)

ClientFor = Callable[[np.ndarray, int, tuple[str, ...]], PolicyClient]
"""Builds a policy client over the availability history so far (pools × ticks, gap seconds)."""
EventWatcher = Callable[[dict[str, object]], bool]
"""Sees each JSON event the command prints as it comes; True stops the job for good (a
sweep's pruner)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SupervisorConfig:
    """How the supervisor runs a job."""

    job: JobTerms
    policy: str = "best"
    lead_s: float = 2.0
    """Wall seconds between a notice and the preemption (the cloud's 30 s – 2 min, scaled),
    for launchers that know a preemption is coming (a replay)."""
    grace_s: float = 5.0
    """Wall seconds after the preemption before the instance is killed."""
    on_demand_after: int = 3
    """Preemptions by the cloud after which the job stays on on-demand (drills do not count)."""
    move_check_s: float | None = 0.2
    """Wall seconds between asks, while a spot instance runs, whether the policy would move the
    job now (None: only a preemption moves it)."""
    max_failures: int = 2
    poll_s: float = 0.02
    no_capacity_s: float = 60.0
    """Wall seconds a pool that refused a launch is left alone."""
    step_report_s: float | None = 30.0
    """Wall seconds between lines saying the training's step, of how many, its pace and the
    time left (None: say nothing)."""
    waiting_report_s: float | None = 60.0
    """Wall seconds between lines saying what the job waits for while its instance has sent
    no output yet (a cloud instance booting; None: say nothing)."""
    checkpoints: tuple[CheckpointPlace, ...] = ()
    """Where the job checkpoints (folders here, or a cloud bucket's), sized for the ledger at
    the end."""
    stall_timeout_s: float | None = 600.0
    """Wall seconds without a step heartbeat (or a first one) before a job counts as hung
    (None = never)."""
    cancel_grace_s: float = 30.0
    """Wall seconds a cancelled job gets to checkpoint and leave before it is killed."""
    drill_after_s: float | None = None
    """A drill: wall seconds after an instance's command starts at which it gets a preemption
    notice through the same path a cloud's takes (None: no drill)."""
    drill_every: bool = False
    """Drill every instance (else only the first)."""
    prices: PriceBook | None = None
    """What each pool and on-demand cost, with their sources (None: the job's terms, labelled
    as reference prices)."""
    spot_check_s: float | None = 60.0
    """Wall seconds between asks, while on on-demand, whether the policy would run on spot
    now; when it would, the job checkpoints, the on-demand instance is released and the job
    goes back to spot (None: stay on on-demand to the end)."""
    guard_wait_s: float | None = 60.0
    """Wall seconds a local command may run before it has started a guard; past them (or at
    its end, on any launcher) the job is warned once that drills, replayed preemptions and
    migration cannot act on it (None: never warn)."""
    price_check_s: float | None = 60.0
    """Wall seconds between reads of the price forecast while a capped spot instance runs;
    the job moves when it crosses the cap within the next checkpoint interval (None: never)."""
    max_price: float | None = None
    """USD/h: the user's ``--max-price``, the most a spot instance may cost (the cloud's bid,
    where it takes one); with the policy's bid, the cap the price forecast is watched against
    (None: the bid alone)."""


@dataclass(slots=True)
class RunReport:
    """How the supervised run went."""

    completed: bool = False
    preemptions: int = 0
    drills: int = 0
    """Preemptions that were drills (``--preempt-after``): counted in ``preemptions``, never
    toward the fall back to on-demand."""
    migrations: int = 0
    failures: int = 0
    instances: int = 0
    cost_usd: float = 0.0
    progress_hours: float = 0.0
    lost_hours: float = 0.0
    steps_lost: int = 0
    """Training steps done again after a relaunch: those past the checkpoint it resumed from
    (0 when every stop had its notice)."""
    placements: list[str] = field(default_factory=list)
    events: list[dict[str, object]] = field(default_factory=list)


@contextlib.contextmanager
def cancel_on_signals(cancel: Callable[[int], None]) -> Iterator[None]:
    """SIGTERM and SIGINT call ``cancel`` while the job runs (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _: FrameType | None) -> None:
        cancel(signum)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


class Supervisor:
    """Runs one command to completion on a launcher, guided by a policy client."""

    def __init__(
        self,
        launcher: Launcher,
        client_for: ClientFor,
        config: SupervisorConfig,
        ledger: Ledger,
        progress: Progress = silent,
        clock: Clock = SYSTEM_CLOCK,
        log: JobLog | None = None,
        on_event: EventWatcher | None = None,
        outlook: PriceOutlook | None = None,
    ) -> None:
        self.launcher, self.client_for, self.config = launcher, client_for, config
        self.outlook = outlook
        """The price forecasts a capped spot instance is moved by (None: not read)."""
        self._move_reason: str | None = None
        self._on_demand_why: str | None = None
        """Why the instance being watched was asked to move (None: its risk)."""
        self.log = log
        self.on_event = on_event
        self._reached_step = 0
        """The furthest training step any instance of the job reached."""
        self._damaged: set[str] = set()
        """Damaged checkpoint copies recorded in the ledger (their paths)."""
        """Where the command's output goes, per instance (None: the launcher's default)."""
        self.ledger, self.progress, self.clock = ledger, progress, clock
        self.report = RunReport()
        self._taken_until_hours: dict[str, float] = {}
        """Pools under a preemption notice, until (launcher hours) the provider takes them."""
        self._refused_until: dict[str, float] = {}
        """Pools that refused a launch, left alone until this (``clock.monotonic``)."""
        self._seen: dict[str, tuple[bool, float]] = {}
        """Blind (a cloud): each pool's availability as a launch last showed it, and when
        (launcher hours)."""
        self._asked: list[str] = []
        """The rest of the pools the last launch request named, tried in order."""
        self._bid: float | None = None
        """The most $/h the policy's last spot decision would pay (None: no cap)."""
        self._move_to: Decision | None = None
        """The policy's decision that moved the job: where it goes next."""
        self._cached_client: tuple[tuple[object, ...], PolicyClient] | None = None
        self._cancel: int | None = None
        """The signal that asked the supervisor to stop, once one has."""
        self._instance: Instance | None = None
        self._drill = (
            Drill(config.drill_after_s, config.drill_every)
            if config.drill_after_s is not None
            else None
        )
        """The preemption drill (``--preempt-after``/``--preempt-every``), if any."""
        self._warned_unguarded = False
        """Whether the job was told that its command has not started a guard."""
        self._told_no_advice = False
        """Whether the job was told that the policy gave no advice in time."""
        job = config.job
        self.prices = config.prices or PriceBook.flat(
            launcher.pools, job.spot_price, job.on_demand_price
        )

    def cancel(self, signum: int = signal.SIGTERM) -> None:
        """Stop the job: a notice now, a kill after ``cancel_grace_s`` (a second call: now)."""
        if self._cancel is not None and self._instance is not None:
            self._instance.kill()
        self._cancel = signum

    def _client(self) -> PolicyClient:
        """The policy client over the history so far, built again only when it has grown."""
        history, gap = self.launcher.history()
        key = (history.shape, gap)
        if self._cached_client is None or self._cached_client[0] != key:
            self._cached_client = (key, self.client_for(history, gap, self.launcher.pools))
        return self._cached_client[1]

    def _place(self, client: PolicyClient, avoid: str | None) -> Placement | None:
        """Where to run next (None = wait), from the policy or the on-demand fallback."""
        if self._on_demand_for_good():
            n = self.report.preemptions - self.report.drills
            return self._on_demand(
                f"{n} preemption{'' if n == 1 else 's'} reached --on-demand-after "
                f"{self.config.on_demand_after}"
            )
        if self._asked:  # the launch request names more pools: try the next one
            return self._spot(self._asked.pop(0))
        if self._move_to is not None:  # where the policy moved the job
            decision, self._move_to = self._move_to, None
            self._asked = [p for p in decision.request_pools if p != decision.pool]
            self._bid = decision.bid
            return self._spot(str(decision.pool))
        decision = self._decide(
            client,
            avoid,
            IdleState(
                elapsed_hours=self.launcher.now_hours(),
                progress_hours=min(self.report.progress_hours, self.config.job.compute_hours),
            ),
        )
        if decision.action == "wait":
            return None
        if decision.action == "on-demand":
            return self._on_demand(f"the policy: {decision.reason}")
        self._asked = [p for p in decision.request_pools if p != decision.pool]
        self._bid = decision.bid
        return self._spot(str(decision.pool))

    def _decide(
        self, client: PolicyClient, avoid: str | None, state: IdleState | SpotState
    ) -> Decision:
        """The policy's next action for a job in ``state``, shown each pool as the launcher
        shows it (a cloud: as the job's launches last saw it), less refused and taken ones."""
        now, hours = self.clock.monotonic(), self.launcher.now_hours()
        blind = self.launcher.observe != "all"
        shown = self.launcher.available() if not blind else dict.fromkeys(self.launcher.pools, True)
        pools = {}
        for p, up in shown.items():
            usable = (
                up
                and p != avoid
                and self._refused_until.get(p, 0.0) <= now
                and self._taken_until_hours.get(p, 0.0) <= hours
            )
            seen = self._as_seen(p, usable, hours) if blind else PoolNow(available=usable)
            pools[p] = seen.model_copy(update={"price": self.prices.spot_quote(p).usd_per_hour})
        return client.decide(
            DecisionRequest(
                policy=self.config.policy,
                job=self.config.job,
                state=state,
                pools=pools,
                observe="probe" if blind else "all",
            )
        )

    def _as_seen(self, pool: str, usable: bool, hours: float) -> PoolNow:
        """A pool as a blind supervisor (a cloud's) knows it: as its last launch showed it."""
        if pool not in self._seen:
            return PoolNow(available=usable, seen_minutes_ago=None if usable else 0.0)
        seen_up, at = self._seen[pool]
        ago = max(0.0, (hours - at) * 60)
        return PoolNow(available=seen_up and usable, seen_minutes_ago=ago)

    def _spot_is_back(self, instance: Instance) -> bool:
        """On on-demand: whether the policy would move the job to spot now (never once the
        job has fallen back to on-demand for good)."""
        if self._on_demand_for_good():
            return False
        job = self.config.job
        now = self.launcher.now_hours()
        running = _running_hours(instance, now)
        state = IdleState(
            elapsed_hours=now,
            progress_hours=min(self.report.progress_hours + running, job.compute_hours),
            instance="on-demand",
        )
        try:
            return self._decide(self._client(), None, state).action == "spot"
        except PolicyError as exc:  # no answer now: stay on on-demand, ask again later
            self._advice_missing(exc)
            return False

    def _on_demand_for_good(self) -> bool:
        """Whether the job has fallen back to on-demand for good: ``on_demand_after``
        preemptions by the cloud (drills do not count)."""
        taken_back = self.report.preemptions - self.report.drills
        return taken_back >= self.config.on_demand_after

    def _spot(self, pool: str) -> Placement:
        """Spot in ``pool`` at its quote, with the policy's last bid (None: no cap)."""
        return Placement(
            market="spot",
            pool=pool,
            price=self.prices.spot_quote(pool).usd_per_hour,
            bid=self._bid,
        )

    def _on_demand(self, why: str) -> Placement:
        """An on-demand placement, its reason said and kept in the ledger (once while it
        stays the same)."""
        if why != self._on_demand_why:
            self._on_demand_why = why
            self.progress(f"on-demand: {why}")
            self.ledger.record(EntryKind.ON_DEMAND, market="on-demand", detail=why)
        return Placement(
            market="on-demand", pool=None, price=self.prices.on_demand_quote().usd_per_hour
        )

    def _saw(self, pool: str | None, up: bool) -> None:
        """Remember what a launch or a preemption showed of ``pool``, as of now."""
        if pool:
            self._seen[pool] = (up, self.launcher.now_hours())

    def run(self, command: Sequence[str]) -> RunReport:
        """Run ``command`` until it completes; the job is never left ``running``.

        Raises:
            ExecutorError: after ``max_failures`` exits that were not preemptions, or when the
                command cannot be started.
            Cancelled: on SIGTERM/SIGINT (or :meth:`cancel`), after the job had its grace.
        """
        status = JobStatus.FAILED
        try:
            with cancel_on_signals(self.cancel):
                self._run(command)
            status = JobStatus.COMPLETED
        except Cancelled:
            status = JobStatus.CANCELLED
            raise
        except Stopped:
            status = JobStatus.PRUNED
            raise
        except BaseException:
            if self._instance is not None:
                self._instance.terminate()
            raise
        finally:  # however it ended, its checkpoints cost storage
            size_checkpoints(self.config.checkpoints, self.ledger, self.progress)
            self.ledger.finish(status)
        return self.report

    def _check_cancelled(self) -> None:
        if self._cancel is not None:
            name = signal.Signals(self._cancel).name
            raise Cancelled(
                f"cancelled by {name}: the job was stopped", self._cancel, self.ledger.job_id
            )

    def _run(self, command: Sequence[str]) -> None:
        avoid: str | None = None
        env = dict(os.environ)
        while True:
            self._check_cancelled()
            placement = self._place(self._client(), avoid)
            avoid = None
            if placement is None:
                self.launcher.wait(self.config.poll_s * 5)
                continue
            instance = self._launch(placement, command, env)
            if instance is None:
                continue
            watch, code = self._watch(instance)
            outcome = watch.outcome(code)
            self._instance = None
            self._account(instance, outcome, code)
            if outcome is Outcome.DONE:
                self.report.completed = True
                break
            avoid = self._after(placement, outcome, code, command, drilled=watch.drilled)
        if self._drill is not None and self._drill.too_late:
            self.progress(
                f"drill: none sent: the training loop ended before it was due "
                f"({self._drill.after_s:g} s after the first step); a shorter --preempt-after "
                "drills this job"
            )

    def _launch(
        self, placement: Placement, command: Sequence[str], env: dict[str, str]
    ) -> Instance | None:
        """Start the command at ``placement`` and record it (None: the pool had no capacity;
        it is left alone a while).

        Raises:
            LaunchError: when the command cannot be started (recorded as a failure).
        """
        env.update(SPOTWISE_POOL=placement.pool or "", SPOTWISE_MARKET=placement.market)
        self.progress(f"launching on {placement.describe()}")
        try:
            sink = self.log.for_instance(placement) if self.log else None
            instance = self.launcher.launch(placement, command, env, sink)
        except NoCapacity as exc:
            self.progress(f"no capacity ({exc}): choosing again")
            self._refused_until[placement.pool or ""] = (
                self.clock.monotonic() + self.config.no_capacity_s
            )
            self._saw(placement.pool, False)
            return None
        except LaunchError as exc:
            self.ledger.record(EntryKind.FAILURE, pool=placement.pool, detail=str(exc))
            raise
        self._instance = instance
        self._launched(instance)
        self._asked = []
        self._saw(placement.pool, True)
        self.ledger.running_in(instance.process_group())
        self.report.instances += 1
        self.report.placements.append(placement.describe())
        return instance

    def _after(
        self,
        placement: Placement,
        outcome: Outcome,
        code: int,
        command: Sequence[str],
        *,
        drilled: bool = False,
    ) -> str | None:
        """Record how an instance that did not finish the job ended (``drilled``: its notice
        was a drill's); the pool to avoid next (the one a move left).

        Raises:
            Cancelled: when the job was cancelled.
            Stopped: when its watcher (a pruner) stopped it.
            ExecutorError: after ``max_failures`` exits that were not preemptions.
        """
        if outcome is Outcome.CANCELLED:
            self._check_cancelled()
        if outcome is Outcome.STOPPED:
            raise Stopped(
                "stopped by its watcher (pruned): the instance was ended", self.ledger.job_id
            )
        if outcome is Outcome.MIGRATED:
            self._migrated(placement)
            return placement.pool
        if outcome is Outcome.PREEMPTED:
            self._preempted(placement, drilled)
            return None
        self._failed(placement, outcome, code, command)
        return None

    def _preempted(self, placement: Placement, drilled: bool, detail: str | None = None) -> None:
        """Record a preemption (a drill's: said so, and not counted toward on-demand), with
        the ledger's ``detail`` of a cloud's."""
        self.report.preemptions += 1
        if drilled:
            self.report.drills += 1
            self.progress(
                f"preempted on {placement.describe()} by the drill (not counted toward "
                "--on-demand-after)"
            )
        else:
            self._saw(placement.pool, False)  # a drill does not take the pool back
            said = f": {detail}" if detail else ""
            self.progress(f"preempted on {placement.describe()}{said}")
        self.ledger.record(
            EntryKind.PREEMPTION,
            pool=placement.pool,
            market=placement.market,
            detail=DRILL_DETAIL if drilled else detail,
        )

    def _migrated(self, placement: Placement) -> None:
        """Record a move that got out with its checkpoint, and say why it moved."""
        why = self._move_reason or "the policy moved it"
        self.report.migrations += 1
        self.ledger.record(
            EntryKind.MIGRATION,
            pool=placement.pool,
            market=placement.market,
            detail=self._move_reason,
        )
        self.progress(
            "left on-demand for spot: the on-demand instance is released"
            if placement.market == "on-demand"
            else f"moved off {placement.pool}: {why}"
        )

    def _failed(
        self, placement: Placement, outcome: Outcome, code: int, command: Sequence[str]
    ) -> None:
        """Record an exit that was not a preemption; give up after ``max_failures``.

        Raises:
            ExecutorError: after ``max_failures`` of them.
        """
        self.report.failures += 1
        why = (
            f"no step heartbeat for {self.config.stall_timeout_s:.0f} s (hung; --stall-timeout)"
            if outcome is Outcome.STALLED
            else f"exit code {code}"
        )
        self.ledger.record(EntryKind.FAILURE, pool=placement.pool, detail=why)
        if self.report.failures >= self.config.max_failures:
            raise ExecutorError(
                f"{command[0]}: {why} (not a preemption), {self.report.failures} "
                "times; fix the job and run again"
            )
        self.progress(f"{why} (not a preemption): relaunching from its checkpoint")

    def _watch(self, instance: Instance) -> tuple[Watch, int]:
        """Follow one instance to its end, running the watchers on it every poll
        (:mod:`executor.supervise.watch`): its course, and its exit code."""
        watch = Watch(instance=instance, launched_at=self.clock.monotonic())
        self._move_reason = None
        watchers = self._watchers(instance)
        rides_out = instance if isinstance(instance, RidesOut) else None
        while (code := instance.poll()) is None:
            now = self.clock.monotonic()
            for watcher in watchers:
                if watcher.tick(watch, now):
                    break
            if rides_out is not None:
                self._rode_out(rides_out, instance.placement)
            self.ledger.retry()
            self.clock.sleep(self.config.poll_s)
        if rides_out is not None:
            self._rode_out(rides_out, instance.placement)
        # (a command that failed, or was stopped, has more to fix first)
        ended = code in (0, PREEMPTED_EXIT_CODE) and not (
            watch.stopped or watch.killed or watch.cancelling
        )
        if ended and not watch.started and not GuardStart.announced(instance):
            self._warn_unguarded(ended=True)
        instance.terminate()
        outcome = watch.outcome(code)
        if outcome is Outcome.PREEMPTED and code == PREEMPTED_EXIT_CODE and not watch.noticed:
            self._heard_on_instance(instance.placement)
        return watch, code

    def _rode_out(self, instance: RidesOut, placement: Placement) -> None:
        """Count each take-back ``instance`` (at ``placement``) rode out (a Kubernetes Pod's
        node reclaimed, a new Pod resuming): a preemption, and its notice when it had its
        SIGTERM window."""
        for taken in instance.ridden_out():
            detail = f"{taken.reason} ({taken.worker}; the instance rode it out)"
            self._preempted(placement, drilled=False, detail=detail)
            if taken.noticed:
                self.ledger.record(
                    EntryKind.NOTICE, pool=placement.pool, market=placement.market, detail=detail
                )

    def _heard_on_instance(self, placement: Placement) -> None:
        """Record the notice a job heard itself (a cloud's, watched on its instance) and left
        by: the supervisor passed none on, so it is counted here, once."""
        self.ledger.record(EntryKind.NOTICE, pool=placement.pool, market=placement.market)

    def _watchers(self, instance: Instance) -> list[Watcher]:
        """The watchers of one instance, in the order each poll runs them."""
        config = self.config
        pool = instance.placement.pool
        watchers: list[Watcher] = [
            Waiting(config.waiting_report_s, self.progress),
            Cancelling(lambda: self._cancel is not None, config.cancel_grace_s, self.progress),
        ]
        if self.on_event is not None:
            watchers.append(EventStop(self.on_event))
        if config.stall_timeout_s is not None:
            watchers.append(Stall(config.stall_timeout_s))
        if config.step_report_s is not None:
            watchers.append(Steps(config.step_report_s, self.progress))
        watchers += [
            GuardStart(
                GuardStart.announced,
                config.guard_wait_s,
                lambda: self._warn_unguarded(ended=False),
            ),
            Notices(
                self.launcher,
                lead_s=config.lead_s,
                grace_s=config.grace_s,
                drill=self._drill,
                noticed=self._noticed,
            ),
        ]
        if pool and instance.placement.market == "spot" and config.move_check_s is not None:
            every = max(config.poll_s * 10, config.move_check_s)
            watchers.append(Every(every, 0.0, lambda watch: self._move_pays(watch.instance)))
        if self._watches_price(instance.placement) and config.price_check_s is not None:
            watchers.append(Every(config.price_check_s, 0.0, self._price_crosses))
        spot_check_s = config.spot_check_s
        if instance.placement.market == "on-demand" and spot_check_s is not None:
            watchers.append(Every(spot_check_s, spot_check_s, self._back_to_spot))
        return watchers

    def _noticed(self, watch: Watch, coming: Preemption, drill: bool) -> None:
        """A notice was passed on: say a drill, mark the pool taken, and record it."""
        placement = watch.instance.placement
        if drill:
            self.progress(f"drill: a preemption notice to the job now ({self._drill_count()})")
        elif placement.pool:  # a drill does not take the pool back
            self._taken_until_hours[placement.pool] = coming.at_hours
        self.ledger.record(
            EntryKind.NOTICE,
            pool=placement.pool,
            market=placement.market,
            detail=DRILL_DETAIL if drill else None,
        )

    def _drill_count(self) -> int:
        return self._drill.sent if self._drill is not None else 0

    def _back_to_spot(self, watch: Watch) -> bool:
        """On on-demand: whether to checkpoint and leave for spot now (said when so)."""
        if not self._spot_is_back(watch.instance):
            return False
        self.progress("spot is back: checkpointing to leave on-demand")
        return True

    def _warn_unguarded(self, *, ended: bool) -> None:
        """Tell the job, once, that its command has not started a guard (or ``ended``
        without one)."""
        wait = self.config.guard_wait_s
        if self._warned_unguarded or wait is None:
            return
        self._warned_unguarded = True
        guard = "a guard (spotwise.executor.guard)"
        self.progress(
            f"the command ended without starting {guard}: drills, replayed preemptions and "
            "migration could not act on it"
            if ended
            else f"the command has not started {guard} in its first {wait:g} s: drills, "
            "replayed preemptions and migration cannot act on it"
        )

    def _launched(self, instance: Instance) -> None:
        """Record a started instance: in the ledger (so ``jobs show`` counts it while it runs)
        and in the job's log (so ``jobs logs`` names it)."""
        name = getattr(instance, "instance_id", None)
        placement = instance.placement
        self.ledger.record(
            EntryKind.LAUNCH,
            pool=placement.pool,
            market=placement.market,
            price=placement.bid,  # the bid: the most it may cost (None: no cap)
            detail=name,
        )
        if self.log is not None:
            self.log.launched(name)

    def _move_pays(self, instance: Instance) -> bool:
        """Whether the policy, asked where the job on this spot instance should run now, says
        another pool (then it checkpoints and moves there; the policy's reason is said and kept
        in the ledger)."""
        if self._on_demand_for_good():
            return False
        pool = str(instance.placement.pool)
        job = self.config.job
        state = SpotState(
            elapsed_hours=self.launcher.now_hours(),
            progress_hours=min(
                self.report.progress_hours + _running_hours(instance, self.launcher.now_hours()),
                job.compute_hours,
            ),
            instance="spot",
            pool=pool,
        )
        try:
            decision = self._decide(self._client(), None, state)
        except PolicyError as exc:  # no advice now: no move, and the job runs on
            self._advice_missing(exc)
            return False
        if decision.action != "spot" or decision.pool in (None, pool):
            return False
        self._move_to = decision
        self._move_reason = f"the policy moves it to {decision.pool}: {decision.reason}"
        self.progress(f"checkpointing to move: {self._move_reason}")
        return True

    def _cap(self, placement: Placement) -> float | None:
        """The most a spot instance may cost before the cloud takes it back: the policy's bid,
        never above :attr:`SupervisorConfig.max_price` (None: no cap)."""
        caps = [c for c in (placement.bid, self.config.max_price) if c]
        return min(caps) if caps else None

    def _watches_price(self, placement: Placement) -> bool:
        """Whether the price forecast can move this instance: capped spot, with forecasts."""
        return (
            self.outlook is not None
            and placement.market == "spot"
            and placement.pool is not None
            and self._cap(placement) is not None
        )

    def _price_crosses(self, watch: Watch) -> bool:
        """Whether the price forecast of the instance's pool rises above its cap before its
        next checkpoint and the next read (then it moves first, said so)."""
        placement = watch.instance.placement
        cap = self._cap(placement)
        if self.outlook is None or placement.pool is None or cap is None:
            return False
        now = self.clock.time()
        interval = checkpoint_interval(watch.instance.events, given_checkpoint_s())
        ahead = interval + (self.config.price_check_s or 0.0)
        crossing = self.outlook.crossing(placement.pool, cap, now, now + ahead)
        if crossing is None:
            return False
        self._move_reason = f"its {crossing.describe(now)}"
        self.progress(f"checkpointing to move before the eviction: {self._move_reason}")
        return True

    def _advice_missing(self, exc: PolicyError) -> None:
        """Say once a run that the policy gave no advice (a move, a return to spot) in time."""
        if not self._told_no_advice:
            self._told_no_advice = True
            self.progress(f"the policy gave no advice in time ({exc}); the job runs on as it is")

    def _account(self, instance: Instance, outcome: Outcome, code: int | None = None) -> None:
        """Bill the instance and credit its productive time (none if it was killed): from its
        first step (or, for a command that does not say, the guard's start) to its end."""
        end = self.launcher.now_hours()
        hours = end - instance.started_hours
        placement = instance.placement
        cost = hours * placement.price
        self.report.cost_usd += cost
        baseline = self.prices.on_demand_quote(placement.pool).usd_per_hour
        self.ledger.record(
            EntryKind.INSTANCE,
            pool=placement.pool,
            market=placement.market,
            hours=hours,
            price=placement.price,
            cost_usd=cost,
            on_demand_price=baseline,
        )
        self._count_steps(instance)
        self._record_damaged(instance)
        self.report.events.extend(instance.events)
        since = _productive_since(instance, outcome, code)
        if since is None:
            return
        first, clean = since
        productive = end - first
        if clean:
            self.report.progress_hours += productive
        else:
            self.report.lost_hours += productive
            self.ledger.record(
                EntryKind.LOST_WORK,
                pool=placement.pool,
                hours=productive,
                price=placement.price,
                on_demand_price=baseline,
            )

    def _record_damaged(self, instance: Instance) -> None:
        """Keep in the ledger, once per copy, each damaged checkpoint the instance's guard
        passed over on resume (its ``resumed`` event's ``damaged``), and say it."""
        for event in instance.events:
            damaged = event.get("damaged") if event.get("event") == "resumed" else None
            for copy in damaged if isinstance(damaged, list) else []:
                path = copy.get("path") if isinstance(copy, dict) else None
                if not isinstance(path, str) or path in self._damaged:
                    continue
                self._damaged.add(path)
                detail = f"{path} (step {copy.get('step')}), resumed from step {event.get('step')}"
                self.ledger.record(
                    EntryKind.DAMAGED_CHECKPOINT, pool=instance.placement.pool, detail=detail
                )
                self.progress(f"warning: a damaged checkpoint was skipped on resume: {detail}")

    def _count_steps(self, instance: Instance) -> None:
        """Steps this instance did again (past what the job had reached before its resume
        point), and the furthest step it reached (its ``preempted``/``done`` step, else the
        guard's heartbeat)."""
        steps = {e.get("event"): e.get("step") for e in instance.events}
        start = steps.get("resumed", steps.get("fresh"))
        if not isinstance(start, int):
            return
        self.report.steps_lost += max(0, self._reached_step - start)
        end = steps.get("done", steps.get("preempted"))
        if not isinstance(end, int):
            taken = getattr(instance, "steps_taken", None)
            end = start + taken() if callable(taken) else start
        self._reached_step = max(self._reached_step, end)


def size_checkpoints(
    places: Sequence[CheckpointPlace], ledger: Ledger, progress: Progress = silent
) -> None:
    """Record the bytes each checkpoint place holds, at the job's end however it ended; one
    that cannot be read is said and left unsized (the report then says its storage is not
    counted)."""
    for place in places:
        try:
            size = place.nbytes()
        except (ExecutorError, OSError) as exc:
            progress(f"checkpoints at {place.where} not sized: {exc}")
            continue
        ledger.record(EntryKind.CHECKPOINT, nbytes=size, detail=place.where)


def checkpoint_interval(events: Sequence[dict[str, Any]], given_s: float | None = None) -> float:
    """The command's checkpoint interval in seconds, as its guard last said (``interval_s`` of
    an event), else as the job was given it (``$SPOTWISE_CHECKPOINT_S``), else the guard's own
    default before it has measured a save."""
    for event in reversed(events):
        interval = event.get("interval_s")
        if isinstance(interval, int | float) and interval > 0:
            return float(interval)
    return given_s or DEFAULT_INTERVAL_S


def given_checkpoint_s() -> float | None:
    """The checkpoint interval the job's guards are given (``$SPOTWISE_CHECKPOINT_S``, as
    ``run --checkpoint-minutes`` sets it; None: not given, or not readable)."""
    try:
        return current().checkpoint_s
    except SettingsError:  # the guard says what is wrong with it
        return None


def _productive_since(
    instance: Instance, outcome: Outcome, code: int | None
) -> tuple[float, bool] | None:
    """When ``instance``'s productive time began (launcher hours: its first step, or for a
    command that does not say, the guard's start) and whether it ended clean, its work kept
    (None: it never started)."""
    events = instance.events
    if not events:  # a remote instance: its exit code is all there is
        clean = outcome in (Outcome.DONE, Outcome.PREEMPTED, Outcome.MIGRATED) or (
            outcome is Outcome.CANCELLED and code in (0, PREEMPTED_EXIT_CODE)
        )
        return instance.started_hours, clean
    first = next((e for e in events if e.get("event") == "first_step"), None)
    first = first or next((e for e in events if e.get("event") in ("fresh", "resumed")), None)
    if first is None:
        return None
    return float(str(first["cloud_hours"])), _ended_clean(events, outcome, code)


def _ended_clean(events: list[dict[str, Any]], outcome: Outcome, code: int | None) -> bool:
    """Whether a command's work was kept: it said so (``done``, ``preempted``), or, for one
    that does not say how it ended (a stranger's script under the guard), its exit 0 or
    preempted code came after the guard's last checkpoint (a cancelled one's too: it
    checkpointed in its grace)."""
    if any(e.get("event") in ("done", "preempted") for e in events):
        return True
    return code in (0, PREEMPTED_EXIT_CODE) and outcome in (
        Outcome.DONE,
        Outcome.PREEMPTED,
        Outcome.MIGRATED,
        Outcome.CANCELLED,
    )


def _running_hours(instance: Instance, now_hours: float) -> float:
    """Launcher hours the instance has trained since its first step (0 before it)."""
    first = next((e for e in instance.events if e.get("event") == "first_step"), None)
    return now_hours - float(str(first["cloud_hours"])) if first else 0.0

"""Run a training command under a fixed schedule of take-backs, on this machine: the bench's
and the demo's reference runs, on the supervisor's own watch core (:mod:`executor.supervise.watch`).

The schedule's clock runs from the first launch, across restarts, as a cloud's would. At each
take-back the command gets a notice (SIGTERM) ``lead_s`` before it (a command still starting
gets it once its guard has announced itself), then a kill at the take-back plus ``grace_s`` if
it is still there. A command that exits with the preempted code is launched again at once (on
"another instance"); any other non-zero exit is a real failure and stops the run.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.core.progress import Progress
from spotwise.executor.errors import ExecutorError
from spotwise.executor.launchers.base import Instance, Placement, Preemption
from spotwise.executor.launchers.local import LocalInstance
from spotwise.executor.supervise.watch import (
    GuardStart,
    Notices,
    Outcome,
    Steps,
    Watch,
    Watcher,
)

ANYWHERE = Placement(market="spot", pool="replay", price=0.0)
"""Where a replayed run's instances are: one pool, priced at nothing (no money is involved)."""

STEP_REPORT_S = 15.0
"""How often a replayed run says its step, when asked to."""


@dataclass(slots=True)
class Launch:
    """One process of the run and what it reported."""

    started: float
    events: list[dict[str, Any]] = field(default_factory=list)
    returncode: int | None = None
    noticed: bool = False
    killed: bool = False

    def event(self, name: str) -> dict[str, Any] | None:
        """Its first event named ``name`` (None: it printed none)."""
        return next((e for e in self.events if e.get("event") == name), None)


@dataclass(slots=True)
class ReplayRun:
    """Every launch of one replayed run."""

    launches: list[Launch]
    wall_s: float

    @property
    def preemptions(self) -> int:
        """Launches a take-back reached (noticed, or killed)."""
        return sum(1 for launch in self.launches if launch.noticed or launch.killed)


class Schedule:
    """The take-backs, in seconds from the run's first launch, as a launcher shows them."""

    def __init__(self, at_s: Sequence[float], max_hits: int | None, clock: Clock) -> None:
        self.at_s, self.max_hits, self.clock = sorted(at_s), max_hits, clock
        self.began = clock.monotonic()
        self.next = 0
        """The first take-back not yet past."""
        self.hits = 0

    def now_s(self) -> float:
        """Seconds since the first launch."""
        return self.clock.monotonic() - self.began

    def now_hours(self) -> float:
        """Hours since the first launch."""
        return self.now_s() / 3600

    def skip_past(self) -> None:
        """Take-backs that fell while nothing ran took nothing away."""
        while self.next < len(self.at_s) and self.at_s[self.next] < self.now_s():
            self.next += 1

    def preemption(self, instance: Instance) -> Preemption | None:
        """The next take-back of a command whose guard has started (None: none left)."""
        if self.next >= len(self.at_s) or (
            self.max_hits is not None and self.hits >= self.max_hits
        ):
            return None
        if not GuardStart.announced(instance):
            return None
        at = self.at_s[self.next]
        return Preemption(in_s=at - self.now_s(), at_hours=at / 3600)


def run_under_replay(
    command: Sequence[str],
    preemptions_at_s: Sequence[float],
    *,
    lead_s: float,
    grace_s: float,
    max_launches: int = 50,
    max_preemptions: int | None = None,
    env: dict[str, str] | None = None,
    progress: Progress | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> ReplayRun:
    """Run ``command`` (printing JSON event lines) until it exits 0; after
    ``max_preemptions`` take-backs have hit it (None: no limit), the rest of the schedule is
    left out.

    Raises:
        ExecutorError: on a non-zero exit other than the preempted code, or too many launches.
    """
    schedule = Schedule(preemptions_at_s, max_preemptions, clock)
    launches: list[Launch] = []
    while True:
        if len(launches) >= max_launches:
            raise ExecutorError(f"gave up after {max_launches} launches of {command[0]}")
        schedule.skip_past()
        instance = LocalInstance(
            ANYWHERE,
            command,
            dict(os.environ if env is None else env),
            cloud_hours=schedule.now_hours,
            clock=clock,
            log=_to_stderr,
        )
        launch = Launch(started=clock.time(), events=instance.events)
        launches.append(launch)
        watch = _follow(
            instance, schedule, lead_s=lead_s, grace_s=grace_s, progress=progress, clock=clock
        )
        code = instance.poll()
        assert code is not None  # (followed to its end)
        instance.terminate()
        launch.returncode, launch.noticed, launch.killed = code, watch.noticed, watch.killed
        if watch.noticed:
            schedule.next += 1
            schedule.hits += 1
        if code == 0:
            return ReplayRun(launches=launches, wall_s=schedule.now_s())
        # Killed by our own notice before it could be handled: a take-back all the same.
        if watch.outcome(code) is not Outcome.PREEMPTED:
            raise ExecutorError(
                f"{command[0]} failed with exit code {code} (not a preemption); fix the job "
                "and run again"
            )


def _to_stderr(line: str) -> None:
    """What the command prints besides its events: on the run's own stderr."""
    sys.stderr.write(line)


def _follow(
    instance: LocalInstance,
    schedule: Schedule,
    *,
    lead_s: float,
    grace_s: float,
    progress: Progress | None,
    clock: Clock,
) -> Watch:
    """Watch ``instance`` to its end under ``schedule``'s notices, saying its step to
    ``progress`` every :data:`STEP_REPORT_S`; a Ctrl-C (or any error) on the way stops it as a
    cloud would: a notice, ``grace_s`` to checkpoint, then a kill."""
    watch = Watch(instance=instance, launched_at=clock.monotonic())
    watchers: list[Watcher] = [
        GuardStart(GuardStart.announced, None, lambda: None),
        Notices(
            schedule,
            lead_s=lead_s,
            grace_s=grace_s,
            drill=None,
            noticed=lambda *_: None,
        ),
    ]
    if progress is not None:
        watchers.append(Steps(STEP_REPORT_S, progress))
    try:
        while instance.poll() is None:
            now = clock.monotonic()
            for watcher in watchers:
                watcher.tick(watch, now)
            clock.sleep(0.01)
    except BaseException:  # Ctrl-C, a signal the caller turned into an exception
        instance.notice()
        until = clock.monotonic() + grace_s
        while instance.poll() is None and clock.monotonic() < until:
            clock.sleep(0.05)
        instance.terminate()
        raise
    return watch

"""Following one instance to its end: the state of its course (:class:`Watch`) and the small
watchers the supervisor's loop runs on it every poll, each for one concern: what a booting
instance waits for, cancellation, a pruner's stop, a hung command, the guard's start, the cloud's
notices and the drills, a move on high risk, the way back from on-demand to spot, and how far
the training has got.

A watcher changes the watch only through its methods (``notice``, ``move``, ``kill``), so the
outcome follows from one record whoever acted (:meth:`Watch.outcome`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from spotwise.core.progress import Progress
from spotwise.executor.errors import PREEMPTED_EXIT_CODE
from spotwise.executor.launchers.base import Instance, Preemption
from spotwise.executor.training.heartbeat import TRAINED_EVENT


class Outcome(enum.StrEnum):
    """How one instance of the job ended."""

    DONE = "done"
    PREEMPTED = "preempted"
    MIGRATED = "migrated"
    FAILED = "failed"
    STALLED = "stalled"
    CANCELLED = "cancelled"
    STOPPED = "stopped"


@dataclass(slots=True)
class Watch:
    """One instance's course while the supervisor follows it."""

    instance: Instance
    launched_at: float
    """``clock.monotonic()`` at launch."""
    started_at: float | None = None
    """When its command's guard announced itself (None: not yet)."""
    noticed: bool = False
    """A preemption notice (the cloud's or a drill's) was passed on."""
    migrating: bool = False
    """It was asked to checkpoint and leave for a better place."""
    killed: bool = False
    stalled: bool = False
    stopped: bool = False
    """A pruner stopped the job for good."""
    cancelling: bool = False
    kill_at: float | None = None
    stepping_at: float | None = None
    """When its first training step was seen (the guard's start where steps cannot be)."""
    drilled: bool = False
    """Its notice was a drill's, not the cloud's (it does not count toward on-demand)."""
    _trained: bool = field(default=False, init=False, repr=False)
    _events_read: int = field(default=0, init=False, repr=False)
    """Events read for the ``trained`` one so far."""

    @property
    def trained(self) -> bool:
        """Whether its command's guard has ended its training loop (its ``trained`` event):
        what runs now is the script's tail (a final save, an eval, an upload), which no drill,
        move or stall check may cut short, or a relaunch would run it again."""
        if not self._trained:
            events = self.instance.events
            new, self._events_read = events[self._events_read :], len(events)
            self._trained = any(e.get("event") == TRAINED_EVENT for e in new)
        return self._trained

    @property
    def started(self) -> bool:
        """Whether its command's guard has announced itself."""
        return self.started_at is not None

    @property
    def leaving(self) -> bool:
        """Whether it has been told to checkpoint and go (a notice, or a move)."""
        return self.noticed or self.migrating

    def notice(self) -> None:
        """Pass a notice on, once: a moving instance has had its notice already."""
        if not self.leaving:
            self.instance.notice()
        self.noticed = True

    def move(self) -> None:
        """Ask it to checkpoint and leave (a move, not a preemption)."""
        self.instance.notice()
        self.migrating = True

    def kill(self) -> None:
        """Take it away now (once)."""
        if not self.killed:
            self.instance.kill()
            self.killed = True

    def kill_if_due(self, now: float) -> None:
        """Kill it once the grace after its take-back is up."""
        if self.kill_at is not None and now >= self.kill_at:
            self.kill()

    def outcome(self, code: int) -> Outcome:
        """How it ended, from its exit ``code`` and what was done to it."""
        if self.stopped:
            return Outcome.STOPPED
        if self.cancelling:
            return Outcome.CANCELLED
        if self.stalled:
            return Outcome.STALLED
        return self._exited(code)

    def _exited(self, code: int) -> Outcome:
        """How an instance nobody stopped, cancelled or found hung ended, by its ``code``."""
        if code == 0:
            return Outcome.DONE
        # A move that got out before the kill is a move, even if the pool's own notice came
        # while it was checkpointing.
        if self.migrating and not self.killed and code == PREEMPTED_EXIT_CODE:
            return Outcome.MIGRATED
        if code == PREEMPTED_EXIT_CODE or self.killed or (self.noticed and code < 0):
            return Outcome.PREEMPTED
        return Outcome.FAILED


class Watcher(Protocol):
    """One concern of the supervisor's loop, run on the watch every poll."""

    def tick(self, watch: Watch, now: float) -> bool:
        """Act on ``watch`` at ``now`` (``clock.monotonic()``); True: the rest of this poll's
        watchers are skipped (a cancelled job only waits for its grace)."""
        ...


class Waiting:
    """Says what the job waits for while a cloud instance has sent no output, every
    ``every_s``."""

    def __init__(self, every_s: float | None, progress: Progress) -> None:
        self.every_s, self.progress = every_s, progress
        self._next: float | None = None

    def tick(self, watch: Watch, now: float) -> bool:
        """Say it when due."""
        waiting = getattr(watch.instance, "waiting", None)
        if self.every_s is None or not callable(waiting):
            return False
        if self._next is None:
            self._next = watch.launched_at + self.every_s
        if now >= self._next:
            self._next = now + self.every_s
            if line := waiting(now - watch.launched_at):
                self.progress(line)
        return False


class Cancelling:
    """Once the supervisor is asked to stop: a notice, ``grace_s`` to checkpoint, a kill."""

    def __init__(self, requested: Callable[[], bool], grace_s: float, progress: Progress) -> None:
        self.requested, self.grace_s, self.progress = requested, grace_s, progress
        self._kill_at: float | None = None

    def tick(self, watch: Watch, now: float) -> bool:
        """Notice, then kill when the grace is up; skips every other watcher meanwhile."""
        if not self.requested():
            return False
        if self._kill_at is None:
            self._kill_at = now + self.grace_s
            watch.cancelling = True
            if not watch.leaving:
                watch.instance.notice()
            self.progress("cancelling: the job has its grace to checkpoint")
        if now >= self._kill_at:
            watch.kill()
        return True


class EventStop:
    """Sees each JSON event the command prints; a True from ``on_event`` stops the job for good
    (a sweep's pruner)."""

    def __init__(self, on_event: Callable[[dict[str, object]], bool]) -> None:
        self.on_event = on_event
        self._seen = 0

    def tick(self, watch: Watch, now: float) -> bool:
        """Pass the new events on."""
        if watch.killed:
            return False
        events = watch.instance.events
        new, self._seen = events[self._seen :], len(events)
        if any(self.on_event(event) for event in new):
            watch.kill()
            watch.stopped = True
        return False


class Stall:
    """Kills a command whose step heartbeat has been quiet for ``stall_s`` (hung)."""

    def __init__(self, stall_s: float) -> None:
        self.stall_s = stall_s

    def tick(self, watch: Watch, now: float) -> bool:
        """Kill it when it has been quiet too long (never while it is leaving, nor once its
        training has ended: its tail takes no steps)."""
        if watch.leaving or watch.killed or watch.trained:
            return False
        quiet = watch.instance.quiet_s()
        if quiet is not None and quiet > self.stall_s:
            watch.kill()
            watch.stalled = True
        return False


class GuardStart:
    """Marks when the command's guard announced itself, and warns once when a local command
    runs past ``wait_s`` without one."""

    @staticmethod
    def announced(instance: Instance) -> bool:
        """Whether the command on ``instance`` has started a guard: its ``fresh``/``resumed``
        event, or what the launcher can see besides (a local guard's first heartbeat)."""
        if any(e.get("event") in ("fresh", "resumed") for e in instance.events):
            return True
        seen = getattr(instance, "guard_started", None)
        return bool(seen()) if callable(seen) else False

    def __init__(
        self,
        started: Callable[[Instance], bool],
        wait_s: float | None,
        warn: Callable[[], None],
    ) -> None:
        self.started, self.wait_s, self.warn = started, wait_s, warn

    def tick(self, watch: Watch, now: float) -> bool:
        """Mark the start, or warn."""
        if watch.started:
            return False
        if self.started(watch.instance):
            watch.started_at = now
        elif (
            self.wait_s is not None
            and now - watch.launched_at >= self.wait_s
            and watch.instance.process_group() is not None  # on this machine only
        ):
            self.warn()
        return False


class Drill:
    """A preemption notice through the same path a cloud's takes, ``after_s`` after the
    command's first training step (or the guard's start where steps cannot be seen): never
    before a step, so a machine too slow to step within ``after_s`` still makes progress, and
    only while the guard trains: never once its training loop has ended (a relaunch would run
    the script's tail again)."""

    def __init__(self, after_s: float, every: bool) -> None:
        self.after_s, self.every = after_s, every
        self.sent = 0
        """Drills sent to the job so far (one supervisor, every instance)."""
        self.too_late = False
        """Whether a training loop ended before the job's first drill was due."""

    def due(self, watch: Watch, now: float) -> bool:
        """Whether this instance's drill is due now."""
        if watch.trained:
            self.too_late = self.too_late or not self.sent
            return False
        if not watch.started or watch.leaving or (self.sent and not self.every):
            return False
        if watch.stepping_at is None:
            steps = getattr(watch.instance, "steps_taken", None)
            if callable(steps) and not steps():
                return False
            watch.stepping_at = now
        return now - watch.stepping_at >= self.after_s


def training_step(instance: Instance) -> int | None:
    """The command's training step now: where its guard started plus the steps its heartbeat
    counts, where the launcher reads one; else the newest step an event carried (None: none
    yet)."""
    events = instance.events
    start = next(
        (e.get("step") for e in reversed(events) if e.get("event") in ("fresh", "resumed")), None
    )
    taken = getattr(instance, "steps_taken", None)
    if isinstance(start, int) and callable(taken):
        return start + int(taken())
    steps = [e["step"] for e in events if isinstance(e.get("step"), int)]
    return max(steps) if steps else None


def total_steps(instance: Instance) -> int | None:
    """The steps the whole training takes, as its guard announced them (None: not said)."""
    for event in reversed(instance.events):
        total = event.get("total_steps")
        if event.get("event") in ("fresh", "resumed") and isinstance(total, int) and total > 0:
            return total
    return None


def duration(seconds: float) -> str:
    """``seconds`` as a person reads a time left: 45 s, 12 min, 3.5 h."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class Steps:
    """Says every ``every_s`` how far the training has got: its step, of how many, its pace
    since the step first seen on this instance, and the wall time left at that pace (nothing
    once its training loop has ended)."""

    def __init__(self, every_s: float, progress: Progress) -> None:
        self.every_s, self.progress = every_s, progress
        self._first: tuple[float, int] | None = None
        """When a step was first seen on this instance, and which."""
        self._next: float | None = None

    def tick(self, watch: Watch, now: float) -> bool:
        """Say it when due."""
        if not watch.started or watch.trained or (self._next is not None and now < self._next):
            return False
        step = training_step(watch.instance)
        if step is None:
            return False
        self._next = now + self.every_s
        if self._first is None:
            self._first = (now, step)
        else:
            self.progress(self.describe(step, total_steps(watch.instance), now))
        return False

    def describe(self, step: int, total: int | None, now: float) -> str:
        """The line: ``step 1,200 of 5,000 (24%), 3.1 steps/s, about 26 min left``."""
        assert self._first is not None
        began, first_step = self._first
        rate = (step - first_step) / (now - began) if now > began else 0.0
        of = f" of {total:,} ({100 * step / total:.0f}%)" if total else ""
        line = f"step {step:,}{of}, {rate:.3g} steps/s"
        if total and rate > 0 and step < total:
            line += f", about {duration((total - step) / rate)} left"
        return line


class TakeBacks(Protocol):
    """What a notice reads of the market: a launcher, or a replay's fixed schedule."""

    def preemption(self, instance: Instance) -> Preemption | None:
        """The next take-back of ``instance``, if known from outside."""
        ...

    def now_hours(self) -> float:
        """The market's hours since the job started."""
        ...


class Notices:
    """Passes the cloud's preemption notice on (and a drill's), and kills the instance
    ``grace_s`` after the take-back if it is still there."""

    def __init__(
        self,
        launcher: TakeBacks,
        *,
        lead_s: float,
        grace_s: float,
        drill: Drill | None,
        noticed: Callable[[Watch, Preemption, bool], None],
    ) -> None:
        self.launcher, self.lead_s, self.grace_s = launcher, lead_s, grace_s
        self.drill, self.noticed = drill, noticed

    def tick(self, watch: Watch, now: float) -> bool:
        """Notice when due; kill at the take-back plus the grace."""
        # the cloud takes an instance back whether or not its command has started
        coming = None if watch.noticed else self.launcher.preemption(watch.instance)
        drilled = self.drill is not None and self.drill.due(watch, now)
        if drilled:
            assert self.drill is not None
            self.drill.sent += 1
            watch.drilled = True
            coming = Preemption(in_s=self.lead_s, at_hours=self.launcher.now_hours())
        if coming is not None and coming.in_s <= self.lead_s:
            watch.notice()
            watch.kill_at = now + max(coming.in_s, 0.0) + self.grace_s
            self.noticed(watch, coming, drilled)
        watch.kill_if_due(now)
        return False


class Every:
    """Runs ``act`` on a started instance that is not leaving, every ``every_s`` from
    ``first_s`` after its launch; ``act`` says whether it should checkpoint and go now (a move:
    off a risky pool, or from on-demand back to spot)."""

    def __init__(self, every_s: float, first_s: float, act: Callable[[Watch], bool]) -> None:
        self.every_s, self.first_s, self.act = every_s, first_s, act
        self._next: float | None = None

    def tick(self, watch: Watch, now: float) -> bool:
        """Ask when due; move when told to (never once its training has ended: there is
        nothing left to move)."""
        if not watch.started or watch.leaving or watch.trained:
            return False
        if self._next is None:
            self._next = watch.launched_at + self.first_s
        if now >= self._next:
            self._next = now + self.every_s
            if self.act(watch):
                watch.move()
        return False

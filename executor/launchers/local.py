"""The local launcher (the embedded default): the command runs as a subprocess on this machine,
and spot pools are simulated by replaying real availability traces, so preemptions happen as
they did on the cloud.

The replayed cloud keeps its own time, at one of two paces: :class:`WallPace` runs it
``scale`` times faster than the wall clock (any command); :class:`StepPace` advances it with
the job's training steps, so the same job meets the same stretch of trace however fast or
loaded the machine is (commands under the guard, e.g. the demo).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.executor.errors import LaunchError
from spotwise.executor.launchers.base import Placement, Preemption, echo
from spotwise.executor.training.heartbeat import HEARTBEAT_ENV, last_step, seconds_quiet
from spotwise.policy.observe import ObserveMode
from spotwise.policy.traces import TraceSet


class LocalInstance:
    """A subprocess standing in for an instance; it records the command's JSON events.

    The command runs in a session of its own, so a Ctrl-C at the terminal reaches only the
    supervisor (which passes a notice on) and a kill takes every process the command started.

    Raises:
        LaunchError: when the command cannot be started (not found, not executable).
    """

    def __init__(
        self,
        placement: Placement,
        command: Sequence[str],
        env: dict[str, str],
        *,
        cloud_hours: Callable[[], float],
        clock: Clock = SYSTEM_CLOCK,
        on_end: Callable[[LocalInstance], None] = lambda _: None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.placement = placement
        self.address: str | None = "127.0.0.1"
        self._log = log or echo(placement)
        self.events: list[dict[str, Any]] = []
        self.started_hours = cloud_hours()
        self._cloud_hours, self._clock, self._on_end = cloud_hours, clock, on_end
        self._started_wall = clock.time()
        self._folder = Path(tempfile.mkdtemp(prefix="spotwise-instance-"))  # mode 0700
        self._heartbeat = self._folder / "heartbeat"
        scratch = self._folder / "tmp"  # the instance's disk: its temporary files go with it
        scratch.mkdir()
        self._first_step: int | None = None
        self._final_steps: int | None = None
        try:
            self._process = subprocess.Popen(
                list(command),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**env, HEARTBEAT_ENV: str(self._heartbeat), "TMPDIR": str(scratch)},
                start_new_session=True,
            )
        except OSError as exc:
            shutil.rmtree(self._folder, ignore_errors=True)
            raise LaunchError(
                f"cannot start {command[0]!r}: {exc.strerror or exc}; check the command after --"
            ) from exc
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._errors = threading.Thread(target=self._read_errors, daemon=True)
        self._errors.start()

    def _read_errors(self) -> None:
        assert self._process.stderr is not None
        for line in self._process.stderr:
            self._log(line)

    def _read(self) -> None:
        """JSON event lines become events; every other line is the job's log."""
        assert self._process.stdout is not None
        for line in self._process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            if not isinstance(event, dict):
                self._log(line)
                continue
            if event.get("event") in ("fresh", "resumed") and self._first_step is None:
                step = event.get("step")
                self._first_step = int(step) if isinstance(step, int | float) else 0
            event["cloud_hours"] = self._cloud_hours()
            self.events.append(event)

    def guard_started(self) -> bool:
        """Whether the command's guard has announced itself: its ``fresh``/``resumed`` event,
        or its first heartbeat (which a stdout redirected away from the supervisor keeps)."""
        return self._first_step is not None or self._heartbeat.exists()

    def steps_taken(self) -> int:
        """Training steps this instance has taken (from the guard's heartbeat)."""
        if self._final_steps is not None:
            return self._final_steps
        if self._first_step is None:
            return 0
        step = last_step(self._heartbeat)
        return 0 if step is None else max(step - self._first_step, 0)

    def poll(self) -> int | None:
        """The exit code once the process ended, else None."""
        code = self._process.poll()
        if code is not None:
            self._reader.join(timeout=5)
            self._errors.join(timeout=5)
        return code

    def notice(self) -> None:
        """Give a running job its take-back notice (SIGTERM)."""
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """Kill the job's whole process group at once."""
        with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone
            os.killpg(self._process.pid, signal.SIGKILL)

    def process_group(self) -> int:
        """The job's process group id."""
        return self._process.pid  # the leader of its own session and group

    def quiet_s(self) -> float:
        """Seconds since the job's last heartbeat (or its start)."""
        return seconds_quiet(self._heartbeat, self._started_wall, self._clock.time())

    def terminate(self) -> None:
        """Kill the job and wait until it and its reader are gone."""
        self.kill()
        self._process.wait()
        self._reader.join(timeout=5)
        if self._final_steps is None:
            self._final_steps = self.steps_taken()
            self._on_end(self)
        shutil.rmtree(self._folder, ignore_errors=True)


class Pace(Protocol):
    """How the replayed cloud's time advances."""

    scale: float
    """Cloud seconds per wall second, nominally."""

    def describe(self) -> str:
        """How fast the replay runs, in words."""
        ...

    def now_s(self, running: LocalInstance | None) -> float:
        """Cloud seconds since the replay began."""
        ...

    def launched(self) -> None:
        """An instance was started."""
        ...

    def ended(self, instance: LocalInstance) -> None:
        """``instance`` has ended (it took ``instance.steps_taken()`` steps)."""
        ...

    def wait(self, seconds: float) -> None:
        """The job waits ``seconds`` of wall time with nothing running."""
        ...

    def moving(self, instance: LocalInstance) -> bool:
        """Whether the replayed clock runs for ``instance`` now (a take-back can come)."""
        ...


class WallPace:
    """Cloud time runs ``scale``× the wall clock."""

    def __init__(self, scale: float, clock: Clock = SYSTEM_CLOCK) -> None:
        self.scale, self.clock = scale, clock
        self._began = clock.monotonic()

    def describe(self) -> str:
        """The pace as a person reads it."""
        return f"{self.scale:g}× the wall clock"

    def now_s(self, running: LocalInstance | None) -> float:
        """Cloud seconds since the start."""
        return (self.clock.monotonic() - self._began) * self.scale

    def launched(self) -> None:
        """Booting takes the wall time it takes."""

    def ended(self, instance: LocalInstance) -> None:
        """Time went on meanwhile."""

    def wait(self, seconds: float) -> None:
        """Let ``seconds`` of wall time pass."""
        self.clock.sleep(seconds)

    def moving(self, instance: LocalInstance) -> bool:
        """Always: the cloud takes an instance back whether or not its command has started."""
        return True


class StepPace:
    """Cloud time advances with the job: ``step_s`` per training step, ``boot_s`` per launch,
    and ``scale``× the wall time the job waits with nothing running. Nothing else moves it, so
    a run's decisions, notices and preemptions do not depend on the machine's speed."""

    def __init__(
        self, *, step_s: float, boot_s: float, scale: float, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        if step_s <= 0 or boot_s < 0:
            raise ValueError(f"step_s {step_s} must be > 0 and boot_s {boot_s} >= 0")
        self.step_s, self.boot_s, self.scale, self.clock = step_s, boot_s, scale, clock
        self._base_s = 0.0

    def describe(self) -> str:
        """The pace as a person reads it."""
        return (
            f"{self.step_s:g} cloud s a training step, {self.boot_s:g} s a launch, "
            f"{self.scale:g}× the wall clock while waiting"
        )

    def now_s(self, running: LocalInstance | None) -> float:
        """Cloud seconds so far, counting the running job's steps."""
        steps = 0 if running is None else running.steps_taken()
        return self._base_s + steps * self.step_s

    def launched(self) -> None:
        """Count a launch's boot time."""
        self._base_s += self.boot_s

    def ended(self, instance: LocalInstance) -> None:
        """Count the steps of an instance that ended."""
        self._base_s += instance.steps_taken() * self.step_s

    def wait(self, seconds: float) -> None:
        """Let ``seconds`` of wall time pass, ``scale``× as much cloud time."""
        self.clock.sleep(seconds)
        self._base_s += seconds * self.scale

    def moving(self, instance: LocalInstance) -> bool:
        """Once its guard has started: before that no step moves the clock."""
        return instance.guard_started()


class LocalLauncher:
    """Pools from a :class:`TraceSet`, replayed from ``start_tick`` at ``pace``."""

    name = "local"
    simulated = True
    observe: ObserveMode = "all"
    python = sys.executable

    def __init__(
        self,
        traces: TraceSet,
        *,
        start_tick: int,
        pace: Pace,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if not 0 <= start_tick < traces.n_ticks:
            raise ValueError(f"start tick {start_tick} is outside the traces (0..{traces.n_ticks})")
        self.traces, self.start_tick, self.pace, self.clock = traces, start_tick, pace, clock
        self.pools = traces.names
        self._running: LocalInstance | None = None

    @property
    def simulation(self) -> str:
        """The replay in words: which traces, from when, how fast."""
        hours = self.start_tick * self.traces.gap_seconds / 3600
        return (
            f"replay of real availability traces of {len(self.pools)} pools from hour {hours:.1f}, "
            f"{self.pace.describe()}"
        )

    def _now_s(self) -> float:
        return self.pace.now_s(self._running)

    def _tick(self, now_s: float | None = None) -> int:
        """The trace tick at ``now_s`` cloud seconds (default: now)."""
        seconds = self._now_s() if now_s is None else now_s
        tick = self.start_tick + int(seconds / self.traces.gap_seconds)
        return min(tick, self.traces.n_ticks - 1)

    def now_hours(self) -> float:
        """Cloud hours since the replay began."""
        return self._now_s() / 3600.0

    def close(self) -> None:
        """Nothing to release: every instance was a local process, already ended."""

    def wait(self, seconds: float) -> None:
        """Let ``seconds`` pass at the replay's pace."""
        self.pace.wait(seconds)

    def available(self) -> dict[str, bool]:
        """Whether each pool has spot capacity now."""
        now = self._tick()
        return {name: bool(self.traces.available[i, now]) for i, name in enumerate(self.pools)}

    def history(self) -> tuple[np.ndarray, int]:
        """The pools' availability up to now and the trace's tick in seconds."""
        return self.traces.available[:, : self._tick() + 1], self.traces.gap_seconds

    def launch(
        self,
        placement: Placement,
        command: Sequence[str],
        env: dict[str, str],
        log: Callable[[str], None] | None = None,
    ) -> LocalInstance:
        """Start ``command`` as a local process placed as ``placement``."""
        self.pace.launched()
        instance = LocalInstance(
            placement,
            command,
            env,
            cloud_hours=self.now_hours,
            clock=self.clock,
            on_end=self._ended,
            log=log,
        )
        if self._running is None:  # the first of several (an elastic job's host) paces them
            self._running = instance
        return instance

    def _ended(self, instance: LocalInstance) -> None:
        if self._running is instance:
            self.pace.ended(instance)
            self._running = None

    def preemption(self, instance: Any) -> Preemption | None:
        """When the pool's trace next turns unavailable (None on demand, or never)."""
        pool = instance.placement.pool
        if instance.placement.market != "spot" or pool is None or not self.pace.moving(instance):
            return None
        row = self.traces.available[self.pools.index(pool)]
        now_s = self._now_s()
        tick = self._tick(now_s)
        down = np.flatnonzero(~row[tick:])
        if not len(down):
            return None
        at_s = (tick + int(down[0]) - self.start_tick) * self.traces.gap_seconds
        return Preemption(in_s=(at_s - now_s) / self.pace.scale, at_hours=at_s / 3600.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class Replay:
    """A simulated market of real traces from ``start_hours``: ``scale``× the wall clock, or,
    with ``step_s``, paced by the job's steps (``boot_s`` cloud seconds per launch)."""

    traces: TraceSet
    start_hours: float
    scale: float
    step_s: float | None = None
    boot_s: float = 0.0

    def launcher(self, clock: Clock = SYSTEM_CLOCK) -> LocalLauncher:
        """A local launcher replaying these traces at this pace on ``clock``."""
        pace: Pace = (
            WallPace(self.scale, clock)
            if self.step_s is None
            else StepPace(step_s=self.step_s, boot_s=self.boot_s, scale=self.scale, clock=clock)
        )
        return LocalLauncher(
            self.traces,
            start_tick=round(self.start_hours * 3600 / self.traces.gap_seconds),
            pace=pace,
            clock=clock,
        )

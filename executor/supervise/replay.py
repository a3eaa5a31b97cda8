"""Run a training command under a replayed real preemption trace, on this machine.

The trace's clock runs from the first launch, across restarts, as a cloud's would. At each
preemption the driver sends SIGTERM ``lead_s`` before it (the notice; a process that is still
starting gets it as soon as it is running), then SIGKILL at the preemption plus ``grace_s`` if
the process is still alive. A process that exits with the preempted code is relaunched at
once (on "another instance"); any other non-zero exit is a real failure and stops the run.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from spotwise.executor.errors import PREEMPTED_EXIT_CODE, ExecutorError


@dataclass(slots=True)
class Launch:
    """One process of the run and what it reported."""

    started: float
    events: list[dict[str, Any]] = field(default_factory=list)
    returncode: int | None = None
    noticed: bool = False
    killed: bool = False

    def event(self, name: str) -> dict[str, Any] | None:
        return next((e for e in self.events if e.get("event") == name), None)


@dataclass(slots=True)
class ReplayRun:
    """Every launch of one replayed run."""

    launches: list[Launch]
    wall_s: float

    @property
    def preemptions(self) -> int:
        return sum(1 for launch in self.launches if launch.noticed or launch.killed)


def run_under_replay(
    command: Sequence[str],
    preemptions_at_s: Sequence[float],
    *,
    lead_s: float,
    grace_s: float,
    max_launches: int = 50,
    max_preemptions: int | None = None,
    env: dict[str, str] | None = None,
) -> ReplayRun:
    """Run ``command`` (printing JSON event lines) until it exits 0; after
    ``max_preemptions`` take-backs have hit it (None: no limit), the rest of the schedule is
    left out.

    Raises:
        ExecutorError: on a non-zero exit other than the preempted code, or too many launches.
    """
    schedule = sorted(preemptions_at_s)
    began = time.monotonic()
    launches: list[Launch] = []
    next_index = 0
    while True:
        if len(launches) >= max_launches:
            raise ExecutorError(f"gave up after {max_launches} launches of {command[0]}")
        launch = Launch(started=time.time())
        launches.append(launch)
        # A session of its own: a Ctrl-C to the terminal's group reaches only this process,
        # which then ends the command (:func:`_end`).
        process = subprocess.Popen(
            list(command), stdout=subprocess.PIPE, text=True, env=env, start_new_session=True
        )
        running = threading.Event()
        reader = threading.Thread(target=_read_events, args=(process, launch, running), daemon=True)
        reader.start()
        # Preemptions that fell while nothing ran took nothing away.
        while next_index < len(schedule) and schedule[next_index] < time.monotonic() - began:
            next_index += 1
        hit = sum(1 for earlier in launches[:-1] if earlier.noticed)
        left = max_preemptions is None or hit < max_preemptions
        try:
            while process.poll() is None:
                now = time.monotonic() - began
                if left and next_index < len(schedule) and running.is_set():
                    at = schedule[next_index]
                    if not launch.noticed and now >= at - lead_s:
                        process.send_signal(signal.SIGTERM)
                        launch.noticed = True
                    if launch.noticed and now >= at + grace_s:
                        process.kill()
                        launch.killed = True
                time.sleep(0.01)
        except BaseException:  # Ctrl-C, a signal the caller turned into an exception
            _end(process, grace_s)
            raise
        reader.join()
        launch.returncode = process.returncode
        if launch.noticed:
            next_index += 1
        if process.returncode == 0:
            return ReplayRun(launches=launches, wall_s=time.monotonic() - began)
        # Killed by our own notice before it could be handled: a preemption all the same.
        taken = launch.killed or (launch.noticed and process.returncode == -signal.SIGTERM)
        if process.returncode != PREEMPTED_EXIT_CODE and not taken:
            raise ExecutorError(
                f"{command[0]} failed with exit code {process.returncode} "
                "(not a preemption); fix the job and run again"
            )


def _end(process: subprocess.Popen[str], grace_s: float) -> None:
    """Stop ``process`` as a cloud would: a notice (SIGTERM), ``grace_s`` to checkpoint, then
    a kill."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _read_events(process: subprocess.Popen[str], launch: Launch, running: threading.Event) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        launch.events.append(event)
        if event.get("event") in ("fresh", "resumed"):
            running.set()

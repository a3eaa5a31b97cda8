"""The local launcher (the embedded default): the command runs as a subprocess on this machine,
and spot pools are simulated by replaying real availability traces, so preemptions happen as
they did on the cloud. The trace clock runs ``scale`` times faster than the wall clock."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from executor.errors import LaunchError
from executor.heartbeat import HEARTBEAT_ENV, seconds_quiet
from executor.launchers.base import Placement
from policy.traces import TraceSet


class LocalInstance:
    """A subprocess standing in for an instance; it records the command's JSON events.

    The command runs in a session of its own, so a Ctrl-C at the terminal reaches only the
    supervisor (which passes a notice on) and a kill takes every process the command started.

    Raises:
        LaunchError: when the command cannot be started (not found, not executable).
    """

    def __init__(self, placement: Placement, command: Sequence[str], env: dict[str, str]) -> None:
        self.placement = placement
        self.events: list[dict[str, Any]] = []
        self.started = time.monotonic()
        self._started_wall = time.time()
        self._folder = Path(tempfile.mkdtemp(prefix="spotwise-instance-"))  # mode 0700
        self._heartbeat = self._folder / "heartbeat"
        try:
            self._process = subprocess.Popen(
                list(command),
                stdout=subprocess.PIPE,
                text=True,
                env={**env, HEARTBEAT_ENV: str(self._heartbeat)},
                start_new_session=True,
            )
        except OSError as exc:
            shutil.rmtree(self._folder, ignore_errors=True)
            raise LaunchError(
                f"cannot start {command[0]!r}: {exc.strerror or exc}; check the command after --"
            ) from exc
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                event["wall"] = time.monotonic()
                self.events.append(event)

    def poll(self) -> int | None:
        code = self._process.poll()
        if code is not None:
            self._reader.join(timeout=5)
        return code

    def notice(self) -> None:
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone
            os.killpg(self._process.pid, signal.SIGKILL)

    def process_group(self) -> int:
        return self._process.pid  # the leader of its own session and group

    def quiet_s(self) -> float:
        return seconds_quiet(self._heartbeat, self._started_wall)

    def terminate(self) -> None:
        self.kill()
        self._process.wait()
        shutil.rmtree(self._folder, ignore_errors=True)


class LocalLauncher:
    """Pools from a :class:`TraceSet`, replayed from ``start_tick`` at ``scale``× speed."""

    name = "local"

    def __init__(
        self,
        traces: TraceSet,
        *,
        start_tick: int,
        scale: float,
        spot_prices: dict[str, float],
        on_demand_price: float,
    ) -> None:
        if not 0 <= start_tick < traces.n_ticks:
            raise ValueError(f"start tick {start_tick} is outside the traces (0..{traces.n_ticks})")
        self.traces, self.start_tick, self.scale = traces, start_tick, scale
        self.pools = traces.names
        self.spot_prices, self.on_demand_price = spot_prices, on_demand_price
        self._began = time.monotonic()

    def _tick(self, wall: float | None = None) -> int:
        elapsed = (time.monotonic() if wall is None else wall) - self._began
        tick = self.start_tick + int(elapsed * self.scale / self.traces.gap_seconds)
        return min(tick, self.traces.n_ticks - 1)

    def now_hours(self) -> float:
        return (time.monotonic() - self._began) * self.scale / 3600.0

    def hours_between(self, start_wall: float, end_wall: float) -> float:
        return (end_wall - start_wall) * self.scale / 3600.0

    def close(self) -> None:
        """Nothing to release: every instance was a local process, already ended."""

    def available(self) -> dict[str, bool]:
        now = self._tick()
        return {name: bool(self.traces.available[i, now]) for i, name in enumerate(self.pools)}

    def history(self) -> tuple[np.ndarray, int]:
        return self.traces.available[:, : self._tick() + 1], self.traces.gap_seconds

    def launch(
        self, placement: Placement, command: Sequence[str], env: dict[str, str]
    ) -> LocalInstance:
        return LocalInstance(placement, command, env)

    def preemption_in_s(self, instance: Any) -> float | None:
        """Wall seconds until the pool's trace next turns unavailable (None on demand)."""
        pool = instance.placement.pool
        if instance.placement.market != "spot" or pool is None:
            return None
        row = self.traces.available[self.pools.index(pool)]
        now = self._tick()
        down = np.flatnonzero(~row[now:])
        if not len(down):
            return None
        at_wall = self._began + (now + int(down[0]) - self.start_tick) * (
            self.traces.gap_seconds / self.scale
        )
        return at_wall - time.monotonic()

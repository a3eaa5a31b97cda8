"""What every cloud's launcher shares: the job's folder in its bucket, the launcher's clock, and
a market known only by probing (no cloud publishes its spot capacity, nor shows a take-back
coming from outside)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spotwise.core.clock import Clock
from spotwise.executor.launchers.base import Preemption
from spotwise.policy.observe import ObserveMode

HISTORY_TICK_S = 300
"""The one tick of the history: five minutes, the scale of a launch and of a spot notice."""


class CloudLauncher:
    """The members a cloud's launcher shares with the others; each cloud's class starts and
    ends its own instances."""

    simulated = False
    simulation = None
    observe: ObserveMode = "probe"
    python = "python"
    """The boot script's venv, first on the command's PATH."""

    def __init__(self, *, pools: Sequence[str], job_id: str, prefix: str, clock: Clock) -> None:
        """``pools`` are the zones it launches in; ``prefix`` is the job's folder of the bucket,
        where each instance reports (``PREFIX/INSTANCE/``)."""
        self.pools = tuple(pools)
        self.job_id, self.prefix = job_id, prefix
        self.clock = clock
        self._began = clock.monotonic()

    def now_hours(self) -> float:
        """Hours since the launcher started, on its clock."""
        return (self.clock.monotonic() - self._began) / 3600.0

    def wait(self, seconds: float) -> None:
        """Sleep ``seconds`` on the launcher's clock."""
        self.clock.sleep(seconds)

    def available(self) -> dict[str, bool]:
        """The cloud does not publish spot capacity: every zone counts as available until a
        launch there is refused (the supervisor, in probe mode, goes by what launches
        taught)."""
        return dict.fromkeys(self.pools, True)

    def history(self) -> tuple[np.ndarray, int]:
        """No past to show: one tick of five minutes, the scale of a launch and of a spot
        notice. (An hour-long tick made a changeover an hour, so a job with an hour of slack
        went on demand at once.)"""
        return np.ones((len(self.pools), 1), dtype=bool), HISTORY_TICK_S

    def preemption(self, instance: Any) -> Preemption | None:
        """Unknown from outside: the job itself watches its cloud's notice on the instance."""
        return None

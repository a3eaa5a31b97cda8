"""The clock the executor reads: injected, so a replayed market can run on job progress and
tests can run on a clock they control."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Wall time as the supervisor, the launchers and the guard see it."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (for intervals)."""
        ...

    def time(self) -> float:
        """Seconds since the epoch (for timestamps and file times)."""
        ...

    def sleep(self, seconds: float) -> None:
        """Let ``seconds`` pass."""
        ...


class SystemClock:
    """The machine's clock."""

    def monotonic(self) -> float:
        """The machine's monotonic clock, in seconds."""
        return time.monotonic()

    def time(self) -> float:
        """The machine's time, in seconds since the epoch."""
        return time.time()

    def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` for real."""
        time.sleep(seconds)


SYSTEM_CLOCK: Clock = SystemClock()

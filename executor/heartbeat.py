"""The step heartbeat: how a supervisor tells a training process that is stepping from one
that hangs.

The supervisor names a file in ``$SPOTWISE_HEARTBEAT_FILE`` (in a folder only its user can
read); the guard touches it as training steps (at most once a second). A command that does not
use the guard never beats, so the supervisor's stall timeout counts from its launch.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

HEARTBEAT_ENV = "SPOTWISE_HEARTBEAT_FILE"
MIN_BEAT_INTERVAL_S = 1.0


class Heartbeat:
    """Touches the heartbeat file the supervisor named, if any."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path if path is not None else os.environ.get(HEARTBEAT_ENV) or None
        self._last = float("-inf")

    def beat(self) -> None:
        """Record that training is alive (cheap: at most one touch a second)."""
        now = time.monotonic()
        if self.path is None or now - self._last < MIN_BEAT_INTERVAL_S:
            return
        self._last = now
        try:
            Path(self.path).touch()
        except OSError:
            self.path = None  # the supervisor's folder is gone: nobody is listening


def seconds_quiet(path: Path, since_wall: float) -> float:
    """Seconds since the last beat in ``path``, or since ``since_wall`` (``time.time()``)
    when there has been none after it."""
    try:
        last = max(path.stat().st_mtime, since_wall)
    except OSError:
        last = since_wall
    return time.time() - last

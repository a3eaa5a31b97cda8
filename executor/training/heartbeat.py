"""The step heartbeat: how a supervisor tells a training process that is stepping from one
that hangs, and how far it has got.

The supervisor names a file in ``$SPOTWISE_HEARTBEAT_FILE`` (in a folder only its user can
read); the guard writes its step count there on entry (the step it starts from: a local
supervisor takes the file's being there for the guard's announcement, even when the command's
stdout goes elsewhere) and at every step (one ``pwrite`` of 20 bytes). A command that does not
use the guard never beats, so the supervisor's stall timeout counts from its launch and a
replay paced by steps sees no progress.

When its training loop has ended the guard says so on stdout, once (:data:`TRAINED_EVENT`):
what the script runs after it (a final save, an eval, an upload) takes no steps, and no drill,
move or stall check may cut it short, or a relaunch would run it again.
"""

from __future__ import annotations

import os
from pathlib import Path

HEARTBEAT_ENV = "SPOTWISE_HEARTBEAT_FILE"
TRAINED_EVENT = "trained"
"""The ``event`` of the JSON line a guard prints once its training loop has ended."""
_WIDTH = 20


class Heartbeat:
    """Writes the step count to the heartbeat file the supervisor named, if any."""

    def __init__(self, path: str | None = None) -> None:
        if path is None:
            from spotwise.core.settings import current

            named = current().heartbeat_file
            path = str(named) if named else None
        self.path = path
        self._fd: int | None = None

    def beat(self, step: int) -> None:
        """Record that training is alive at ``step``."""
        if self.path is None:
            return
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
            os.pwrite(self._fd, str(step).rjust(_WIDTH).encode(), 0)
        except OSError:
            self.close()
            self.path = None  # the supervisor's folder is gone: nobody is listening

    def close(self) -> None:
        """Close the heartbeat file, if open."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def last_step(path: Path) -> int | None:
    """The step count in ``path`` (None before the first beat, or if unreadable)."""
    try:
        return int(path.read_bytes()[:_WIDTH])
    except (OSError, ValueError):
        return None


def seconds_quiet(path: Path, since_wall: float, now_wall: float) -> float:
    """Seconds from the last beat in ``path`` (or ``since_wall``, ``time.time()`` based, when
    there has been none after it) to ``now_wall``."""
    try:
        last = max(path.stat().st_mtime, since_wall)
    except OSError:
        last = since_wall
    return now_wall - last

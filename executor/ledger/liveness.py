"""Whether a job's supervisor still lives: its pid, and when that process started, as the
ledger recorded them. A pid alone is not enough: the kernel reuses pids, and a supervisor run
from a user's own Python script has nothing of Spotwise in its command line."""

from __future__ import annotations

import os
from pathlib import Path


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state first), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name in parentheses may hold spaces: the fields count from its last ')'
    return stat[stat.rindex(")") + 2 :].split()


def process_started(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since boot (Linux's ``/proc/PID/stat``);
    None where that cannot be read."""
    fields = _stat(pid)
    try:
        return int(fields[19]) if fields else None
    except (ValueError, IndexError):
        return None


def supervisor_alive(pid: int, started: int | None = None) -> bool:
    """Whether ``pid`` is still the supervisor the ledger recorded: the same process when its
    start time ``started`` is known, else a live process with "spotwise" in its command line."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process: not ours to signal
    fields = _stat(pid)
    if fields and fields[0] in ("Z", "X"):
        return False  # it has exited; its parent has not read its exit status yet
    now = process_started(pid)
    if started is not None and now is not None:
        return now == started
    cmdline = Path(f"/proc/{pid}/cmdline")
    if cmdline.exists():
        return b"spotwise" in cmdline.read_bytes()
    return True

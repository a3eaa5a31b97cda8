"""Servers the tests start die with the process that started them, however it ends."""

from __future__ import annotations

import ctypes
import signal
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """A ``preexec_fn``: the kernel sends SIGKILL to the child when its parent dies, so a
    test worker that is killed (a timeout, a Ctrl-C) leaves no server behind (atexit handlers
    do not run then). Linux only; elsewhere a no-op."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)

"""Run torch training so that a preemption costs seconds (see :func:`executor.guard.guard`)."""

from executor.errors import PREEMPTED_EXIT_CODE
from executor.guard import guard

__all__ = ["PREEMPTED_EXIT_CODE", "guard"]

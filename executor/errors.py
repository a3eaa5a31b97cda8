"""Errors of the executor package: each says what was wrong, where, and what to do."""

from __future__ import annotations

PREEMPTED_EXIT_CODE = 75
"""Exit code of a training process that checkpointed and stopped on a preemption notice
(EX_TEMPFAIL: try again, elsewhere). Supervisors relaunch on it; any other non-zero code is a
real failure."""


class ExecutorError(Exception):
    """Base class of every error the executor package raises on purpose."""


class CheckpointError(ExecutorError):
    """A checkpoint could not be written or read; the last committed one is untouched."""


class Preempted(SystemExit):
    """Raised by the guard after it committed a checkpoint on a stop notice: the process
    exits with :data:`PREEMPTED_EXIT_CODE` unless something catches it on purpose."""

    def __init__(self, step: int) -> None:
        super().__init__(PREEMPTED_EXIT_CODE)
        self.step = step


class NoCapacity(ExecutorError):
    """The provider would not start an instance in this pool now (capacity or price)."""


class LaunchError(ExecutorError):
    """The command could not be started at all (not found, not executable): relaunching
    would not help."""


class Cancelled(ExecutorError):
    """The supervisor was told to stop (SIGTERM, SIGINT or ``spotwise jobs cancel``); the job
    was given its grace to checkpoint, then stopped."""

    def __init__(self, message: str, signum: int, job_id: str) -> None:
        super().__init__(message)
        self.signum, self.job_id = signum, job_id


class Stopped(ExecutorError):
    """The job's watcher (a sweep's pruner) said to stop it for good: its instance was ended
    at once, with no checkpoint to resume from."""

    def __init__(self, message: str, job_id: str) -> None:
        super().__init__(message)
        self.job_id = job_id

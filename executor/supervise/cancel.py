"""Cancelling a supervised job from another process (``spotwise jobs cancel``).

The job's supervisor is found by the host and pid the ledger recorded; SIGTERM makes it pass a
notice to the job, wait for the checkpoint, stop the job and record ``cancelled``. A supervisor
that is already gone (killed, machine restarted) left its job ``running``: that row is closed as
``cancelled`` here.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
from datetime import UTC, datetime
from pathlib import Path

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.executor.errors import ExecutorError
from spotwise.executor.ledger.journal import replay_orphans
from spotwise.executor.ledger.ledger import JobState, job_state
from spotwise.executor.ledger.liveness import supervisor_alive
from spotwise.pricing.errors import StoreError
from spotwise.pricing.operational import open_operational


def _job(store_path: Path, job_id: str) -> JobState:
    """The job's state, its pending ledger writes included."""
    with open_operational(store_path, read_only=True) as store:
        state = job_state(store, job_id)
    if state is None:
        raise ExecutorError(f"no job {job_id!r} in the ledger; `spotwise jobs list` shows them")
    return state


def _stop_group(pgid: int, grace_s: float, clock: Clock) -> bool:
    """SIGTERM the process group (a notice: the guard checkpoints), SIGKILL what is left
    after ``grace_s``; whether there was a group to stop."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = clock.monotonic() + grace_s
    while clock.monotonic() < deadline:
        clock.sleep(0.2)
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    return True


def cancel_job(
    store_path: Path,
    job_id: str,
    *,
    wait_s: float = 60.0,
    grace_s: float = 30.0,
    clock: Clock = SYSTEM_CLOCK,
) -> str:
    """Cancel a running job; returns how it ended. A job whose supervisor is gone has its
    command's process group stopped here (``grace_s`` to checkpoint, then killed).

    Raises:
        ExecutorError: an unknown job, one that is not running, one supervised on another
            machine, or a supervisor that did not stop within ``wait_s``.
    """
    job = _job(store_path, job_id)
    status, host, pid, pgid = job.status, job.host, job.supervisor_pid, job.worker_pgid
    started = job.supervisor_started
    if status != "running":
        raise ExecutorError(f"job {job_id} is {status}: nothing to cancel")
    if host is not None and host != socket.gethostname():
        raise ExecutorError(
            f"job {job_id} is supervised on {host} (pid {pid}): run `spotwise jobs cancel` there"
        )
    if pid is None or not supervisor_alive(pid, started):
        return _cancel_orphan(store_path, job_id, pgid, grace_s, clock)
    return _cancel_supervised(store_path, job_id, int(pid), wait_s, clock)


def _cancel_orphan(
    store_path: Path, job_id: str, pgid: int | None, grace_s: float, clock: Clock
) -> str:
    """A running job whose supervisor is gone: stop its command here, record it cancelled."""
    stopped = pgid is not None and _stop_group(pgid, grace_s, clock)
    with open_operational(store_path) as store:
        replay_orphans(store)  # the dead supervisor's last writes go first
        store.execute(
            "UPDATE jobs SET status = 'cancelled', ended = ? "
            "WHERE job_id = ? AND status = 'running'",
            [datetime.fromtimestamp(clock.time(), UTC).isoformat(), job_id],
        )
    left = "; its command was stopped" if stopped else ""
    return f"cancelled (its supervisor had already gone{left})"


def _cancel_supervised(store_path: Path, job_id: str, pid: int, wait_s: float, clock: Clock) -> str:
    """SIGTERM to the job's live supervisor, then wait for the ledger to say how it ended.

    Raises:
        ExecutorError: when the supervisor is another user's, or does not stop in ``wait_s``.
    """
    try:
        os.kill(pid, signal.SIGTERM)
    except PermissionError as exc:
        raise ExecutorError(
            f"job {job_id}'s supervisor (pid {pid}) belongs to another user: ask them, or "
            "run this as that user"
        ) from exc
    deadline = clock.monotonic() + wait_s
    while clock.monotonic() < deadline:
        clock.sleep(0.5)
        try:
            status = _job(store_path, job_id).status
        except StoreError:
            continue  # the supervisor is writing its last entries
        if status != "running":
            return status
    raise ExecutorError(
        f"job {job_id}'s supervisor (pid {pid}) got SIGTERM but is still running after "
        f"{wait_s:.0f} s; wait for its grace to end, or `kill -INT {pid}` to stop it now"
    )

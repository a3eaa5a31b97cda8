"""The few lines a training script adopts to survive preemptions.

    with executor.guard(["/ckpt", "s3://bucket/run"], model=model, optimizer=opt,
                        scheduler=sched, loader=loader, epochs=3) as g:
        for batch in g.batches():
            ...forward, backward, optimizer.step(), scheduler.step()...
            g.step()

On entry it restores the newest intact checkpoint (model, optimizer, scheduler, grad scaler,
the Python, NumPy, torch CPU and CUDA RNGs, the data order and position, step and epoch). It
checkpoints every ``interval_s`` (Young/Daly from the measured stall and ``mtbf_s`` when not
given), at once on a rebalance recommendation, and on a stop notice it finishes the current
step, commits a checkpoint and exits with :data:`PREEMPTED_EXIT_CODE`. A normal exit commits a
final checkpoint marked finished.

Once restored (or started fresh) it announces itself: one JSON line on the process's own stdout,
``{"event": "fresh"|"resumed", "step": N, "epoch": E, "total_steps": S, "rank": R,
"world_size": W, "t": T}`` (what a supervisor's drill clock, a replay's preemptions and
migration wait for; with the heartbeat's steps, what its progress and time left are told
from), and a first beat of the step heartbeat. When its training loop ends it says so, once:
``{"event": "trained", "step": N, "epoch": E, "rank": R, "t": T}``; a supervisor sends no drill,
move or stall kill after it, so what the script runs after the loop (a final save, an eval, an
upload) runs once.

A damaged newest checkpoint is never passed over in silence: the guard resumes from the newest
intact copy and says, on stderr, which copy was damaged (its path and step) and what was wrong;
its ``resumed`` event lists them (``"damaged": [{"path": P, "step": S}, ...]``), which the
supervisor keeps in the ledger. Checkpoints that exist but are all damaged stop it with a clear
message rather than a silent start from step 0 (``fresh_if_damaged`` or
``$SPOTWISE_FRESH_IF_DAMAGED=1`` starts over deliberately).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch.utils.data import DataLoader

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.core.settings import current
from spotwise.executor.checkpoint.manager import (
    Checkpoint,
    Checkpointer,
    CheckpointManager,
    DamagedCopy,
    NoIntactCheckpoint,
)
from spotwise.executor.clouds.registry import sources_from_env
from spotwise.executor.errors import CheckpointError, Preempted
from spotwise.executor.notices import (
    SIGTERM_GRACE_S,
    NoticeSource,
    NoticeWatcher,
    SigtermSource,
    notice_window_s,
)
from spotwise.executor.training.data import ResumableBatches
from spotwise.executor.training.heartbeat import TRAINED_EVENT, Heartbeat
from spotwise.executor.training.interval import checkpoint_interval_s, forecast_mtbf_s

if TYPE_CHECKING:
    from spotwise.core.environment import Settings


def distributed() -> bool:
    """True inside a torch.distributed job (of any size: an elastic job that shrank to one
    process still reads and writes the distributed checkpoint layout)."""
    return torch.distributed.is_available() and torch.distributed.is_initialized()


def agreement_group(backend: str | None = None) -> torch.distributed.ProcessGroup | None:
    """Where the ranks agree on a step's stop and save flags, a CPU tensor: the default group
    when its ``backend`` (the default group's when None) runs CPU collectives (gloo), else a gloo
    group of every rank made once here (an NCCL-only default group cannot). A collective call
    when it makes one: every rank calls it."""
    backend = backend or str(torch.distributed.get_backend())
    if "gloo" in backend:
        return None
    group = torch.distributed.new_group(backend="gloo")
    assert isinstance(group, torch.distributed.ProcessGroup)  # every rank is a member
    return group


def rng_state() -> dict[str, Any]:
    """Every global RNG's state."""
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` captured."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def derived_rng_state(step: int, rank: int) -> dict[str, Any]:
    """RNG states for a rank that joins a job at ``step`` with none of its own, drawn from a
    seed of both (the same on every run that joins there)."""
    saved = rng_state()
    seed = step * 1_000_003 + rank
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    state = rng_state()
    set_rng_state(saved)
    return state


FRESH_IF_DAMAGED_ENV = "SPOTWISE_FRESH_IF_DAMAGED"


class GuardRefused(SystemExit, CheckpointError):
    """The guard would not start (its checkpoints cannot be opened, or they exist and none is
    intact). Left uncaught, the process exits with code 1 and this one line on stderr, no
    traceback; ``except CheckpointError`` catches it too."""

    def __init__(self, message: str) -> None:
        super().__init__(f"spotwise guard: {message}")


def emit_event(event: dict[str, Any]) -> None:
    """One JSON event line on the process's own stdout, whole and flushed at once: what the
    script printed before it goes first, and a script that replaced ``sys.stdout`` (a logger,
    a redirect) still reaches the supervisor reading the process's output."""
    line = json.dumps(event) + "\n"
    out = sys.__stdout__
    if sys.stdout is not None and sys.stdout is not out:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
    if out is None:
        return
    with contextlib.suppress(OSError, ValueError):  # closed: nobody reads it
        out.write(line)
        out.flush()


def _rank_from_env() -> int:
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


NOTICE_MARGIN = 0.1
"""The share of a notice window kept back from the last save (the step under way, the exit)."""


def notice_margin_s(window_s: float) -> float:
    """Seconds of a ``window_s`` notice the last save may not use."""
    return NOTICE_MARGIN * window_s


def last_save_fits(save_s: float, window_s: float) -> bool:
    """Whether a save of ``save_s`` seconds fits in a ``window_s`` notice less its margin."""
    return save_s <= window_s - notice_margin_s(window_s)


class Guard:
    """Tracks steps, decides when to checkpoint, and saves and restores everything.

    What a script may read (and print) as it trains: :attr:`step_count` (the steps taken,
    counting those before a resume), :attr:`epoch` (the epoch under way, from 0),
    :attr:`epochs`, :attr:`total_steps` (the whole training's, one step a batch) and
    :attr:`resumed_from` (the checkpoint's step, None on a fresh start)::

        if g.step_count % 100 == 0:
            print(f"epoch {g.epoch + 1}/{g.epochs} step {g.step_count}/{g.total_steps}")
    """

    def __init__(
        self,
        manager: Checkpointer,
        watcher: NoticeWatcher,
        *,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer | None,
        scheduler: Any,
        scaler: Any,
        loader: DataLoader,
        epochs: int,
        interval_s: float | None,
        mtbf_s: float | None,
        clock: Clock = SYSTEM_CLOCK,
        notice_s: float | None = None,
        stage_in_background: bool = True,
    ) -> None:
        self.manager = manager
        self.stage_in_background = stage_in_background
        """Whether a save (not on notice, not the last) stages the optimizer's CPU parameters
        and state in the background, its next ``step()`` waiting for them (see :func:`guard`)."""
        self._guarded_stall_open = False
        """The last save was guarded: its stall grows by what the next step waited."""
        self.notice_s = notice_s
        """The shortest notice its sources give: the deadline of the last save (None: none)."""
        self._told_short = False
        self.clock = clock
        self.watcher = watcher
        self.rank = torch.distributed.get_rank() if distributed() else None
        self._agreement = agreement_group() if self.rank is not None else None
        """The group the ranks agree on in each step (None: the default one)."""
        self.model, self.optimizer, self.scheduler, self.scaler = (
            model,
            optimizer,
            scheduler,
            scaler,
        )
        self.data = ResumableBatches(loader, distributed=self.rank is not None)
        self.epochs = epochs
        self.fixed_interval_s = interval_s
        self.mtbf_s = mtbf_s
        self.step_count = 0
        """Training steps taken (:meth:`step` calls), counting those before a resume."""
        self.finished = False
        self.resumed_from: int | None = None
        self.skipped: tuple[DamagedCopy, ...] = ()
        """Damaged checkpoint copies passed over on resume (said on stderr, and in the
        ``resumed`` event)."""
        self.checkpoints = 0
        self.stalls_s: list[float] = []
        self._pending_rng: dict[str, Any] | None = None
        self._last_checkpoint = clock.monotonic()
        self.heartbeat = Heartbeat()
        self._trained = False

    # ---- state --------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """Everything a bitwise-identical resume needs. In a distributed job the RNG state sits
        under this rank's key, the data order is the global one (the same on every rank, valid
        at any world size), and model and optimizer come from DCP's helpers."""
        if self.rank is None:
            model = self.model.state_dict()
            optimizer = self.optimizer.state_dict() if self.optimizer else None
        else:
            from torch.distributed.checkpoint.state_dict import get_state_dict

            model, optimizer = get_state_dict(self.model, self.optimizer or [])
        rng = {"rng": rng_state()}
        return {
            "model": model,
            "optimizer": optimizer,
            "scheduler": self.scheduler.state_dict() if self.scheduler else None,
            "scaler": self.scaler.state_dict() if self.scaler else None,
            "data": self.data.state_dict(as_lists=self.rank is not None),
            **(rng if self.rank is None else {"ranks": {f"rank{self.rank}": rng}}),
            "step": self.step_count,
            "finished": self.finished,
        }

    def restore(self) -> bool:
        """Load the newest intact checkpoint; False when there is none."""
        checkpoint = self.manager.load(template=self.state)
        if checkpoint is None:
            return False
        state = checkpoint.state
        local = self._load_weights(state)
        self._load_schedule(state)
        self.resumed_from = checkpoint.step
        self.skipped = checkpoint.skipped
        _say_skipped(checkpoint)
        # Restored after the data iterator is created, which draws from the RNG.
        self._pending_rng = local["rng"] or derived_rng_state(self.step_count, self.rank or 0)
        return True

    def _load_weights(self, state: dict[str, Any]) -> dict[str, Any]:
        """Load model and optimizer; this rank's own part of ``state`` (its RNG)."""
        if self.rank is None:
            self.model.load_state_dict(state["model"])
            if self.optimizer and state["optimizer"] is not None:
                self.optimizer.load_state_dict(state["optimizer"])
            return state
        from torch.distributed.checkpoint.state_dict import set_state_dict

        set_state_dict(
            self.model,
            self.optimizer or [],
            model_state_dict=state["model"],
            optim_state_dict=state["optimizer"],
        )
        # a rank the checkpoint's group did not have (the job grew) starts its own RNG
        return state["ranks"].get(f"rank{self.rank}") or {"rng": None}

    def _load_schedule(self, state: dict[str, Any]) -> None:
        """Load scheduler, grad scaler, data position, step and whether it had finished."""
        for part, key in ((self.scheduler, "scheduler"), (self.scaler, "scaler")):
            if part and state[key] is not None:
                part.load_state_dict(state[key])
        self.data.load_state_dict(state["data"])
        self.step_count = int(state["step"])
        self.finished = bool(state["finished"])

    def announce(self) -> dict[str, Any]:
        """Say that the guard has started and from which step: the ``fresh``/``resumed`` event
        on stdout and a first beat of the step heartbeat (a supervisor starts its drill clock,
        a replay's preemptions and its migration checks on either)."""
        event: dict[str, Any] = {
            "event": "fresh" if self.resumed_from is None else "resumed",
            "t": self.clock.time(),
            "rank": self.rank if self.rank is not None else _rank_from_env(),
            "step": self.step_count,
            "world_size": torch.distributed.get_world_size() if self.rank is not None else 1,
            "interval_s": round(self.interval_s, 3),
            "epoch": self.epoch,
            "total_steps": self.total_steps,
        }
        if self.skipped:
            event["damaged"] = [{"path": c.path, "step": c.step} for c in self.skipped]
        emit_event(event)
        self.heartbeat.beat(self.step_count)
        return event

    def _restore_rng(self) -> None:
        if self._pending_rng is not None:
            set_rng_state(self._pending_rng)
            self._pending_rng = None

    # ---- the training loop ----------------------------------------------------------------

    def batches(self) -> Iterator[Any]:
        """The training batches, resuming where the checkpoint left off; once they are all
        served the training has ended (:meth:`end_training`)."""
        if not self.finished:
            yield from self.data.iterate(self.epochs, after_start=self._restore_rng)
        self.end_training()

    def end_training(self) -> None:
        """Say, once, that the training loop has ended: the ``trained`` event on stdout
        (:data:`~executor.training.heartbeat.TRAINED_EVENT`). A supervisor sends no drill, move
        or stall kill after it, so what the script runs next (a final save, an eval, an upload)
        runs once. Called when :meth:`batches` is exhausted and when the guard's block ends."""
        if self._trained:
            return
        self._trained = True
        emit_event(
            {
                "event": TRAINED_EVENT,
                "t": self.clock.time(),
                "rank": self.rank if self.rank is not None else _rank_from_env(),
                "step": self.step_count,
                "epoch": self.data.epoch,
            }
        )

    @property
    def epoch(self) -> int:
        """The epoch under way, from 0 (``epochs`` once every one is done), as restored."""
        return self.data.epoch

    @property
    def total_steps(self) -> int | None:
        """The steps the whole training takes at one :meth:`step` a batch: ``epochs`` × the
        loader's batches (None for a loader with no length)."""
        try:
            return self.epochs * len(self.data.loader)
        except TypeError:
            return None

    @property
    def interval_s(self) -> float:
        """Seconds between checkpoints: fixed, or Young/Daly from the measured stall."""
        if self.fixed_interval_s is not None:
            return self.fixed_interval_s
        last = self.manager.last_save
        stall_s = last.stall_s if last else None
        if last is not None and self.stalls_s:  # (a guarded save's, with its step's wait)
            stall_s = max(stall_s or 0.0, self.stalls_s[-1])
        return checkpoint_interval_s(
            stall_s=stall_s,
            persist_s=last.persist_s if last else None,
            mtbf_s=self.mtbf_s,
        )

    def step(self) -> None:
        """Call after each optimizer step: counts it and checkpoints when due.

        Raises:
            Preempted: after committing a checkpoint on a stop notice (exit code 75).
        """
        self._close_guarded_stall()
        self.step_count += 1
        self.heartbeat.beat(self.step_count)
        stop = self.watcher.check_signals() is not None
        due = self.watcher.take_rebalance() or (
            self.clock.monotonic() - self._last_checkpoint >= self.interval_s
        )
        if self.rank is not None:
            # Every rank must take the same decision: saves are collective.
            flags = torch.tensor([float(stop), float(due)])
            torch.distributed.all_reduce(
                flags, op=torch.distributed.ReduceOp.MAX, group=self._agreement
            )
            stop, due = bool(flags[0]), bool(flags[1])
        if stop:
            self.checkpoint(block=True)
            raise Preempted(self.step_count)
        if due:
            self.checkpoint()

    def checkpoint(self, *, block: bool = False) -> None:
        """Checkpoint now (durable on return when ``block``). Unless ``block``, with an optimizer
        and :attr:`stage_in_background`, the optimizer's CPU parameters and state are staged
        in the background and its next ``step()`` waits for them: the stall recorded for the
        save (:attr:`stalls_s`) is what ``save()`` blocked plus that wait, added by the next
        :meth:`step`."""
        self._close_guarded_stall()
        began = time.perf_counter()
        optimizer = self._guard_optimizer(block)
        if optimizer is not None:
            assert isinstance(self.manager, CheckpointManager)
            self.manager.save(self.step_count, self.state(), guard=optimizer)
        else:
            self.manager.save(self.step_count, self.state(), block=block)
        self._guarded_stall_open = optimizer is not None
        if not block:
            self.stalls_s.append(time.perf_counter() - began)
        elif self.manager.last_save is not None:
            self.stalls_s.append(self.manager.last_save.stall_s)
        self.checkpoints += 1
        self._last_checkpoint = self.clock.monotonic()
        self._check_notice_fits()

    def _guard_optimizer(self, block: bool) -> torch.optim.Optimizer | None:
        """The optimizer a save stages in the background, or None: a blocking save (on notice,
        the last one), no optimizer, background staging turned off, or a distributed job's
        checkpointer (DCP's ``async_save`` stages by itself)."""
        if block or not self.stage_in_background or self.optimizer is None:
            return None
        return self.optimizer if isinstance(self.manager, CheckpointManager) else None

    def wait_staged(self) -> None:
        """Block until the last save has copied the optimizer's parameters and state: call it
        before changing them in place other than by the optimizer's ``step()`` (which waits by
        itself), e.g. loading weights or swapping in an EMA between saves."""
        if isinstance(self.manager, CheckpointManager):
            self.manager.wait_staged()

    def _close_guarded_stall(self) -> None:
        """Add what training waited for the last guarded save's staging to its stall."""
        if self._guarded_stall_open and isinstance(self.manager, CheckpointManager):
            self._guarded_stall_open = False
            if self.stalls_s:
                self.stalls_s[-1] += self.manager.staging_waited_s

    def _check_notice_fits(self) -> None:
        """Say once, on stderr (the job's log), when the measured save would not fit in the
        notice window less its margin: a preemption then loses the work since the last
        checkpoint."""
        last, window = self.manager.last_save, self.notice_s
        if self._told_short or last is None or window is None:
            return
        save_s = last.stall_s + last.persist_s
        if last_save_fits(save_s, window):
            return
        self._told_short = True
        print(
            f"spotwise guard: a save takes {save_s:.1f} s (measured, step {last.step}), more "
            f"than the {window:g} s notice window less its {notice_margin_s(window):.1f} s "
            "margin: a preemption loses the work since the last checkpoint (every "
            f"{self.interval_s:.0f} s); save less (a smaller state, full_every > 1 for "
            "incremental saves) or to faster storage",
            file=sys.stderr,
            flush=True,
        )


@contextmanager
def guard(
    urls: Sequence[str],
    *,
    model: torch.nn.Module,
    loader: DataLoader,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler: Any = None,
    scaler: Any = None,
    epochs: int = 1,
    interval_s: float | None = None,
    mtbf_s: float | None = None,
    notices: Sequence[NoticeSource] | None = None,
    keep_latest_k: int = 3,
    full_every: int = 1,
    storage_options: dict[str, dict[str, Any]] | None = None,
    poll_interval_s: float = 1.0,
    clock: Clock = SYSTEM_CLOCK,
    fresh_if_damaged: bool = False,
    stage_in_background: bool = True,
) -> Iterator[Guard]:
    """Restore, train under watch, checkpoint on interval and notice, exit gracefully.

    On entry, once restored or started fresh, the guard announces itself (:meth:`Guard.announce`).

    Args:
        urls: checkpoint replicas (local folders, ``s3://...``); the first intact copy wins.
        interval_s: fixed seconds between checkpoints (default: ``$SPOTWISE_CHECKPOINT_S``, else
            Young/Daly from the stall).
        mtbf_s: mean time between preemptions for Young/Daly (default: ``$SPOTWISE_MTBF_S``,
            else the risk forecast of pool ``$SPOTWISE_POOL`` in store ``$SPOTWISE_STORE``,
            else one hour).
        notices: sources to watch (default: SIGTERM, its window ``$SPOTWISE_NOTICE_S`` else
            30 s, plus those named in ``$SPOTWISE_NOTICES``, e.g. ``aws,gcp``).
        fresh_if_damaged: start over from step 0 when checkpoints exist but none is intact
            (default: ``$SPOTWISE_FRESH_IF_DAMAGED``, else refuse: losing every step done must
            never be silent).
        stage_in_background: with an ``optimizer``, a save copies the optimizer's CPU parameters
            and state on its background thread, and the optimizer's next ``step()`` waits
            until they are copied (a step pre-hook): training stalls for milliseconds instead
            of a copy of the state. The contract: between a save and the next ``step()``
            nothing else changes those tensors in place (forward, backward, ``zero_grad``,
            clipping, a scheduler and a grad scaler do not); a script that does (loads
            weights, swaps in an EMA) calls :meth:`Guard.wait_staged` first, or passes False
            to copy everything before ``save()`` returns. Saves on a notice and the last one
            are blocking either way; a distributed job's (DCP) is unchanged.

    Raises:
        GuardRefused: (exit code 1, one line) when the checkpoints cannot be opened, or exist
            and none is intact (unless ``fresh_if_damaged``).
    """
    manager = _checkpointer(urls, keep_latest_k, full_every, storage_options)
    settings = current()
    sources = (
        list(notices)
        if notices is not None
        else [
            SigtermSource(grace_s=settings.notice_s or SIGTERM_GRACE_S, clock=clock),
            *sources_from_env(),
        ]
    )
    watcher = NoticeWatcher(sources, interval_s=poll_interval_s).start()
    if interval_s is None:
        interval_s = settings.checkpoint_s
    g = Guard(
        manager,
        watcher,
        model=model,
        optimizer=optimizer,
        scheduler=scheduler,
        scaler=scaler,
        loader=loader,
        epochs=epochs,
        interval_s=interval_s,
        mtbf_s=_mtbf_s(mtbf_s, settings),
        clock=clock,
        notice_s=notice_window_s(sources),
        stage_in_background=stage_in_background,
    )
    try:
        _restore(g, fresh_if_damaged or settings.fresh_if_damaged)
        g.announce()
        yield g
        g.end_training()
        if not g.finished:
            g.finished = True
            g.checkpoint(block=True)
    finally:
        g.heartbeat.close()
        watcher.close()
        manager.close()


def _checkpointer(
    urls: Sequence[str],
    keep_latest_k: int,
    full_every: int,
    storage_options: dict[str, dict[str, Any]] | None,
) -> Checkpointer:
    """The checkpointer of a distributed job (one URL, every rank) or of one process.

    Raises:
        CheckpointError: a distributed job given several URLs.
        GuardRefused: when a replica cannot be opened.
    """
    if distributed():
        if len(urls) != 1:
            raise CheckpointError(
                "a distributed job checkpoints to one folder that every rank reaches "
                "(torch.distributed.checkpoint); pass one URL"
            )
        # (imported here: torch.distributed.checkpoint adds ~0.7 s to every process start)
        from spotwise.executor.checkpoint.distributed import DistributedCheckpointer

        return DistributedCheckpointer(
            urls[0], keep_latest_k=keep_latest_k, storage_options=storage_options
        )
    try:
        return CheckpointManager(
            urls,
            keep_latest_k=keep_latest_k,
            full_every=full_every,
            storage_options=storage_options,
        )
    except CheckpointError as exc:
        raise GuardRefused(str(exc)) from exc


def _mtbf_s(given: float | None, settings: Settings) -> float | None:
    """The MTBF for Young/Daly: given, else ``$SPOTWISE_MTBF_S``, else the risk forecast of the
    pool this job runs in (written by ``spotwise forecast run``)."""
    if given is not None:
        return given
    if settings.mtbf_s is not None:
        return settings.mtbf_s
    if settings.pool and settings.store:
        return forecast_mtbf_s(str(settings.store), settings.pool)
    return None


def _say_skipped(checkpoint: Checkpoint) -> None:
    """Say loudly, on stderr (the job's log), each damaged copy passed over to resume from
    ``checkpoint``: its path and step, what was wrong, and where the job resumes instead."""
    for copy in checkpoint.skipped:
        instead = (
            f"the intact copy of step {checkpoint.step} at {checkpoint.url}"
            if copy.step == checkpoint.step
            else f"step {checkpoint.step} at {checkpoint.url}, so the steps after it are done again"
        )
        print(
            f"spotwise guard: WARNING: damaged checkpoint skipped: {copy.path} (step "
            f"{copy.step}): {copy.problem}; resuming from {instead}. Something corrupted it: "
            f"check the disk or bucket of {copy.url}",
            file=sys.stderr,
            flush=True,
        )


def _restore(g: Guard, fresh_if_damaged: bool) -> None:
    """Restore the newest intact checkpoint; when they are all damaged, start over only if
    asked (said on stderr).

    Raises:
        GuardRefused: checkpoints exist, none is intact, and starting over was not asked for.
    """
    try:
        g.restore()
    except NoIntactCheckpoint as exc:
        if not fresh_if_damaged:
            raise GuardRefused(
                f"{exc}. Refusing to start over from step 0, which would lose them: "
                "restore the folder from a copy, or start over deliberately (delete "
                f"{' and '.join(exc.urls)}, or set {FRESH_IF_DAMAGED_ENV}=1, or pass "
                "guard(..., fresh_if_damaged=True))"
            ) from exc
        print(
            f"spotwise guard: {exc}; starting over from step 0 as asked "
            f"({FRESH_IF_DAMAGED_ENV} / fresh_if_damaged; the damaged copies stay where "
            "they are)",
            file=sys.stderr,
            flush=True,
        )

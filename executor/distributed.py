"""Checkpoints of a multi-process job with ``torch.distributed.checkpoint`` (DCP).

Every rank writes its part of ``step-{N}/`` and DCP writes ``.metadata`` last, which is the
commit; after a barrier rank 0 moves ``latest`` (atomically). Replicated state (a DDP model, the
optimizer, counters, the global data order) goes through DCP, which writes it once. State that
differs per rank (its RNG) sits under ``state["ranks"]["rank{r}"]``; DCP keeps only rank 0's
non-tensor values, so each rank writes its own part to ``rank{r}.json`` + ``rank{r}.bin``
before the DCP commit. A rank the writing group did not have (the job grew) loads no part.
Saves can run in the background (``dcp.async_save``); every rank must call :meth:`save`,
:meth:`wait` and :meth:`load` together. Checkpoint collectives run on a process group of their
own: a background save's collectives would otherwise interleave with training's (DDP's
all-reduce) on the same gloo pairs, in different orders on different ranks, and hang.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from concurrent.futures import Future
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp

from spotwise.executor.checkpoint import Checkpoint, SaveStats
from spotwise.executor.errors import CheckpointError
from spotwise.executor.statedict import flatten, tensor_bytes, tensor_from_bytes, unflatten
from spotwise.executor.storage import STEP_FOLDER

COMMIT_FILE = ".metadata"


class DistributedCheckpointer:
    """The CheckpointManager's interface for a ``torch.distributed`` job (shared folder)."""

    def __init__(self, url: str, *, keep_latest_k: int = 3) -> None:
        if "://" in url and not url.startswith("file://"):
            raise CheckpointError(
                f"{url}: distributed checkpoints need a folder every rank "
                "can reach (a shared file system); pass a path"
            )
        self.root = url.removeprefix("file://").rstrip("/")
        self.keep_latest_k = keep_latest_k
        self.rank = dist.get_rank()
        group = dist.new_group(backend="gloo", timeout=_collective_timeout())
        assert isinstance(group, dist.ProcessGroup)  # every rank is a member
        self.group = group
        if self.rank == 0:
            os.makedirs(self.root, exist_ok=True)
        dist.barrier(group=self.group)
        self._pending: tuple[int, Future[Any], float, float] | None = None
        self.last_save: SaveStats | None = None

    def steps(self) -> list[int]:
        """Committed steps, newest first."""
        if not os.path.isdir(self.root):
            return []
        found = [
            int(m.group(1))
            for name in os.listdir(self.root)
            if (m := STEP_FOLDER.match(name))
            and os.path.exists(os.path.join(self.root, name, COMMIT_FILE))
        ]
        return sorted(found, reverse=True)

    def save(self, step: int, state: dict[str, Any], *, block: bool = False) -> SaveStats | None:
        """Checkpoint on every rank (a collective call)."""
        began = time.perf_counter()
        self.wait()
        path = os.path.join(self.root, f"step-{step}")
        state = dict(state)
        own = state.pop("ranks", {}).get(f"rank{self.rank}")
        if own is not None:
            _write_rank_part(path, self.rank, own)
        if block:
            dcp.save(state, checkpoint_id=path, process_group=self.group)
            stall = time.perf_counter() - began
            self._commit(step, stall, began)
            return self.last_save
        future = dcp.async_save(state, checkpoint_id=path, process_group=self.group)
        assert isinstance(future, Future)
        self._pending = (step, future, time.perf_counter() - began, began)
        return None

    def wait(self) -> None:
        """Block until the save in flight is committed (a collective call)."""
        if self._pending is None:
            return
        step, future, stall, began = self._pending
        self._pending = None
        try:
            future.result()
        except Exception as exc:
            raise CheckpointError(
                f"distributed checkpoint step {step} failed: {exc}; latest "
                "still names the last committed step"
            ) from exc
        self._commit(step, stall, began)

    def _commit(self, step: int, stall: float, began: float) -> None:
        dist.barrier(group=self.group)
        if self.rank == 0:
            latest = os.path.join(self.root, f".latest.{os.getpid()}")
            with open(latest, "w") as handle:
                handle.write(str(step))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(latest, os.path.join(self.root, "latest"))
            for old in self.steps()[self.keep_latest_k :]:
                _remove_tree(os.path.join(self.root, f"step-{old}"))
        dist.barrier(group=self.group)
        self.last_save = SaveStats(
            step=step,
            stall_s=stall,
            persist_s=time.perf_counter() - began,
            bytes_written=0,
            full=True,
        )

    def load(
        self, step: int = -1, template: Callable[[], dict[str, Any]] | None = None
    ) -> Checkpoint | None:
        """Load the newest committed step (a collective call) into the state ``template()``
        builds, in place; it is only built when there is a step to load (building it may set up
        optimizer state). Rank 0 chooses the step so that every rank loads the same one."""
        if template is None:
            raise CheckpointError("distributed loads fill a state template in place")
        self.wait()
        choice = [self.steps()[0] if step < 0 and self.steps() else (step if step >= 0 else None)]
        dist.broadcast_object_list(choice, src=0, group=self.group)
        if choice[0] is None:
            return None
        path = os.path.join(self.root, f"step-{choice[0]}")
        state = dict(template())
        wanted = state.pop("ranks", None)
        dcp.load(state, checkpoint_id=path, process_group=self.group)
        if wanted is not None:  # none for a rank the writing group did not have (it grew)
            own = os.path.exists(os.path.join(path, f"rank{self.rank}.json"))
            state["ranks"] = {f"rank{self.rank}": _read_rank_part(path, self.rank)} if own else {}
        return Checkpoint(step=int(choice[0]), state=state, url=self.root)

    def close(self) -> None:
        """Wait for the save in flight."""
        self.wait()


def _collective_timeout() -> timedelta | None:
    """The default group's timeout (the job may have shortened it to notice a lost peer
    sooner), so checkpoint collectives give up as soon as training's do."""
    try:
        world = dist.group.WORLD
        assert world is not None
        timeout: timedelta = world._get_backend(torch.device("cpu")).options._timeout
        return timeout
    except (AttributeError, RuntimeError):
        return None


def _write_rank_part(path: str, rank: int, part: Any) -> None:
    """This rank's own state as a JSON skeleton and raw tensor bytes (fsync'd)."""
    os.makedirs(path, exist_ok=True)
    skeleton, tensors = flatten(part)
    layout, offset = {}, 0
    for key, tensor in tensors.items():
        tensor = tensor.detach().cpu().contiguous()
        tensors[key] = tensor
        size = tensor.numel() * tensor.element_size()
        layout[key] = {
            "dtype": str(tensor.dtype),
            "shape": list(tensor.shape),
            "offset": offset,
            "nbytes": size,
        }
        offset += size
    for name, payload in (
        (f"rank{rank}.bin", [tensor_bytes(t) for t in tensors.values()]),
        (f"rank{rank}.json", [json.dumps({"skeleton": skeleton, "tensors": layout}).encode()]),
    ):
        with open(os.path.join(path, name), "wb") as handle:
            for chunk in payload:
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())


def _read_rank_part(path: str, rank: int) -> Any:
    with open(os.path.join(path, f"rank{rank}.json"), "rb") as handle:
        meta = json.loads(handle.read())
    with open(os.path.join(path, f"rank{rank}.bin"), "rb") as handle:
        data = bytearray(handle.read())
    tensors = {
        key: tensor_from_bytes(
            memoryview(data)[e["offset"] : e["offset"] + e["nbytes"]], e["dtype"], e["shape"]
        )
        for key, e in meta["tensors"].items()
    }
    return unflatten(meta["skeleton"], tensors)


def _remove_tree(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)

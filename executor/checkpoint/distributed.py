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

The folder is a :class:`~spotwise.executor.checkpoint.storage.Replica`: a path every rank reaches (a
shared file system), or an object store URL (``s3://BUCKET/PREFIX``: nodes on separate
machines), which DCP writes through fsspec (``FsspecWriter``). On a local disk the step's folder
is made 0700 before DCP writes in it, and its files 0600 at the commit.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import Future
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint import (
    FileSystemReader,
    FileSystemWriter,
    StorageReader,
    StorageWriter,
)
from torch.distributed.checkpoint._fsspec_filesystem import FsspecReader, FsspecWriter

from spotwise.executor.checkpoint.manager import Checkpoint, SaveStats
from spotwise.executor.checkpoint.statedict import (
    flatten,
    tensor_bytes,
    tensor_from_bytes,
    unflatten,
)
from spotwise.executor.checkpoint.storage import (
    LocalReplica,
    Replica,
    open_replica,
    private_folder,
)
from spotwise.executor.errors import CheckpointError

COMMIT_FILE = ".metadata"


class DistributedCheckpointer:
    """The CheckpointManager's interface for a ``torch.distributed`` job (a shared folder, or
    an object store every node reaches)."""

    def __init__(
        self,
        url: str,
        *,
        keep_latest_k: int = 3,
        storage_options: dict[str, Any] | None = None,
    ) -> None:
        self.replica = open_replica(url, storage_options)
        self.storage_options = storage_options or {}
        self.root = url.removeprefix("file://").rstrip("/")
        self.keep_latest_k = keep_latest_k
        self.rank = dist.get_rank()
        group = dist.new_group(backend="gloo", timeout=_collective_timeout())
        assert isinstance(group, dist.ProcessGroup)  # every rank is a member
        self.group = group
        dist.barrier(group=self.group)
        self._pending: tuple[int, Future[Any], float, float] | None = None
        self.last_save: SaveStats | None = None

    def steps(self) -> list[int]:
        """Committed steps, newest first."""
        return self.replica.steps(COMMIT_FILE)

    def save(self, step: int, state: dict[str, Any], *, block: bool = False) -> SaveStats | None:
        """Checkpoint on every rank (a collective call)."""
        began = time.perf_counter()  # timing only: the stall and persist seconds it reports
        self.wait()
        folder = f"step-{step}"
        if isinstance(self.replica, LocalReplica):  # DCP's files go where only this user looks
            private_folder(self.replica.path(folder))
        state = dict(state)
        own = state.pop("ranks", {}).get(f"rank{self.rank}")
        if own is not None:
            _write_rank_part(self.replica, folder, self.rank, own)
        writer = self._writer(folder)
        if block:
            dcp.save(state, storage_writer=writer, process_group=self.group)
            stall = time.perf_counter() - began
            self._commit(step, stall, began)
            return self.last_save
        future = dcp.async_save(state, storage_writer=writer, process_group=self.group)
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
            if isinstance(self.replica, LocalReplica):
                self.replica.make_private(f"step-{step}")
            self.replica.point_latest(step)
            for old in self.steps()[self.keep_latest_k :]:
                self.replica.remove_step(old)
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
        folder = f"step-{choice[0]}"
        state = dict(template())
        wanted = state.pop("ranks", None)
        dcp.load(state, storage_reader=self._reader(folder), process_group=self.group)
        if wanted is not None:  # none for a rank the writing group did not have (it grew)
            own = _read_rank_part(self.replica, folder, self.rank)
            state["ranks"] = {} if own is None else {f"rank{self.rank}": own}
        return Checkpoint(step=int(choice[0]), state=state, url=self.root)

    def close(self) -> None:
        """Wait for the save in flight."""
        self.wait()

    def _writer(self, folder: str) -> StorageWriter:
        """DCP's writer of ``folder``: to the file system, or through fsspec (no fsync on an
        object store: a PUT is durable once it returns)."""
        if isinstance(self.replica, LocalReplica):
            return FileSystemWriter(self.replica.path(folder))
        url = f"{self.replica.url.rstrip('/')}/{folder}"
        return FsspecWriter(url, sync_files=False, **self.storage_options)

    def _reader(self, folder: str) -> StorageReader:
        if isinstance(self.replica, LocalReplica):
            return FileSystemReader(self.replica.path(folder))
        return FsspecReader(f"{self.replica.url.rstrip('/')}/{folder}", **self.storage_options)


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


def _write_rank_part(replica: Replica, folder: str, rank: int, part: Any) -> None:
    """This rank's own state as a JSON skeleton and raw tensor bytes (durable)."""
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
    replica.write(f"{folder}/rank{rank}.bin", [tensor_bytes(t) for t in tensors.values()])
    meta = json.dumps({"skeleton": skeleton, "tensors": layout}).encode()
    replica.write(f"{folder}/rank{rank}.json", [meta])


def _read_rank_part(replica: Replica, folder: str, rank: int) -> Any | None:
    """This rank's own state (None: the writing group had no such rank)."""
    try:
        meta = json.loads(bytes(replica.read(f"{folder}/rank{rank}.json")))
    except FileNotFoundError:
        return None
    data = replica.read(f"{folder}/rank{rank}.bin")
    tensors = {
        key: tensor_from_bytes(
            memoryview(data)[e["offset"] : e["offset"] + e["nbytes"]], e["dtype"], e["shape"]
        )
        for key, e in meta["tensors"].items()
    }
    return unflatten(meta["skeleton"], tensors)

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

The folder is a path every rank reaches (a shared file system), or an object store URL
(``s3://BUCKET/PREFIX``: nodes on separate machines) written through fsspec with DCP's
``FsspecWriter``; an object's PUT is atomic there, so ``latest`` is one write.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from datetime import timedelta
from typing import Any, Protocol

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from fsspec.core import url_to_fs
from fsspec.implementations.local import LocalFileSystem
from torch.distributed.checkpoint import (
    FileSystemReader,
    FileSystemWriter,
    StorageReader,
    StorageWriter,
)
from torch.distributed.checkpoint._fsspec_filesystem import FsspecReader, FsspecWriter

from spotwise.executor.checkpoint import Checkpoint, SaveStats
from spotwise.executor.errors import CheckpointError
from spotwise.executor.statedict import flatten, tensor_bytes, tensor_from_bytes, unflatten
from spotwise.executor.storage import STEP_FOLDER

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
        fs, root = url_to_fs(url, **(storage_options or {}))
        self.folder: Folder = (
            LocalFolder(root)
            if isinstance(fs, LocalFileSystem)
            else ObjectFolder(url.rstrip("/"), fs, storage_options or {})
        )
        self.root = url.removeprefix("file://").rstrip("/")
        self.keep_latest_k = keep_latest_k
        self.rank = dist.get_rank()
        group = dist.new_group(backend="gloo", timeout=_collective_timeout())
        assert isinstance(group, dist.ProcessGroup)  # every rank is a member
        self.group = group
        if self.rank == 0:
            self.folder.make()
        dist.barrier(group=self.group)
        self._pending: tuple[int, Future[Any], float, float] | None = None
        self.last_save: SaveStats | None = None

    def steps(self) -> list[int]:
        """Committed steps, newest first."""
        found = [
            int(m.group(1))
            for name in self.folder.names()
            if (m := STEP_FOLDER.match(name)) and self.folder.exists(f"{name}/{COMMIT_FILE}")
        ]
        return sorted(found, reverse=True)

    def save(self, step: int, state: dict[str, Any], *, block: bool = False) -> SaveStats | None:
        """Checkpoint on every rank (a collective call)."""
        began = time.perf_counter()
        self.wait()
        folder = f"step-{step}"
        state = dict(state)
        own = state.pop("ranks", {}).get(f"rank{self.rank}")
        if own is not None:
            _write_rank_part(self.folder, folder, self.rank, own)
        writer = self.folder.writer(folder)
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
            self.folder.write("latest", [str(step).encode()])
            for old in self.steps()[self.keep_latest_k :]:
                self.folder.remove_tree(f"step-{old}")
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
        dcp.load(state, storage_reader=self.folder.reader(folder), process_group=self.group)
        if wanted is not None:  # none for a rank the writing group did not have (it grew)
            own = self.folder.exists(f"{folder}/rank{self.rank}.json")
            state["ranks"] = (
                {f"rank{self.rank}": _read_rank_part(self.folder, folder, self.rank)} if own else {}
            )
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


def _write_rank_part(folder: Folder, step_folder: str, rank: int, part: Any) -> None:
    """This rank's own state as a JSON skeleton and raw tensor bytes (durable)."""
    folder.make(step_folder)
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
    folder.write(f"{step_folder}/rank{rank}.bin", [tensor_bytes(t) for t in tensors.values()])
    meta = json.dumps({"skeleton": skeleton, "tensors": layout}).encode()
    folder.write(f"{step_folder}/rank{rank}.json", [meta])


def _read_rank_part(folder: Folder, step_folder: str, rank: int) -> Any:
    meta = json.loads(folder.read(f"{step_folder}/rank{rank}.json"))
    data = bytearray(folder.read(f"{step_folder}/rank{rank}.bin"))
    tensors = {
        key: tensor_from_bytes(
            memoryview(data)[e["offset"] : e["offset"] + e["nbytes"]], e["dtype"], e["shape"]
        )
        for key, e in meta["tensors"].items()
    }
    return unflatten(meta["skeleton"], tensors)


class Folder(Protocol):
    """Where the checkpoint's steps live; paths are relative to it, with ``/``."""

    def make(self, relative: str = "") -> None: ...

    def names(self) -> list[str]:
        """The entries at the top, by name (none when the folder is not there yet)."""
        ...

    def exists(self, relative: str) -> bool: ...

    def write(self, relative: str, chunks: Sequence[bytes | memoryview]) -> None:
        """Replace the file whole: a reader sees the old one or the new one, never a part."""
        ...

    def read(self, relative: str) -> bytes: ...

    def remove_tree(self, relative: str) -> None: ...

    def writer(self, relative: str) -> StorageWriter: ...

    def reader(self, relative: str) -> StorageReader: ...


class LocalFolder:
    """A folder of a (shared) file system: writes are fsync'd, then renamed into place."""

    def __init__(self, root: str) -> None:
        self.root = root

    def _path(self, relative: str) -> str:
        return os.path.join(self.root, relative) if relative else self.root

    def make(self, relative: str = "") -> None:
        os.makedirs(self._path(relative), exist_ok=True)

    def names(self) -> list[str]:
        return os.listdir(self.root) if os.path.isdir(self.root) else []

    def exists(self, relative: str) -> bool:
        return os.path.exists(self._path(relative))

    def write(self, relative: str, chunks: Sequence[bytes | memoryview]) -> None:
        final = self._path(relative)
        staging = f"{final}.{os.getpid()}.tmp"
        with open(staging, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(staging, final)

    def read(self, relative: str) -> bytes:
        with open(self._path(relative), "rb") as handle:
            return handle.read()

    def remove_tree(self, relative: str) -> None:
        shutil.rmtree(self._path(relative), ignore_errors=True)

    def writer(self, relative: str) -> StorageWriter:
        return FileSystemWriter(self._path(relative))

    def reader(self, relative: str) -> StorageReader:
        return FileSystemReader(self._path(relative))


class ObjectFolder:
    """A prefix of an object store (``s3://...``) through fsspec: a PUT is atomic, and there
    are no folders to make."""

    def __init__(self, url: str, fs: Any, storage_options: dict[str, Any]) -> None:
        self.url, self.fs, self.storage_options = url, fs, storage_options
        self.root = fs._strip_protocol(url)

    def _path(self, relative: str) -> str:
        return f"{self.root}/{relative}" if relative else self.root

    def make(self, relative: str = "") -> None:
        """Nothing to make: a key's prefix exists once an object is under it."""

    def names(self) -> list[str]:
        try:
            entries = self.fs.ls(self.root, detail=False, refresh=True)
        except FileNotFoundError:
            return []
        return [str(entry).rstrip("/").rsplit("/", 1)[-1] for entry in entries]

    def exists(self, relative: str) -> bool:
        self.fs.invalidate_cache(self._path(relative))
        return bool(self.fs.exists(self._path(relative)))

    def write(self, relative: str, chunks: Sequence[bytes | memoryview]) -> None:
        self.fs.pipe_file(self._path(relative), b"".join(bytes(c) for c in chunks))

    def read(self, relative: str) -> bytes:
        return bytes(self.fs.cat_file(self._path(relative)))

    def remove_tree(self, relative: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm(self._path(relative), recursive=True)

    def writer(self, relative: str) -> StorageWriter:
        return FsspecWriter(f"{self.url}/{relative}", sync_files=False, **self.storage_options)

    def reader(self, relative: str) -> StorageReader:
        return FsspecReader(f"{self.url}/{relative}", **self.storage_options)

"""What a save holds in memory beyond the state and its staging copy: no copy of the tensors'
bytes on the way to a local folder or an object store, with two replicas, full or incremental.

tracemalloc sees every bytes, bytearray, BytesIO and numpy buffer Python allocates, and none of
torch's (the state, the staging buffers): its peak during a save is what the write path copied.
No timing is measured, so a busy machine cannot change the figures.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
import xxhash
from fsspec.spec import AbstractBufferedFile, AbstractFileSystem

from spotwise.executor.checkpoint.manager import CheckpointManager
from spotwise.executor.checkpoint.statedict import tensor_bytes
from spotwise.executor.checkpoint.storage import FsspecReplica
from tests.executor.checkpoint.test_manager import assert_same

MIB = 1 << 20


@contextmanager
def peak_traced() -> Iterator[list[int]]:
    """The peak of Python's traced allocations while the block runs (the list's one item)."""
    peak: list[int] = []
    tracemalloc.start()
    try:
        yield peak
    finally:
        peak.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()


def test_saves_copy_none_of_the_tensors_bytes(tmp_path: Path) -> None:
    generator = torch.Generator().manual_seed(0)
    layers = [torch.randn(2 * MIB, generator=generator) for _ in range(4)]  # 4 × 8 MiB
    state = {"layers": layers, "bias": torch.arange(10.0), "step": 1}
    state_bytes = sum(t.nbytes for t in layers)
    manager = CheckpointManager([str(tmp_path / "a"), str(tmp_path / "b")], full_every=2)
    manager.save(1, state)  # (allocates the staging buffers, outside the trace)
    manager.wait()
    kinds = []
    with peak_traced() as peak:
        layers[0].add_(1.0)
        manager.save(2, state)  # incremental: hashes the large tensors to compare them
        manager.wait()
        kinds.append(manager.last_save and manager.last_save.full)
        manager.save(3, state, block=True)  # full, from where the tensors are
        kinds.append(manager.last_save and manager.last_save.full)
        layers[1].add_(1.0)
        manager.save(4, state)  # incremental
        manager.wait()
        manager.save(5, state)  # full, from the staging buffers
        manager.wait()
        kinds.append(manager.last_save and manager.last_save.full)
    loaded = manager.load()
    manager.close()
    assert kinds == [False, True, True]
    assert loaded is not None and loaded.step == 5
    assert_same(loaded.state, state)
    # one copy of a single tensor would be 8 MiB: what is traced is threads and manifests
    assert peak[0] < state_bytes / 16


class UploadFile(AbstractBufferedFile):
    """A file on an object store that keeps nothing: each part uploaded is hashed, and gone."""

    def _initiate_upload(self) -> None:
        pass

    def _upload_chunk(self, final: bool = False) -> bool:
        with self.buffer.getbuffer() as part:
            self.fs.hasher.update(part)
        return True


class UploadFileSystem(AbstractFileSystem):
    """An object store of :class:`UploadFile`: what a multipart upload keeps in memory."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.hasher = xxhash.xxh3_128()

    def _open(self, path: str, mode: str = "rb", block_size: Any = None, **kwargs: Any) -> Any:
        return UploadFile(self, path, mode, block_size=5 * MIB)


def test_a_large_file_goes_to_an_object_store_in_parts_not_copied_whole() -> None:
    fs = UploadFileSystem(skip_instance_cache=True)
    replica = FsspecReplica("upload://bucket", fs, "bucket")
    data = tensor_bytes(torch.arange(16 * MIB, dtype=torch.float32))  # 64 MiB
    with peak_traced() as peak:
        replica.write("step-1/t0.bin", [data, b"tail"])
    assert fs.hasher.hexdigest() == xxhash.xxh3_128(bytes(data) + b"tail").hexdigest()
    # an fsspec file buffers what it is given: handed whole, the file would be copied whole
    assert peak[0] < data.nbytes / 2

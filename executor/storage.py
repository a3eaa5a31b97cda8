"""One checkpoint replica on any fsspec URL (a local path, ``s3://bucket/prefix``, ...).

A checkpoint commits atomically. Locally: files go to a temporary folder, are fsync'd, the
manifest is written last, the folder is fsync'd and renamed to ``step-{N}`` (then the parent is
fsync'd). On object stores, where one object's write is atomic but there is no rename, the
files go straight to ``step-{N}/`` and the manifest, written last, is the commit. Only then is
``latest`` rewritten (atomically), so it never names an uncommitted step.
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import re
import shutil
import uuid
from collections.abc import Iterable
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

MANIFEST = "manifest.json"
LATEST = "latest"
_STEP = re.compile(r"^step-(\d+)$")
_TMP_PREFIX = ".tmp-step-"


class Replica:
    """A folder of ``step-{N}`` checkpoints at one URL."""

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        self.url = url
        self.fs, root = fsspec.core.url_to_fs(url, **(storage_options or {}))
        self.root = root.rstrip("/")
        self.local = isinstance(self.fs, LocalFileSystem)
        if self.local:
            os.makedirs(self.root, exist_ok=True)

    def path(self, relative: str) -> str:
        return f"{self.root}/{relative}"

    def begin(self, step: int) -> str:
        """Where this step's files are written before the commit (relative path)."""
        if self.local:
            staging = f"{_TMP_PREFIX}{step}-{uuid.uuid4().hex[:8]}"
            os.makedirs(self.path(staging))
            return staging
        return f"step-{step}"

    def write(self, relative: str, chunks: Iterable[bytes | memoryview]) -> tuple[str, int]:
        """Write a file from chunks (durably when local); return its sha256 and size."""
        digest = hashlib.sha256()
        size = 0
        if self.local:
            with open(self.path(relative), "wb") as handle:
                for chunk in chunks:
                    digest.update(chunk)
                    handle.write(chunk)
                    size += len(chunk)
                handle.flush()
                os.fsync(handle.fileno())
        else:
            with self.fs.open(self.path(relative), "wb") as handle:
                for chunk in chunks:
                    digest.update(chunk)
                    handle.write(chunk)
                    size += len(chunk)
        return digest.hexdigest(), size

    def commit(self, staging: str, step: int, manifest: bytes) -> None:
        """Write the manifest and make the step visible, then point ``latest`` at it."""
        target = f"step-{step}"
        if self.local:
            self.write(f"{staging}/{MANIFEST}", [manifest])
            _fsync_dir(self.path(staging))
            old = None
            if os.path.exists(self.path(target)):
                old = self.path(f"{_TMP_PREFIX}old-{step}-{uuid.uuid4().hex[:8]}")
                os.rename(self.path(target), old)
            os.rename(self.path(staging), self.path(target))
            _fsync_dir(self.root)
            if old:
                shutil.rmtree(old, ignore_errors=True)
            latest = self.path(f".{LATEST}.{uuid.uuid4().hex[:8]}")
            with open(latest, "w") as handle:
                handle.write(str(step))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(latest, self.path(LATEST))
            _fsync_dir(self.root)
        else:
            self.fs.pipe_file(self.path(f"{target}/{MANIFEST}"), manifest)
            self.fs.pipe_file(self.path(LATEST), str(step).encode())

    def abort(self, staging: str) -> None:
        """Remove an uncommitted step's files."""
        with contextlib.suppress(OSError, FileNotFoundError):
            if self.local:
                shutil.rmtree(self.path(staging))
            elif not self.fs.exists(self.path(f"{staging}/{MANIFEST}")):
                self.fs.rm(self.path(staging), recursive=True)

    def steps(self) -> list[int]:
        """Committed steps (folders with a manifest), newest first."""
        try:
            if self.local:
                names = os.listdir(self.root)
                found = [
                    int(m.group(1))
                    for n in names
                    if (m := _STEP.match(n)) and os.path.exists(self.path(f"{n}/{MANIFEST}"))
                ]
            else:
                self.fs.invalidate_cache()
                manifests = self.fs.glob(self.path(f"step-*/{MANIFEST}"))
                found = [
                    int(m.group(1))
                    for p in manifests
                    if (m := _STEP.match(p.rstrip("/").split("/")[-2]))
                ]
        except (OSError, FileNotFoundError):
            return []
        return sorted(found, reverse=True)

    def latest(self) -> int | None:
        """The step ``latest`` names, if any."""
        try:
            return int(self.fs.cat_file(self.path(LATEST)).decode().strip())
        except (OSError, FileNotFoundError, ValueError):
            return None

    def read(self, relative: str) -> bytearray | mmap.mmap:
        """A whole file as a writable buffer: locally a private (copy-on-write) memory map, so
        reading a large checkpoint costs no fresh memory; elsewhere downloaded into memory."""
        if self.local:
            with open(self.path(relative), "rb") as handle:
                if os.fstat(handle.fileno()).st_size == 0:
                    return bytearray()
                return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY)
        return bytearray(self.fs.cat_file(self.path(relative)))

    def remove_step(self, step: int) -> None:
        """Delete a committed step."""
        with contextlib.suppress(OSError, FileNotFoundError):
            if self.local:
                shutil.rmtree(self.path(f"step-{step}"))
            else:
                self.fs.rm(self.path(f"step-{step}"), recursive=True)

    def remove_stale(self) -> None:
        """Delete temporary folders and ``latest`` files that crashed writers left behind
        (local only)."""
        if not self.local:
            return
        for name in os.listdir(self.root):
            if name.startswith(_TMP_PREFIX):
                shutil.rmtree(self.path(name), ignore_errors=True)
            elif name.startswith(f".{LATEST}."):
                with contextlib.suppress(OSError):
                    os.remove(self.path(name))


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

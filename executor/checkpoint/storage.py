"""One checkpoint replica: a folder of ``step-{N}`` checkpoints on a local disk or at any fsspec
URL (``s3://bucket/prefix``, ...), behind one :class:`Replica` interface.

A checkpoint commits atomically. Locally (:class:`LocalReplica`): files go to a temporary
folder, each fsync'd once, the manifest is written last, the folder is fsync'd (once) and renamed to
``step-{N}`` (then the parent is fsync'd). On object stores (:class:`FsspecReplica`), where one
object's write is atomic but there is no rename, the files go straight to ``step-{N}/`` and the
manifest, written last, is the commit. Only then is ``latest`` rewritten (atomically), so it
never names an uncommitted step. Locally, every folder a replica makes is 0700 and every file
0600, whatever the umask: a checkpoint holds the model and its data order, and is as private as
the store.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import re
import shutil
import uuid
from collections.abc import Iterable
from typing import Any, BinaryIO, Protocol

import fsspec
from fsspec.implementations.local import LocalFileSystem

MANIFEST = "manifest.json"
LATEST = "latest"
STEP_FOLDER = re.compile(r"^step-(\d+)$")
"""A committed or committing step's folder name, ``step-{N}``."""
_TMP_PREFIX = ".tmp-step-"
PRIVATE_FOLDER, PRIVATE_FILE = 0o700, 0o600
"""The modes of a local replica's folders and files: this user's only."""


class Replica(Protocol):
    """A folder of ``step-{N}`` checkpoints at one URL."""

    url: str

    def begin(self, step: int) -> str:
        """Where this step's files are written before the commit (relative path)."""
        ...

    def write(self, relative: str, chunks: Iterable[bytes | memoryview]) -> None:
        """Write a file from chunks (durably). It hashes nothing: the caller hashes each byte
        once, whatever the number of replicas (:mod:`~executor.checkpoint.writer`)."""
        ...

    def commit(self, staging: str, step: int, manifest: bytes) -> None:
        """Write the manifest and make the step visible, then point ``latest`` at it."""
        ...

    def point_latest(self, step: int) -> None:
        """Replace ``latest`` whole with ``step`` (a reader sees the old or the new one)."""
        ...

    def abort(self, staging: str) -> None:
        """Remove an uncommitted step's files."""
        ...

    def steps(self, commit_file: str = MANIFEST) -> list[int]:
        """Committed steps (folders holding ``commit_file``), newest first."""
        ...

    def read(self, relative: str) -> bytearray | mmap.mmap:
        """A whole file as a writable buffer."""
        ...

    def remove_step(self, step: int) -> None:
        """Delete a committed step."""
        ...

    def remove_stale(self) -> None:
        """Delete what crashed writers left behind."""
        ...


def open_replica(url: str, storage_options: dict[str, Any] | None = None) -> Replica:
    """The replica at ``url``: a local folder, or any other fsspec URL."""
    fs, root = fsspec.core.url_to_fs(url, **(storage_options or {}))
    if isinstance(fs, LocalFileSystem):
        return LocalReplica(url, root)
    return FsspecReplica(url, fs, root)


WRITE_PIECE = 16 << 20
"""The most bytes one ``write()`` is handed. An fsspec file (s3fs, gcsfs, ...) copies what it is
given into its upload buffer before it uploads a block of it: a large tensor's file handed whole
would be a second copy of the tensor per replica. In pieces, each buffer holds about a block
and a piece; a local file takes the pieces straight from the staging buffers either way."""


def _write_chunks(handle: BinaryIO, chunks: Iterable[bytes | memoryview]) -> None:
    """Write the chunks in pieces of at most :data:`WRITE_PIECE` bytes, none copied."""
    for chunk in chunks:
        view = memoryview(chunk).cast("B")
        for start in range(0, view.nbytes, WRITE_PIECE):
            handle.write(view[start : start + WRITE_PIECE])


class LocalReplica:
    """A replica on this machine's disk: staged in a temporary folder, fsync'd, renamed."""

    def __init__(self, url: str, root: str) -> None:
        self.url, self.root = url, root.rstrip("/")
        private_folder(self.root)

    def path(self, relative: str) -> str:
        """The absolute path of ``relative`` in this replica."""
        return f"{self.root}/{relative}"

    def begin(self, step: int) -> str:
        """Make a fresh temporary folder for ``step``'s files."""
        staging = f"{_TMP_PREFIX}{step}-{uuid.uuid4().hex[:8]}"
        private_folder(self.path(staging))
        return staging

    def write(self, relative: str, chunks: Iterable[bytes | memoryview]) -> None:
        """Write the chunks to ``relative`` (0600) and fsync it once."""
        private_folder(os.path.dirname(self.path(relative)))
        with _private_file(self.path(relative)) as handle:
            _write_chunks(handle, chunks)
            handle.flush()
            os.fsync(handle.fileno())

    def commit(self, staging: str, step: int, manifest: bytes) -> None:
        """Write the manifest, rename the staging folder to ``step-{N}``, point latest."""
        target = f"step-{step}"
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
        self.point_latest(step)

    def point_latest(self, step: int) -> None:
        """Write ``latest`` to a temporary file, fsync and rename it over the old one."""
        latest = self.path(f".{LATEST}.{uuid.uuid4().hex[:8]}")
        with _private_file(latest) as handle:
            handle.write(str(step).encode())
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(latest, self.path(LATEST))
        _fsync_dir(self.root)

    def make_private(self, relative: str) -> None:
        """Make the folder ``relative`` and everything under it this user's only (what
        another writer made, ``torch.distributed.checkpoint``'s files among them)."""
        top = self.path(relative)
        os.chmod(top, PRIVATE_FOLDER)
        for folder, folders, files in os.walk(top):
            for name in folders:
                os.chmod(os.path.join(folder, name), PRIVATE_FOLDER)
            for name in files:
                os.chmod(os.path.join(folder, name), PRIVATE_FILE)

    def abort(self, staging: str) -> None:
        """Remove the staging folder (errors ignored)."""
        with contextlib.suppress(OSError):
            shutil.rmtree(self.path(staging))

    def steps(self, commit_file: str = MANIFEST) -> list[int]:
        """Committed steps in the root folder, newest first (none if unreadable)."""
        try:
            names = os.listdir(self.root)
        except OSError:
            return []
        found = [
            int(m.group(1))
            for n in names
            if (m := STEP_FOLDER.match(n)) and os.path.exists(self.path(f"{n}/{commit_file}"))
        ]
        return sorted(found, reverse=True)

    def read(self, relative: str) -> bytearray | mmap.mmap:
        """A private (copy-on-write) memory map: reading a large checkpoint costs no fresh
        memory."""
        with open(self.path(relative), "rb") as handle:
            if os.fstat(handle.fileno()).st_size == 0:
                return bytearray()
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY)

    def remove_step(self, step: int) -> None:
        """Delete the ``step-{N}`` folder (errors ignored)."""
        with contextlib.suppress(OSError):
            shutil.rmtree(self.path(f"step-{step}"))

    def remove_stale(self) -> None:
        """Temporary folders and ``latest`` files of writers that crashed."""
        for name in os.listdir(self.root):
            if name.startswith(_TMP_PREFIX):
                shutil.rmtree(self.path(name), ignore_errors=True)
            elif name.startswith(f".{LATEST}."):
                with contextlib.suppress(OSError):
                    os.remove(self.path(name))


class FsspecReplica:
    """A replica on an object store: files straight to ``step-{N}/``, the manifest last."""

    def __init__(self, url: str, fs: Any, root: str) -> None:
        self.url, self.fs, self.root = url, fs, root.rstrip("/")

    def path(self, relative: str) -> str:
        """The full fsspec path of ``relative`` in this replica."""
        return f"{self.root}/{relative}"

    def begin(self, step: int) -> str:
        """The step's own folder, ``step-{N}``: files go straight there."""
        return f"step-{step}"

    def write(self, relative: str, chunks: Iterable[bytes | memoryview]) -> None:
        """Upload the chunks to ``relative``."""
        with self.fs.open(self.path(relative), "wb") as handle:
            _write_chunks(handle, chunks)

    def commit(self, staging: str, step: int, manifest: bytes) -> None:
        """Put the manifest in ``step-{N}``, then point latest at it."""
        self.fs.pipe_file(self.path(f"step-{step}/{MANIFEST}"), manifest)
        self.point_latest(step)

    def point_latest(self, step: int) -> None:
        """One PUT: atomic on an object store."""
        self.fs.pipe_file(self.path(LATEST), str(step).encode())

    def abort(self, staging: str) -> None:
        """Remove the staged files unless the step was committed (errors ignored)."""
        with contextlib.suppress(OSError):
            if not self.fs.exists(self.path(f"{staging}/{MANIFEST}")):
                self.fs.rm(self.path(staging), recursive=True)

    def steps(self, commit_file: str = MANIFEST) -> list[int]:
        """Steps whose folder holds ``commit_file``, newest first (none if unreadable)."""
        try:
            self.fs.invalidate_cache()
            manifests = self.fs.glob(self.path(f"step-*/{commit_file}"))
        except OSError:
            return []
        found = [
            int(m.group(1))
            for p in manifests
            if (m := STEP_FOLDER.match(p.rstrip("/").split("/")[-2]))
        ]
        return sorted(found, reverse=True)

    def read(self, relative: str) -> bytearray:
        """Downloaded into memory."""
        return bytearray(self.fs.cat_file(self.path(relative)))

    def remove_step(self, step: int) -> None:
        """Delete the ``step-{N}`` folder (errors ignored)."""
        with contextlib.suppress(OSError):
            self.fs.rm(self.path(f"step-{step}"), recursive=True)

    def remove_stale(self) -> None:
        """Nothing to do: an uncommitted step has no manifest, and is never listed."""


def private_folder(path: str) -> None:
    """Make the folder ``path`` 0700 whatever the umask (its missing parents as the umask
    says); one that exists already is left as it is (the user's own, or another rank's)."""
    try:
        os.makedirs(path, PRIVATE_FOLDER)
    except FileExistsError:
        return
    os.chmod(path, PRIVATE_FOLDER)


def _private_file(path: str) -> BinaryIO:
    """``path`` opened to write from its start, 0600 whatever the umask."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    os.fchmod(fd, PRIVATE_FILE)
    return os.fdopen(fd, "wb")


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

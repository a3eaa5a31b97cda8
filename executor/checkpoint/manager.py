"""The CheckpointManager: atomic, asynchronous, incremental checkpoints on several replicas.

``save(step, state)`` stages every tensor to CPU memory (the only stall; on one intra-op thread,
so that it does not spin against a busy host), then persists in a background thread; a blocking
save (on notice) writes CPU tensors from where they are, with no staging copy. With
``guard=optimizer`` it copies the optimizer's parameters and state (on CPU) in that thread instead,
and the optimizer's next ``step()`` waits until they are staged: training waits only for what it
would overwrite, and the copy overlaps the next forward and backward. Then tensors of
1 MiB or more get a file each, smaller ones share one file, and an incremental save writes only
the large tensors whose bytes changed since the last full checkpoint (referencing the full
one's files for the rest); every ``full_every``-th save is full. The files go to every replica
at once, each byte hashed once (:mod:`~executor.checkpoint.writer`); each replica commits
atomically with a manifest naming its checksum and holding a digest per file
(:mod:`spotwise.executor.checkpoint.storage`); ``latest`` moves only after that. A second
save waits for the first, and says so. ``load()`` verifies every file (format 2 manifests, all
sha256, too) and falls back to the newest intact copy on any replica, naming the damaged copies
it passed over. On a local disk every folder is made 0700 and every file 0600, whatever the
umask: checkpoints are private.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import mmap
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Protocol

import torch
from torch.utils.hooks import RemovableHandle

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.core.progress import Progress
from spotwise.executor.checkpoint.checksum import ALGORITHM, checksum_of, digest
from spotwise.executor.checkpoint.statedict import (
    flatten,
    tensor_bytes,
    tensor_from_bytes,
    unflatten,
)
from spotwise.executor.checkpoint.storage import MANIFEST, Replica, open_replica
from spotwise.executor.checkpoint.writer import StepFile, digest_all, write_step
from spotwise.executor.errors import CheckpointError

LARGE_TENSOR_BYTES = 1 << 20
SMALL_FILE = "small.bin"
FORMAT_VERSION = 3
"""Version 2 seals the manifest (skeleton, tensor layout, file hashes) with its own sha256;
version 3 names the files' checksum (``"checksum"``) and keeps their digests under ``"digest"``.
Both load."""
LOADABLE_FORMATS = (2, 3)


def seal(manifest: dict[str, Any]) -> bytes:
    """The manifest file: a first line with the sha256 of the JSON body that follows it."""
    body = json.dumps(manifest).encode()
    return f"sha256:{hashlib.sha256(body).hexdigest()}\n".encode() + body


def unseal(data: bytes | bytearray | memoryview | mmap.mmap, where: str) -> dict[str, Any]:
    """The manifest from its file, once its checksum holds.

    Raises:
        CheckpointError: unsealed (an older format), damaged or unreadable.
    """
    raw = bytes(data)
    head, _, body = raw.partition(b"\n")
    if not head.startswith(b"sha256:") or hashlib.sha256(body).hexdigest() != head[7:].decode(
        "ascii", "replace"
    ):
        raise CheckpointError(f"{where}: manifest checksum mismatch (damaged or not sealed)")
    try:
        manifest = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise CheckpointError(f"{where}: unreadable manifest ({type(exc).__name__})") from exc
    if not isinstance(manifest, dict):
        raise CheckpointError(f"{where}: the manifest is not a JSON object")
    return manifest


class NoIntactCheckpoint(CheckpointError):
    """Checkpoints were committed but no copy of any of them is intact: nothing to resume
    from, and starting over would lose them (the guard refuses to unless told to)."""

    def __init__(self, urls: Sequence[str], problems: Sequence[str]) -> None:
        self.urls, self.problems = list(urls), list(problems)
        shown = "; ".join(self.problems[:3])
        more = f"; and {len(self.problems) - 3} more" if len(self.problems) > 3 else ""
        super().__init__(
            f"{', '.join(self.urls)}: {len(self.problems)} committed checkpoint "
            f"cop{'y' if len(self.problems) == 1 else 'ies'}, none intact ({shown}{more})"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class DamagedCopy:
    """A committed checkpoint copy that failed its checks on load, and was skipped."""

    url: str
    """The replica it is on."""
    step: int
    problem: str
    """What was wrong, naming the copy's path."""

    @property
    def path(self) -> str:
        """The copy's folder: ``URL/step-N``."""
        return f"{self.url.rstrip('/')}/step-{self.step}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Checkpoint:
    """A verified checkpoint: its step, the state, and the replica it came from."""

    step: int
    state: Any
    url: str
    skipped: tuple[DamagedCopy, ...] = ()
    """Damaged copies passed over on the way to it, newest first (of newer steps, or of the
    same step on another replica): what the storage corrupted."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SaveStats:
    """What the last save cost."""

    step: int
    stall_s: float
    """Time ``save()`` blocked (staging, plus waiting for the previous save); with a guard, the
    guard's next ``step()`` may also wait for the rest of the staging."""
    persist_s: float
    """Background time from the end of staging to the commit on every replica."""
    bytes_written: int
    full: bool


class Checkpointer(Protocol):
    """Saves and loads a job's checkpoints: :class:`CheckpointManager` (one process, any
    replicas) and :class:`~executor.checkpoint.distributed.DistributedCheckpointer` (every rank of a
    ``torch.distributed`` job, collectively)."""

    last_save: SaveStats | None

    def save(self, step: int, state: Any, *, block: bool = False) -> SaveStats | None:
        """Checkpoint ``state`` as ``step``; durable on return when ``block``."""
        ...

    def load(
        self, step: int = -1, template: Callable[[], dict[str, Any]] | None = None
    ) -> Checkpoint | None:
        """The newest intact checkpoint (or ``step``); None when there is none. ``template``
        builds the state to fill where the format needs one."""
        ...

    def steps(self) -> list[int]:
        """Committed steps, newest first."""
        ...

    def wait(self) -> None:
        """Return once the save in flight is durable (raising its error, if it failed)."""
        ...

    def close(self) -> None:
        """Wait for the save in flight and release what the checkpointer holds."""
        ...


def _open_checked(url: str, options: dict[str, Any] | None) -> Replica:
    """Open one replica and list it, or say in one line why it cannot be used."""
    try:
        replica = open_replica(url, options)
        replica.remove_stale()  # (lists the folder: an unreadable one fails here)
    except (OSError, ValueError, ImportError) as exc:
        raise CheckpointError(
            f"cannot open checkpoint replica {url}: {_why_unopened(exc, url)}; give a folder or "
            "URL this user can read and write"
        ) from exc
    return replica


def _why_unopened(exc: Exception, url: str) -> str:
    """Why a replica did not open: the OS's reason and the file, when it is not ``url``."""
    if not (isinstance(exc, OSError) and exc.strerror):
        return str(exc)
    if exc.filename and str(exc.filename).rstrip("/") != url.rstrip("/"):
        return f"{exc.strerror} ({exc.filename})"
    return exc.strerror


def _guarded(
    guard: torch.optim.Optimizer, tensors: dict[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """The tensors that share memory with ``guard``'s parameters or state: contiguous, on CPU."""
    owned = {
        p.untyped_storage().data_ptr() for group in guard.param_groups for p in group["params"]
    }
    owned |= {
        t.untyped_storage().data_ptr()
        for per_param in guard.state.values()
        for t in per_param.values()
        if isinstance(t, torch.Tensor)
    }
    return {
        k: t.detach()
        for k, t in tensors.items()
        if t.device.type == "cpu" and t.is_contiguous() and t.untyped_storage().data_ptr() in owned
    }


def _writable_as_is(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The tensors a blocking save writes from where they are, without a staging copy (the
    caller waits until they are durable, so nothing changes them meanwhile): plain contiguous
    CPU tensors."""
    return {
        k: t.detach()
        for k, t in tensors.items()
        if t.device.type == "cpu"
        and t.layout == torch.strided
        and t.is_contiguous()
        and not (t.is_conj() or t.is_neg())
    }


def _split_large(
    staged: dict[str, torch.Tensor],
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """The tensors of at least :data:`LARGE_TENSOR_BYTES` (a file each), and the rest."""
    large = {k: t for k, t in staged.items() if t.numel() * t.element_size() >= LARGE_TENSOR_BYTES}
    small = {k: t for k, t in staged.items() if k not in large}
    return large, small


class CheckpointManager:
    """Saves and loads ``step-{N}`` checkpoints on one or more replica URLs."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        keep_latest_k: int = 3,
        full_every: int = 1,
        async_save: bool = True,
        storage_options: dict[str, dict[str, Any]] | None = None,
        clock: Clock = SYSTEM_CLOCK,
        say: Progress | None = None,
    ) -> None:
        """Open the replicas (``storage_options`` maps a URL to its fsspec options); manifests
        are stamped with ``clock``'s time; ``say`` takes the line a save that must wait for the
        previous one says (default: stderr)."""
        if not urls:
            raise CheckpointError("no checkpoint URL given: pass at least one folder or URL")
        if keep_latest_k < 1 or full_every < 1:
            raise CheckpointError("keep_latest_k and full_every must be at least 1")
        options = storage_options or {}
        self.replicas = [_open_checked(url, options.get(url)) for url in urls]
        self.keep_latest_k = keep_latest_k
        self.full_every = full_every
        self.async_save = async_save
        self.clock = clock
        self.say = say or _to_stderr
        self._buffers: dict[str, torch.Tensor] = {}
        self._staged = threading.Event()
        """Clear while a guarded save's tensors are being staged in the background."""
        self._staged.set()
        self._staging_waited_s = 0.0
        """How long ``wait_staged()`` (the guard's step) has blocked for the last guarded save."""
        self._guard_hooks: weakref.WeakKeyDictionary[torch.optim.Optimizer, RemovableHandle]
        self._guard_hooks = weakref.WeakKeyDictionary()
        """The step pre-hook on each guard optimizer."""
        self._thread: threading.Thread | None = None
        self._persisting: tuple[int, float] | None = None
        """The step in the background thread, and when its persisting began."""
        self._error: BaseException | None = None
        self._base: dict[str, dict[str, Any]] | None = None
        self._base_step: int | None = None
        self._saves_since_full = 0
        self._bases_of: dict[int, int | None] = {}
        self.last_save: SaveStats | None = None
        self._closed = False

    # ---- saving -------------------------------------------------------------------------

    def save(
        self,
        step: int,
        state: Any,
        *,
        block: bool = False,
        guard: torch.optim.Optimizer | None = None,
    ) -> SaveStats | None:
        """Checkpoint ``state`` as ``step``; returns at once after staging unless ``block``
        (or the manager is synchronous), in which case it returns when durable.

        With ``guard``, the tensors of ``state`` that are the guard's CPU parameters or state
        are staged in the background, and the guard's next ``step()`` waits for them: nothing
        but that ``step()`` may change them in place until it runs.

        Raises:
            CheckpointError: when this or the previous save failed; ``latest`` is untouched.
        """
        if self._closed:
            raise CheckpointError("the CheckpointManager is closed")
        began = time.perf_counter()
        self._say_what_it_waits_for(step)
        self.wait()
        skeleton, tensors = flatten(state)
        later: dict[str, torch.Tensor] = {}
        if guard is not None and self.async_save and not block:
            later = _guarded(guard, tensors)
            self._hook(guard)
        as_is = _writable_as_is(tensors) if block or not self.async_save else {}
        staged = self._stage(
            {k: t for k, t in tensors.items() if k not in later and k not in as_is}
        )
        staged.update(self._buffers_for(later))
        staged.update(as_is)
        full = self._base is None or self._saves_since_full + 1 >= self.full_every
        stall = time.perf_counter() - began
        self._persisting = (step, time.perf_counter())
        self._staging_waited_s = 0.0
        if later:
            self._staged.clear()
        job = threading.Thread(
            target=self._persist_guarded,
            args=(step, skeleton, staged, later, full, stall),
            daemon=True,
            name=f"checkpoint-{step}",
        )
        self._thread = job
        try:
            job.start()
        except BaseException:
            self._thread = None
            self._staged.set()  # (no staging to wait for: the guard must not hang)
            raise
        if block or not self.async_save:
            self.wait()
            return self.last_save
        return None

    def _hook(self, guard: torch.optim.Optimizer) -> None:
        """Make ``guard``'s ``step()`` wait for the staging in flight (once per optimizer)."""
        if guard not in self._guard_hooks:
            self._guard_hooks[guard] = guard.register_step_pre_hook(self._await_staging)

    def _await_staging(self, _optimizer: Any, _args: Any, _kwargs: Any) -> None:
        """The guard's step pre-hook."""
        self.wait_staged()

    def wait_staged(self) -> None:
        """Block until a guarded save's tensors are staged: call it before changing them in
        place other than by the guard's ``step()`` (which calls it itself)."""
        if self._staged.is_set():
            return
        began = time.perf_counter()  # timing only: what training waited, in staging_waited_s
        self._staged.wait()
        self._staging_waited_s += time.perf_counter() - began

    @property
    def staging_waited_s(self) -> float:
        """Seconds training has waited (:meth:`wait_staged`, the guard's ``step()``) for the last
        guarded save's staging: with what ``save()`` blocked, that save's whole stall."""
        return self._staging_waited_s

    def _say_what_it_waits_for(self, step: int) -> None:
        """One line when the previous save is still being written: this one waits for it."""
        if self._thread is None or not self._thread.is_alive() or self._persisting is None:
            return
        previous, since = self._persisting
        self.say(
            f"checkpoint step {step} waits for step {previous} to be durable on "
            f"{len(self.replicas)} replica(s) (writing for {time.perf_counter() - since:.1f} s)"
        )

    def wait(self) -> None:
        """Block until the save in flight is durable.

        Raises:
            CheckpointError: when it failed.
        """
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            error, self._error = self._error, None
            if isinstance(error, CheckpointError):
                raise error
            raise CheckpointError(f"checkpoint save failed: {error}") from error

    def _stage(self, tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Copy every tensor into reusable CPU buffers (pinned when copying from a GPU), on one
        intra-op thread: a copy is memory-bound, and torch's threads spin when the host is
        busy."""
        with _one_intra_op_thread():
            return self._copy_to_buffers(tensors)

    def _copy_to_buffers(self, tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The staging copy itself."""
        staged = self._buffers_for(tensors)
        on_gpu = False
        for key, tensor in tensors.items():
            source = tensor.detach()
            staged[key].copy_(source, non_blocking=source.is_cuda)
            on_gpu = on_gpu or source.is_cuda
        if on_gpu:
            torch.cuda.synchronize()
        return staged

    def _buffers_for(self, tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """A reusable CPU buffer for each tensor (pinned for one on a GPU), made when its shape
        or dtype is new."""
        staged = {}
        for key, source in tensors.items():
            buffer = self._buffers.get(key)
            if buffer is None or buffer.shape != source.shape or buffer.dtype != source.dtype:
                pin = source.is_cuda
                buffer = torch.empty(source.shape, dtype=source.dtype, pin_memory=pin)
                self._buffers[key] = buffer
            staged[key] = buffer
        return staged

    def _persist_guarded(
        self,
        step: int,
        skeleton: Any,
        staged: dict[str, torch.Tensor],
        later: dict[str, torch.Tensor],
        full: bool,
        stall: float,
    ) -> None:
        try:
            try:
                for key, source in later.items():  # (memmove: one thread, without the GIL)
                    ctypes.memmove(staged[key].data_ptr(), source.data_ptr(), source.nbytes)
            finally:
                self._staged.set()
            self._persist(step, skeleton, staged, full, stall)
        except BaseException as exc:  # reported by wait()
            self._error = exc

    def _persist(
        self, step: int, skeleton: Any, staged: dict[str, torch.Tensor], full: bool, stall: float
    ) -> None:
        began = time.perf_counter()
        large, small = _split_large(staged)
        known = self._digests_to_compare(large, full)
        reuse = self._reusable(known)
        entries, files, to_write = self._layout(step, large, small, known, reuse)
        sealed: list[dict[str, Any]] = []

        def manifest_of(digests: dict[str, str]) -> bytes:
            """The manifest, its digests from the writes (or the comparison before them)."""
            for file in to_write:
                files[f"step-{step}/{file.name}"] = {
                    "digest": digests[file.name],
                    "bytes": file.nbytes,
                }
            for key in large.keys() - reuse:
                entries[key]["digest"] = files[entries[key]["file"]]["digest"]
            manifest = self._manifest(step, full, skeleton, entries, files)
            sealed.append(manifest)
            return seal(manifest)

        outcome = write_step(self.replicas, step, to_write, manifest_of)
        if outcome.failures:
            done = outcome.committed
            committed = f"; committed on {', '.join(done)}" if done else ""
            raise CheckpointError(
                f"checkpoint step {step} failed on {len(outcome.failures)} of "
                f"{len(self.replicas)} replica(s) ({'; '.join(outcome.failures)}){committed}; "
                "latest still names the last committed step there. Free space or fix the URL, "
                "then save again"
            )
        self._advance_base(step, full, sealed[0])
        self._prune()
        self.last_save = SaveStats(
            step=step,
            stall_s=stall,
            persist_s=time.perf_counter() - began,
            bytes_written=sum(f.nbytes for f in to_write),
            full=full,
        )

    def _digests_to_compare(self, large: dict[str, torch.Tensor], full: bool) -> dict[str, str]:
        """An incremental save's digests of its large tensors, hashed before anything is written
        to tell which changed (and not hashed again by the writes); none for a full save."""
        if full or self._base is None:
            return {}
        return digest_all({k: tensor_bytes(t) for k, t in large.items()})

    def _reusable(self, known: dict[str, str]) -> set[str]:
        """The large tensors an incremental save can take from its base (same digest)."""
        if self._base is None:
            return set()
        return {k for k, h in known.items() if self._base.get(k, {}).get("digest") == h}

    def _manifest(
        self,
        step: int,
        full: bool,
        skeleton: Any,
        entries: dict[str, Any],
        files: dict[str, Any],
    ) -> dict[str, Any]:
        """The manifest of ``step`` (before it is sealed)."""
        return {
            "format": FORMAT_VERSION,
            "checksum": ALGORITHM,
            "step": step,
            "kind": "full" if full else "incremental",
            "base_step": None if full else self._base_step,
            "created": self.clock.time(),
            "skeleton": skeleton,
            "tensors": entries,
            "files": files,
        }

    def _advance_base(self, step: int, full: bool, manifest: dict[str, Any]) -> None:
        """After a committed save: a full one becomes the base, an incremental one counts."""
        if full:
            self._base = manifest["tensors"]
            self._base_step = step
            self._saves_since_full = 0
        else:
            self._saves_since_full += 1
        self._bases_of[step] = manifest["base_step"]

    def _layout(
        self,
        step: int,
        large: dict[str, torch.Tensor],
        small: dict[str, torch.Tensor],
        known: dict[str, str],
        reuse: set[str],
    ) -> tuple[dict[str, Any], dict[str, Any], list[StepFile]]:
        """The manifest's tensors (a written large tensor's digest to come from its write),
        the base's files it takes, and the files to write: a large tensor a file each unless
        its base holds it already, the small ones together in one."""
        entries: dict[str, Any] = {}
        files: dict[str, Any] = {}
        to_write: list[StepFile] = []
        for i, (key, tensor) in enumerate(large.items()):
            meta = {"dtype": str(tensor.dtype), "shape": list(tensor.shape)}
            if key in reuse and self._base is not None:
                base = self._base[key]
                entries[key] = {**meta, **{k: base[k] for k in ("digest", "file", "nbytes")}}
                entries[key]["offset"] = 0
                files[base["file"]] = {"digest": base["digest"], "bytes": base["nbytes"]}
                continue
            file = StepFile(f"t{i}.bin", [tensor_bytes(tensor)], known.get(key))
            entries[key] = {**meta, "file": f"step-{step}/{file.name}", "offset": 0}
            entries[key]["nbytes"] = file.nbytes
            to_write.append(file)
        offset = 0
        for key, tensor in small.items():
            size = tensor.numel() * tensor.element_size()
            entries[key] = {
                "dtype": str(tensor.dtype),
                "shape": list(tensor.shape),
                "file": f"step-{step}/{SMALL_FILE}",
                "offset": offset,
                "nbytes": size,
            }
            offset += size
        chunks = [tensor_bytes(t) for t in small.values()]
        to_write.append(StepFile(SMALL_FILE, chunks))
        return entries, files, to_write

    def _prune(self) -> None:
        """Keep the newest ``keep_latest_k`` steps and the full steps they build on."""
        for replica in self.replicas:
            steps = replica.steps()
            keep = set(steps[: self.keep_latest_k])
            keep |= {self._base_of(replica, s) for s in keep} - {None}  # type: ignore[arg-type]
            for step in steps:
                if step not in keep:
                    replica.remove_step(step)
                    self._bases_of.pop(step, None)

    def _base_of(self, replica: Replica, step: int) -> int | None:
        if step not in self._bases_of:
            try:
                where = f"{replica.url}/step-{step}"
                manifest = unseal(replica.read(f"step-{step}/{MANIFEST}"), where)
                self._bases_of[step] = manifest.get("base_step")
            except (OSError, CheckpointError):
                return None
        return self._bases_of[step]

    # ---- loading ------------------------------------------------------------------------

    def load(
        self, step: int = -1, template: Callable[[], dict[str, Any]] | None = None
    ) -> Checkpoint | None:
        """The newest intact checkpoint (or ``step``) from any replica; None when there is
        none. Corrupt or partial copies are skipped, and named in its ``skipped``. No
        ``template`` is needed: the manifest holds the state's structure.

        Raises:
            NoIntactCheckpoint: when steps were committed but every copy is damaged.
        """
        self.wait()
        damaged: list[DamagedCopy] = []
        for candidate in self._candidates(step):
            for replica in self.replicas:
                if candidate not in replica.steps():
                    continue
                try:
                    checkpoint = self._read(replica, candidate)
                except (
                    CheckpointError,
                    OSError,
                    ValueError,
                    KeyError,
                    TypeError,
                    IndexError,
                    RuntimeError,
                ) as exc:
                    # damaged: the next older intact copy wins
                    why = _why_damaged(exc, replica.url, candidate)
                    damaged.append(DamagedCopy(url=replica.url, step=candidate, problem=why))
                    continue
                # Later saves are incremental against this one only if it is full.
                self._base = None
                self._base_step = None
                return replace(checkpoint, skipped=tuple(damaged))
        if damaged:
            raise NoIntactCheckpoint([r.url for r in self.replicas], [d.problem for d in damaged])
        return None

    def _candidates(self, step: int) -> Iterator[int]:
        if step >= 0:
            yield step
            return
        yield from sorted({s for r in self.replicas for s in r.steps()}, reverse=True)

    def _read(self, replica: Replica, step: int) -> Checkpoint:
        where = f"{replica.url}/step-{step}"
        manifest = unseal(replica.read(f"step-{step}/{MANIFEST}"), where)
        if manifest.get("format") not in LOADABLE_FORMATS or manifest.get("step") != step:
            raise CheckpointError(f"{where}: unknown manifest format or step")
        algorithm, key = checksum_of(manifest, where)
        contents = {}
        for name, expected in manifest["files"].items():
            data = replica.read(name)
            if len(data) != expected["bytes"] or digest([data], algorithm) != expected[key]:
                raise CheckpointError(f"{replica.url}/{name}: checksum mismatch")
            contents[name] = data
        tensors = {}
        for key, entry in manifest["tensors"].items():
            data = contents[entry["file"]]
            offset, nbytes = entry["offset"], entry["nbytes"]
            if not (isinstance(offset, int) and isinstance(nbytes, int)) or not (
                0 <= offset <= offset + nbytes <= len(data)
            ):
                raise CheckpointError(f"{where}: tensor {key} lies outside its file")
            chunk = memoryview(data)[offset : offset + nbytes]
            tensors[key] = tensor_from_bytes(chunk, entry["dtype"], entry["shape"])
        return Checkpoint(
            step=step, state=unflatten(manifest["skeleton"], tensors), url=replica.url
        )

    def steps(self) -> list[int]:
        """Committed steps on any replica, newest first."""
        return sorted({s for r in self.replicas for s in r.steps()}, reverse=True)

    def close(self) -> None:
        """Wait for the save in flight and release the staging buffers."""
        if self._closed:
            return
        try:
            self.wait()
        finally:
            self._closed = True
            self._buffers.clear()
            for hook in self._guard_hooks.values():
                hook.remove()
            self._guard_hooks.clear()


@contextmanager
def _one_intra_op_thread() -> Iterator[None]:
    """torch's intra-op threads set to one while the block runs, then put back."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _to_stderr(line: str) -> None:
    """A line on stderr, the job's log."""
    print(f"spotwise checkpoint: {line}", file=sys.stderr, flush=True)


def _why_damaged(exc: BaseException, url: str, step: int) -> str:
    """What was wrong with the copy of ``step`` on replica ``url``, naming where (once)."""
    text = str(exc) if isinstance(exc, CheckpointError) else f"{type(exc).__name__}: {exc}"
    return text if text.startswith(url) else f"{url}/step-{step}: {text}"

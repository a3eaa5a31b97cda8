"""One checkpoint step written to every replica at once, each byte hashed once.

A small bounded pool runs, for each file, one hash task (none when the digest is known: an
incremental save hashed the tensor already, to compare it with its base) and one write task per
replica. So a file's bytes are hashed once whatever the number of replicas, the replicas are
written side by side, and hashing overlaps the writes (hashlib and file writes release the GIL).
Each replica fsyncs each file once and its folder once, at the commit. A replica that fails is
left out of the rest of the step and its uncommitted files are removed; the others commit, and
the failure is reported.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from spotwise.executor.checkpoint.checksum import ALGORITHM, Buffer, digest
from spotwise.executor.checkpoint.storage import Replica

WRITER_THREADS = 4
"""Threads writing and hashing one step: enough to keep a disk and a hash busy at once, few
enough not to crowd a busy host."""


@dataclass(frozen=True, slots=True)
class StepFile:
    """A file of the step: its name in the step's folder, its bytes, and its digest when known
    already."""

    name: str
    chunks: Sequence[memoryview]
    digest: str | None = None

    @property
    def nbytes(self) -> int:
        """Its size."""
        return sum(chunk.nbytes for chunk in self.chunks)


@dataclass(frozen=True, slots=True)
class Outcome:
    """Where the step committed, and why it did not elsewhere."""

    committed: list[str]
    """The URLs of the replicas that committed it."""
    failures: list[str]
    """``URL: why`` for each replica that did not, in the replicas' order."""


ManifestOf = Callable[[dict[str, str]], bytes]
"""The sealed manifest, given every file's digest by name."""


def digest_all(
    buffers: dict[str, Buffer], algorithm: str = ALGORITHM, threads: int = WRITER_THREADS
) -> dict[str, str]:
    """Each buffer's digest, hashed on up to ``threads`` threads."""
    with ThreadPoolExecutor(threads, thread_name_prefix="checkpoint-hash") as pool:
        found = pool.map(lambda b: digest([b], algorithm), buffers.values())
        return dict(zip(buffers, found, strict=True))


def write_step(
    replicas: Sequence[Replica],
    step: int,
    files: Sequence[StepFile],
    manifest_of: ManifestOf,
    *,
    algorithm: str = ALGORITHM,
    threads: int = WRITER_THREADS,
) -> Outcome:
    """Write ``files`` to every replica, then commit the step with the manifest
    ``manifest_of`` makes from their digests where every file was written."""
    if threads < 1:
        raise ValueError(f"threads must be at least 1, not {threads}")
    failed: dict[int, str] = {}
    stagings: dict[int, str] = {}
    for i, replica in enumerate(replicas):
        try:
            stagings[i] = replica.begin(step)
        except Exception as exc:
            failed[i] = _why(replica, exc)
    digests = {f.name: f.digest for f in files if f.digest is not None}
    lock = threading.Lock()

    def hash_file(file: StepFile) -> None:
        found = digest(file.chunks, algorithm)
        with lock:
            digests[file.name] = found

    def write_file(i: int, file: StepFile) -> None:
        if i in failed:
            return  # this replica failed already: the rest of its step is not written
        try:
            replicas[i].write(f"{stagings[i]}/{file.name}", file.chunks)
        except Exception as exc:
            with lock:
                failed.setdefault(i, _why(replicas[i], exc))

    try:
        with ThreadPoolExecutor(threads, thread_name_prefix=f"checkpoint-{step}") as pool:
            tasks: list[Future[None]] = []
            for file in files:
                if file.digest is None:
                    tasks.append(pool.submit(hash_file, file))
                tasks += [pool.submit(write_file, i, file) for i in stagings]
            for task in tasks:
                task.result()
            live = [i for i in stagings if i not in failed]
            if live:
                manifest = manifest_of(digests)
                commits = {
                    i: pool.submit(replicas[i].commit, stagings[i], step, manifest) for i in live
                }
                for i, commit in commits.items():
                    try:
                        commit.result()
                    except Exception as exc:
                        failed[i] = _why(replicas[i], exc)
    except BaseException:
        failed.update({i: "interrupted" for i in stagings if i not in failed})
        raise
    finally:
        for i in failed:
            if i in stagings:
                replicas[i].abort(stagings[i])
    return Outcome(
        committed=[r.url for i, r in enumerate(replicas) if i not in failed],
        failures=[failed[i] for i in sorted(failed)],
    )


def _why(replica: Replica, exc: Exception) -> str:
    """``URL: the error``, the OS's reason and file for an OSError."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{replica.url}: {exc.strerror}{where}"
    return f"{replica.url}: {exc}"

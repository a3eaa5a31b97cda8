"""A job's log: what its command printed, per instance, kept next to the store in a folder only
the user can read (``logs/JOB/``, one ``N.log`` per instance, N in launch order, and beside it
``N.launched``, the instance's id, once it has started), and printed live on the supervisor's
stderr, prefixed by where the instance runs (and, in a fleet, by the job's name)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from spotwise.executor.launchers.base import Placement, echo

PRIVATE = 0o700


def log_folder(store_path: Path, job_id: str) -> Path:
    """Where ``job_id``'s instance logs live, next to the store."""
    return store_path.parent / "logs" / job_id


class JobLog:
    """Writes each instance's lines to its own file and echoes them, prefixed."""

    def __init__(
        self, folder: Path, stream: TextIO | None = None, label: str | None = None
    ) -> None:
        self.folder, self.stream, self.label = folder, stream, label
        self._files: list[TextIO] = []
        self._lock = threading.Lock()
        """An instance's stdout and stderr are read by two threads."""
        for path in (folder.parent, folder):
            path.mkdir(mode=PRIVATE, parents=True, exist_ok=True)
            os.chmod(path, PRIVATE)  # mkdir's mode yields to the umask; this does not

    def for_instance(self, placement: Placement) -> Callable[[str], None]:
        """The sink of the next instance's lines (its file stays open until :meth:`close`)."""
        path = self.folder / f"{len(self._files) + 1}.log"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        file = os.fdopen(fd, "a", buffering=1)  # line-buffered: a reader sees whole lines
        file.write(f"# {placement.describe()}\n")
        self._files.append(file)
        shown = echo(placement, self.stream, self.label)

        def write(line: str) -> None:
            with self._lock:
                if not file.closed:  # a reader may outlive the job by a line
                    file.write(line if line.endswith("\n") else line + "\n")
                shown(line)

        return write

    def launched(self, instance_id: str | None) -> None:
        """The last instance :meth:`for_instance` was asked for has started, as ``instance_id``
        (None: it has no id of its own). A log without this mark is of a launch that was
        refused."""
        path = self.folder / f"{len(self._files)}.launched"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as file:
            file.write(instance_id or "")

    def close(self) -> None:
        """Close every instance's file (after the job)."""
        with self._lock:
            for file in self._files:
                file.close()


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceLog:
    """What one instance of a job printed."""

    number: int
    """The instance's place among the job's instances (1: the first)."""
    where: str
    """Where it ran (``spot in us-east-1a``)."""
    instance_id: str | None
    """Its id on the cloud (None: a local process, or a log from before ids were kept)."""
    launched_at: float | None
    """When it started (Unix seconds; None: not recorded)."""
    lines: list[str]

    def marker(self) -> str:
        """The line that opens its part of the job's log."""
        named = f" ({self.instance_id})" if self.instance_id else ""
        return f"--- instance {self.number}: {self.where}{named} ---"


def instance_logs(folder: Path) -> list[InstanceLog]:
    """Every started instance's log, in launch order (a refused launch's is left out)."""
    logs: list[InstanceLog] = []
    for path in sorted(folder.glob("*.log"), key=lambda p: int(p.stem)):
        where, lines = "", []
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("# ") and not where:
                where = line[2:]
                continue
            lines.append(line)
        mark = path.with_suffix(".launched")
        started = mark.is_file()
        if not started and not lines:
            continue  # asked for, then refused (no capacity): nothing ran
        logs.append(
            InstanceLog(
                number=len(logs) + 1,
                where=where,
                instance_id=(mark.read_text().strip() or None) if started else None,
                launched_at=mark.stat().st_mtime if started else None,
                lines=lines,
            )
        )
    return logs


def read_logs(folder: Path) -> Iterator[tuple[str, str]]:
    """(where it ran, line) of every instance's log in launch order."""
    for log in instance_logs(folder):
        for line in log.lines:
            yield log.where, line

"""A job's log: what its command printed, per instance, kept next to the store in a folder only
the user can read (``logs/JOB/``, one ``N.log`` per instance, N in launch order), and printed
live on the supervisor's stderr, prefixed by where the instance runs."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

from spotwise.executor.launchers.base import Placement

PRIVATE = 0o700


def log_folder(store_path: Path, job_id: str) -> Path:
    """Where ``job_id``'s instance logs live, next to the store."""
    return store_path.parent / "logs" / job_id


def echo(placement: Placement, stream: TextIO | None = None) -> Callable[[str], None]:
    """Print an instance's lines on ``stream`` (stderr), prefixed by where it runs."""
    prefix = f"[{placement.describe()}] "

    def write(line: str) -> None:
        out = stream if stream is not None else sys.stderr
        out.write(prefix + (line if line.endswith("\n") else line + "\n"))
        out.flush()

    return write


class JobLog:
    """Writes each instance's lines to its own file and echoes them, prefixed."""

    def __init__(self, folder: Path, stream: TextIO | None = None) -> None:
        self.folder, self.stream = folder, stream
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
        shown = echo(placement, self.stream)

        def write(line: str) -> None:
            with self._lock:
                if not file.closed:  # a reader may outlive the job by a line
                    file.write(line if line.endswith("\n") else line + "\n")
                shown(line)

        return write

    def close(self) -> None:
        """Close every instance's file (after the job)."""
        with self._lock:
            for file in self._files:
                file.close()


def read_logs(folder: Path) -> Iterator[tuple[str, str]]:
    """(where it ran, line) of every instance's log in launch order."""
    for path in sorted(folder.glob("*.log"), key=lambda p: int(p.stem)):
        where = ""
        for line in path.read_text().splitlines():
            if line.startswith("# ") and not where:
                where = line[2:]
                continue
            yield where, line

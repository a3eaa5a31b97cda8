"""A job's log: what its command printed, per instance, kept next to the store in a folder only
the user can read (``logs/JOB/``, one ``N.log`` per instance, N in launch order), and printed
live on the supervisor's stderr, prefixed by where the instance runs."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

from spotwise.executor.launchers.base import Placement

PRIVATE = 0o700


def log_folder(store_path: Path, job_id: str) -> Path:
    """Where ``job_id``'s instance logs live, next to the store."""
    return store_path.parent / "logs" / job_id


class JobLog:
    """Writes each instance's lines to its own file and echoes them, prefixed."""

    def __init__(self, folder: Path, echo: TextIO | None = None) -> None:
        self.folder = folder
        self.echo = echo if echo is not None else sys.stderr
        self._instances = 0
        for path in (folder.parent, folder):
            path.mkdir(mode=PRIVATE, parents=True, exist_ok=True)
            os.chmod(path, PRIVATE)  # mkdir's mode yields to the umask; this does not

    def for_instance(self, placement: Placement) -> Callable[[str], None]:
        """The sink of the next instance's lines."""
        self._instances += 1
        path = self.folder / f"{self._instances}.log"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a") as header:
            header.write(f"# {placement.describe()}\n")
        prefix = f"[{placement.describe()}] "

        def write(line: str) -> None:
            text = line if line.endswith("\n") else line + "\n"
            with path.open("a") as out:
                out.write(text)
            self.echo.write(prefix + text)
            self.echo.flush()

        return write


def read_logs(folder: Path) -> Iterator[tuple[str, str]]:
    """(where it ran, line) of every instance's log in launch order."""
    for path in sorted(folder.glob("*.log"), key=lambda p: int(p.stem)):
        where = ""
        for line in path.read_text().splitlines():
            if line.startswith("# ") and not where:
                where = line[2:]
                continue
            yield where, line

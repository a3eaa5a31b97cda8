"""Where a job's checkpoints are, as the supervisor sizes them for the ledger when the job ends
(their storage cost): a folder on this machine, or a folder of a cloud's bucket
(:class:`~executor.clouds.base.BucketFolder`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class CheckpointPlace(Protocol):
    """A place a job checkpoints to, which can say how many bytes it holds."""

    @property
    def where(self) -> str:
        """The folder or URL, as the ledger records it."""
        ...

    def nbytes(self) -> int:
        """The bytes it holds now (an ExecutorError when they cannot be read)."""
        ...


@dataclass(frozen=True, slots=True)
class LocalFolder:
    """A checkpoint folder on this machine (a missing one holds 0 bytes)."""

    path: Path

    @property
    def where(self) -> str:
        """The folder's path."""
        return str(self.path)

    def nbytes(self) -> int:
        """The bytes of the files under the folder."""
        return sum(f.stat().st_size for f in self.path.rglob("*") if f.is_file())

"""The ledger's pending journal: writes a supervisor could not make to the store at once
(another process held it), kept in order in an append-only file next to the store
(``pending/JOB.jsonl``, mode 0600) until the store is free.

Each line names one of four fixed writes and its values; nothing in a journal is SQL, so a
journal cannot make the store run anything else. Replaying a journal repeats its writes in
order, and repeating one is harmless: inserts skip rows already there. While its supervisor
lives, a journal is locked (``flock``); :func:`replay_orphans` writes only the journals whose
supervisor is gone.
"""

from __future__ import annotations

import enum
import fcntl
import json
import logging
import os
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from spotwise.executor.ledger.job_ids import is_job_id
from spotwise.pricing.errors import StoreError

if TYPE_CHECKING:
    from spotwise.pricing.operational import OperationalStore

log = logging.getLogger(__name__)

JOB_COLUMNS = (
    "job_id",
    "name",
    "command",
    "launcher",
    "started",
    "status",
    "compute_hours",
    "deadline_hours",
    "on_demand_price",
    "checkpoint_usd_per_gb_month",
    "host",
    "supervisor_pid",
    "simulated",
    "prices",
    "simulation",
    "sweep",
    "trial",
    "fleet",
    "tier",
    "supervisor_started",
)
ADDED_JOB_COLUMNS = ("sweep", "trial", "fleet", "tier", "supervisor_started")
"""Job columns an older journal may lack (versions 6, 8 and 9 of the ledger's tables; None
there)."""
ENTRY_COLUMNS = (
    "job_id",
    "seq",
    "ts",
    "kind",
    "pool",
    "market",
    "hours",
    "price",
    "cost_usd",
    "bytes",
    "detail",
    "on_demand_price",
    "node",
)
ADDED_ENTRY_COLUMNS = ("node",)
"""Entry columns an older journal may lack (version 7 of the ledger's tables; None there)."""
_TIMES = frozenset({"started", "ts", "ended"})


class Write(enum.StrEnum):
    """The ledger's writes: a job starts, an entry, the job's process group, the job ends."""

    START = "start"
    ENTRY = "entry"
    PROCESS_GROUP = "process_group"
    FINISH = "finish"


_COLUMNS: dict[Write, tuple[str, ...]] = {
    Write.START: JOB_COLUMNS,
    Write.ENTRY: ENTRY_COLUMNS,
    Write.PROCESS_GROUP: ("worker_pgid", "job_id"),
    Write.FINISH: ("ended", "status", "job_id"),
}
_SQL: dict[Write, str] = {
    Write.START: f"INSERT INTO jobs ({', '.join(JOB_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(JOB_COLUMNS))}) ON CONFLICT DO NOTHING",
    Write.ENTRY: f"INSERT INTO ledger ({', '.join(ENTRY_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(ENTRY_COLUMNS))}) ON CONFLICT DO NOTHING",
    Write.PROCESS_GROUP: "UPDATE jobs SET worker_pgid = ? WHERE job_id = ?",
    Write.FINISH: "UPDATE jobs SET ended = ?, status = ? WHERE job_id = ?",
}


@dataclass(frozen=True, slots=True)
class LedgerWrite:
    """One write to the ledger's tables: which, and its column values (times as ISO text)."""

    write: Write
    values: dict[str, Any]

    def __post_init__(self) -> None:
        if set(self.values) != set(_COLUMNS[self.write]):
            raise ValueError(
                f"a {self.write.value} write has the columns {sorted(_COLUMNS[self.write])}, "
                f"not {sorted(self.values)}"
            )

    @property
    def job_id(self) -> str:
        """The job the write belongs to."""
        return str(self.values["job_id"])

    def statement(self) -> tuple[str, list[Any]]:
        """The fixed SQL of this kind of write, and its parameters."""
        params = [
            datetime.fromisoformat(self.values[c])
            if c in _TIMES and self.values[c] is not None
            else self.values[c]
            for c in _COLUMNS[self.write]
        ]
        return _SQL[self.write], params

    def to_line(self) -> str:
        """The write as one JSON line of the journal."""
        return json.dumps({"write": self.write.value, "values": self.values}) + "\n"

    @classmethod
    def from_line(cls, line: str) -> LedgerWrite:
        """Parse one journal line.

        Raises:
            ValueError: for anything but one of the four writes with its columns.
        """
        raw = json.loads(line)
        if not isinstance(raw, dict) or not isinstance(raw.get("values"), dict):
            raise ValueError("not a ledger write")
        write, values = Write(str(raw.get("write"))), raw["values"]
        if write is Write.START:
            values = {**dict.fromkeys(ADDED_JOB_COLUMNS), **values}
        elif write is Write.ENTRY:
            values = {**dict.fromkeys(ADDED_ENTRY_COLUMNS), **values}
        return cls(write, values)


def apply_writes(store: OperationalStore, writes: Sequence[LedgerWrite]) -> None:
    """Make ``writes`` in order, in one transaction (all or none)."""
    store.execute_all([w.statement() for w in writes])


def pending_folder(store_path: Path) -> Path:
    """Where the store's pending journals are, next to it."""
    return store_path.parent / "pending"


def journal_path(store_path: Path, job_id: str) -> Path:
    """``job_id``'s pending journal.

    Raises:
        StoreError: for a job id that could name another file.
    """
    if not is_job_id(job_id):
        raise StoreError(f"{job_id!r} is not a job id: `spotwise jobs list` shows them")
    return pending_folder(store_path) / f"{job_id}.jsonl"


class Journal:
    """One job's pending journal, created on its first line and locked while it is open."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] | None = None

    def append(self, writes: Sequence[LedgerWrite]) -> None:
        """Add ``writes`` at the end and push them to disk."""
        if self._file is None:
            self._file = os.fdopen(self._open_locked(), "a", encoding="utf-8")
        self._file.write("".join(w.to_line() for w in writes))
        self._file.flush()
        os.fsync(self._file.fileno())

    def _open_locked(self) -> int:
        """The journal's file, locked: made anew while another process replayed and removed the
        one this opened before it could lock it (its lines would go to a file no one reads)."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                if os.stat(self.path).st_ino == os.fstat(fd).st_ino:
                    return fd
            except FileNotFoundError:
                pass
            os.close(fd)

    def discard(self) -> None:
        """Remove the journal (its writes are in the store)."""
        if self._file is not None:
            self.path.unlink(missing_ok=True)
            self.close()

    def close(self) -> None:
        """Release the journal, leaving it for :func:`replay_orphans`."""
        if self._file is not None:
            self._file.close()
            self._file = None


def read_journal(path: Path) -> list[LedgerWrite]:
    """The writes in a journal, in order; a last line cut short (its writer died while
    writing it) is left out with a warning.

    Raises:
        StoreError: for a line that is not a ledger write, naming the file and line.
    """
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    if lines[-1]:
        log.warning("%s: its last line was cut short while being written; left out", path)
    writes = []
    for number, line in enumerate(lines[:-1], start=1):
        try:
            writes.append(LedgerWrite.from_line(line))
        except (ValueError, TypeError) as exc:
            raise StoreError(
                f"{path}: line {number} is not a ledger write ({exc}); move the file away "
                "to go on without it"
            ) from exc
    return writes


def pending_writes(store_path: Path, job_id: str | None = None) -> dict[str, list[LedgerWrite]]:
    """Every journal's writes not yet in the store (or only ``job_id``'s), by job. Listing
    them all, a damaged journal is left out with a warning, so one bad file does not hide every
    job.

    Raises:
        StoreError: when ``job_id``'s own journal is damaged (naming the file and line).
    """
    if job_id is not None:
        path = journal_path(store_path, job_id)
        return {job_id: read_journal(path)} if path.is_file() else {}
    found = {}
    for path in sorted(pending_folder(store_path).glob("*.jsonl")):
        try:
            found[path.stem] = read_journal(path)
        except StoreError as exc:
            log.warning("left out of the listing: %s", exc)
        except FileNotFoundError:  # written by its supervisor meanwhile
            continue
    return found


def _orphans(store_path: Path) -> Generator[Path]:
    """Journals no live supervisor holds, each locked while the caller replays it."""
    for path in sorted(pending_folder(store_path).glob("*.jsonl")):
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its supervisor lives and will write it
            try:
                same = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:  # not removed by its writer since we opened it
                yield path
        finally:
            os.close(fd)


def has_orphans(store_path: Path) -> bool:
    """Whether a journal no live supervisor holds waits to be written into the store at
    ``store_path`` (files and locks only: the store is not opened)."""
    found = _orphans(store_path)
    try:
        return next(found, None) is not None
    finally:
        found.close()  # lets go of the journal's lock


def replay_orphans(store: OperationalStore) -> int:
    """Write the pending journals whose supervisor is gone into ``store``, in order, and remove
    them; a journal that cannot be read is left with a warning. Returns the writes made."""
    made = 0
    for path in _orphans(store.path):
        try:
            writes = read_journal(path)
            apply_writes(store, writes)
        except StoreError as exc:
            log.warning("pending ledger writes not replayed: %s", exc)
            continue
        path.unlink()
        made += len(writes)
        log.info("wrote %d pending ledger writes from %s", len(writes), path)
    return made

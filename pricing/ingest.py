"""Loading files into the store: find files, recognise or take their format, read, validate,
then write everything in one transaction (a bad file anywhere stores nothing)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from spotwise.pricing import gpus
from spotwise.pricing.clouds.aws import advisor, spot_prices
from spotwise.pricing.clouds.gcp import price_changes
from spotwise.pricing.errors import InputError
from spotwise.pricing.sources import FileFormat, Parsed, traces
from spotwise.pricing.sources.tabular import unreadable
from spotwise.pricing.store import MarketStore

FORMATS: dict[str, FileFormat] = {
    f.name: f
    for f in (
        *traces.FORMATS,
        *spot_prices.FORMATS,
        *price_changes.FORMATS,
        *advisor.FORMATS,
        *gpus.FORMATS,
    )
}
_DOCUMENTATION = re.compile(
    r"^(README|LICENSE|UPSTREAM_README).*|.*\.(md|txt\.md)$|.*SOURCE\.txt$", re.IGNORECASE
)


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadReport:
    """What a load read from each file and what it added to the store."""

    files: tuple[Parsed, ...]
    skipped: tuple[Path, ...]
    added: dict[str, int]


def discover(paths: Iterable[Path]) -> tuple[list[Path], list[Path]]:
    """Files under the given files and folders (sorted), and documentation files to skip.

    Raises:
        InputError: for a path that does not exist.
    """
    files: list[Path] = []
    skipped: list[Path] = []
    for path in paths:
        if not path.exists():
            raise InputError(
                path, "", "no such file or folder", "Check the path; nothing was stored"
            )
        candidates = sorted(_walk(path)) if path.is_dir() else [path]
        for candidate in candidates:
            if path.is_dir() and (
                _DOCUMENTATION.match(candidate.name) or candidate.name.startswith(".")
            ):
                skipped.append(candidate)
            else:
                files.append(candidate)
    return files, skipped


def _walk(folder: Path) -> list[Path]:
    """Every file under ``folder``.

    Raises:
        InputError: for any folder that cannot be listed (a load never skips what it cannot
            read).
    """
    found: list[Path] = []

    def refuse(exc: OSError) -> None:
        raise InputError(
            exc.filename or folder,
            "",
            f"cannot read this folder ({exc.strerror or exc})",
            "Fix its permissions or load the other paths alone; nothing was stored",
        )

    for root, _, names in os.walk(folder, onerror=refuse):
        found.extend(Path(root) / name for name in names if (Path(root) / name).is_file())
    return found


def detect_format(path: Path) -> FileFormat:
    """The format whose sniffer recognises the file.

    Raises:
        InputError: when no format (or more than one) recognises it.
    """
    try:
        with path.open("r", encoding="utf-8-sig", errors="replace") as handle:
            head = handle.read(4096)
    except OSError as exc:
        raise unreadable(path, exc) from exc
    matches = [f for f in FORMATS.values() if f.sniff(path, head)]
    if len(matches) != 1:
        names = ", ".join(FORMATS)
        problem = (
            "unknown format"
            if not matches
            else f"ambiguous format ({', '.join(m.name for m in matches)})"
        )
        raise InputError(
            path, "", problem, f"Name it with --format (one of: {names}); nothing was stored"
        )
    return matches[0]


def read_files(
    files: Sequence[Path],
    *,
    format_name: str | None = None,
    on_file: Callable[[Path], None] | None = None,
) -> list[Parsed]:
    """Read and validate every file; stop at the first bad one.

    Raises:
        InputError: for an unknown format name or any bad file.
    """
    if format_name is not None and format_name not in FORMATS:
        raise InputError(
            format_name, "--format", "unknown format", f"Choose one of: {', '.join(FORMATS)}"
        )
    parsed = []
    for path in files:
        file_format = FORMATS[format_name] if format_name else detect_format(path)
        parsed.append(file_format.read(path))
        if on_file:
            on_file(path)
    return parsed


@dataclass(frozen=True, slots=True)
class ReadPaths:
    """Files read and validated, not yet stored."""

    files: tuple[Parsed, ...]
    skipped: tuple[Path, ...]


def read_paths(
    paths: Sequence[Path],
    *,
    format_name: str | None = None,
    on_file: Callable[[Path], None] | None = None,
) -> ReadPaths:
    """Read and validate the files under ``paths`` (no store needed: loads read first, then
    hold the store only to write).

    Raises:
        InputError: for a missing path, an unknown format or any bad file.
    """
    files, skipped = discover(paths)
    parsed = read_files(files, format_name=format_name, on_file=on_file)
    return ReadPaths(tuple(parsed), tuple(skipped))


def store_files(store: MarketStore, read: ReadPaths) -> LoadReport:
    """Write files already read into the store in one transaction."""
    frames: dict[str, list[pd.DataFrame]] = {}
    for item in read.files:
        for table, frame in item.frames.items():
            frames.setdefault(table, []).append(frame)
    added = store.upsert(frames)
    return LoadReport(files=read.files, skipped=read.skipped, added=added)


def load_paths(
    store: MarketStore,
    paths: Sequence[Path],
    *,
    format_name: str | None = None,
    on_file: Callable[[Path], None] | None = None,
) -> LoadReport:
    """Load files and folders into the store in one transaction."""
    return store_files(store, read_paths(paths, format_name=format_name, on_file=on_file))

"""Readers of the bundled data formats no one cloud owns (the traces of several clouds), and
what every reader and collector shares: text files read line by line, catalog rows with their
SKUs. A cloud's own readers and collectors live in its folder, ``pricing/clouds/NAME/``.

Each reader turns one file into canonical frames (validated, see :mod:`spotwise.pricing.frames`);
:data:`~spotwise.pricing.ingest.FORMATS` lists them by name so a file's format can be recognised
or named.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd


@dataclass(frozen=True, slots=True, kw_only=True)
class Parsed:
    """What one file holds: validated frames by table, and what was read."""

    path: Path
    format: str
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    rows_read: int = 0
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class FileFormat:
    """A named file format: how to recognise a file of it and how to read one."""

    name: str
    description: str
    sniff: Callable[[Path, str], bool]
    """Given the path and the file's first 4 KiB of text, is this file of this format?"""
    read: Callable[[Path], Parsed]

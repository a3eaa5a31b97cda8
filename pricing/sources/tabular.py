"""Reading text files (CSV, JSON) so that every error names its line or position."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from spotwise.pricing.errors import InputError
from spotwise.pricing.frames import ROW

_UTC_SUFFIX = re.compile(r"(?:Z|[+-]00:?00)$")
_ANY_OFFSET = re.compile(r"[+-]\d\d:?\d\d$")


def unreadable(path: Path, exc: OSError) -> InputError:
    """The error for a file the operating system will not let us read."""
    return InputError(
        path,
        "",
        f"cannot read the file ({exc.strerror or exc})",
        "Check permissions; nothing was stored",
    )


def read_csv(path: Path, *, columns: Sequence[str], header: bool) -> pd.DataFrame:
    """Read a CSV as text columns plus ``_row`` (the file's line number, header = line 1).

    With ``header`` the named columns must all be present (others are kept); without it the
    file must have exactly ``len(columns)`` fields per line. Blank lines are not rows.

    Raises:
        InputError: unreadable, undecodable or malformed files, and missing columns.
    """
    frame = _parse_csv(path, columns, header)
    if header:
        frame = _header_row_as_columns(path, frame)
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(
            path,
            "line 1 (header)",
            f"missing column(s) {missing}; the header has {list(frame.columns)}",
            "Rename the columns or pass the right --format; nothing was stored",
        )
    frame[ROW] = frame.index + 1  # the file's line number (row 0 is line 1)
    blank = frame[list(columns)].apply(lambda c: c.isna() | (c == "")).all(axis=1)
    frame = frame[~blank].reset_index(drop=True)
    for column in columns:
        _require_values(path, frame, column)
        frame[column] = frame[column].str.strip()
    return frame


def _parse_csv(path: Path, columns: Sequence[str], header: bool) -> pd.DataFrame:
    """Every line of the file as text fields (the header, if any, as the first row).

    Raises:
        InputError: an unreadable, undecodable, empty or malformed file.
    """
    try:
        return pd.read_csv(
            path,
            dtype=str,
            keep_default_na=False,
            na_values=[],
            skip_blank_lines=False,
            # the header is read as a row: a line with more fields than it is then an error
            # (read as the header, pandas would take the extra field for an index)
            header=None,
            names=None if header else list(columns),
            skipinitialspace=True,
            on_bad_lines="error",
            encoding="utf-8-sig",  # a byte-order mark (as spreadsheets write) is not data
        )
    except UnicodeDecodeError as exc:
        raise InputError(
            path, f"byte {exc.start}", "not UTF-8 text", "Give a CSV file; nothing was stored"
        ) from exc
    except OSError as exc:
        raise unreadable(path, exc) from exc
    except pd.errors.EmptyDataError as exc:
        raise _empty(path) from exc
    except pd.errors.ParserError as exc:
        line = re.search(r"line (\d+)", str(exc))
        raise InputError(
            path,
            f"line {line.group(1)}" if line else "",
            f"malformed CSV ({exc})".replace("\n", " "),
            "Fix the line's fields; nothing was stored",
        ) from exc


def _empty(path: Path) -> InputError:
    """The error for a CSV without a header or rows."""
    return InputError(
        path,
        "line 1",
        "the file is empty",
        "Give a file with a header and rows; nothing was stored",
    )


def _header_row_as_columns(path: Path, frame: pd.DataFrame) -> pd.DataFrame:
    """The rows after the first, named by the first.

    Raises:
        InputError: for a file without even a header.
    """
    if frame.empty:
        raise _empty(path)
    frame.columns = [str(c).strip() for c in frame.iloc[0]]
    return frame.iloc[1:]


def _require_values(path: Path, frame: pd.DataFrame, column: str) -> None:
    """Fail on the first row whose ``column`` is missing or blank.

    Raises:
        InputError: naming that line and the field.
    """
    empty = frame[column].isna() | (frame[column].str.strip() == "")
    if empty.any():
        row = frame[ROW][empty].iloc[0]
        raise InputError(
            path,
            f"line {row}, field {column!r}",
            "missing value (is the file truncated?)",
            "Fill in the value or remove the line; nothing was stored",
        )


def parse_utc(
    frame: pd.DataFrame, column: str, *, origin: Path | str, where: str = "line {}"
) -> pd.Series:
    """Parse ISO-8601 text that names UTC (``Z`` or ``+00:00``) into UTC timestamps.

    Raises:
        InputError: naming the first row whose time has another offset, no zone, or no parse.
    """
    text = frame[column].astype(str)
    rows = frame[ROW]
    not_utc = ~text.str.contains(_UTC_SUFFIX)
    if not_utc.any():
        i = not_utc.to_numpy().nonzero()[0][0]
        value = text.iloc[i]
        problem = (
            "time has a non-UTC offset"
            if _ANY_OFFSET.search(value)
            else "time has no zone (UTC is required)"
        )
        raise InputError(
            origin,
            f"{where.format(rows.iloc[i])}, field {column!r}",
            f"{problem}: {value!r}",
            "Convert times to UTC with a Z suffix; nothing was stored",
        )
    stamps = pd.to_datetime(text, utc=True, format="ISO8601", errors="coerce")
    years = pd.to_numeric(text.str.extract(r"^\s*([+-]?\d{4,})-", expand=False), "coerce")
    unstorable = stamps.isna() | ~years.between(1678, 2261)
    if unstorable.any():
        i = unstorable.to_numpy().nonzero()[0][0]
        value = text.iloc[i]
        out_of_range = bool(years.notna().iloc[i] and not 1678 <= years.iloc[i] <= 2261)
        raise InputError(
            origin,
            f"{where.format(rows.iloc[i])}, field {column!r}",
            f"time {value[:60]!r} is outside the years 1678..2261 that can be stored"
            if out_of_range
            else f"unparsable time {value[:60]!r}",
            ("Fix the date" if out_of_range else "Give ISO-8601 times like 2020-01-15T08:00:00Z")
            + "; nothing was stored",
        )
    return stamps.astype("datetime64[ns, UTC]")


def read_json(path: Path) -> object:
    """A JSON document; a malformed, truncated or undecodable file names its line and column.

    Raises:
        InputError: naming where the document breaks.
    """
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except RecursionError as exc:
        raise InputError(
            path,
            "",
            "JSON nested too deeply to be a data file",
            "Give the real data file; nothing was stored",
        ) from exc
    except OSError as exc:
        raise unreadable(path, exc) from exc
    except json.JSONDecodeError as exc:
        raise InputError(
            path,
            f"line {exc.lineno}, column {exc.colno}",
            f"malformed or truncated JSON ({exc.msg})",
            "Restore the complete file; nothing was stored",
        ) from exc
    except UnicodeDecodeError as exc:
        raise InputError(
            path, f"byte {exc.start}", "not UTF-8 text", "Give a JSON file; nothing was stored"
        ) from exc

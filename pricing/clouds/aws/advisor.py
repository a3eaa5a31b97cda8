"""AWS Spot Instance Advisor snapshots: interruption band and saving per region and type.

Fetching (:func:`fetch_advisor`) is apart from reading (:func:`parse_advisor`), so the same
reader serves bundled snapshots and the live feed. Bands are stored for Linux, the product
every other Spotwise price refers to; the note counts the other systems' entries.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from spotwise.pricing.errors import InputError, SourceUnavailable
from spotwise.pricing.frames import validate
from spotwise.pricing.sources import FileFormat, Parsed
from spotwise.pricing.sources.tabular import read_json

ADVISOR_URL = "https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json"
_DATE_IN_NAME = re.compile(r"(\d{4}-\d\d-\d\d)")


def parse_advisor(
    doc: object, *, observed: pd.Timestamp, origin: str, source: str = "spot-advisor"
) -> tuple[pd.DataFrame, int]:
    """Bands of one advisor document; returns the frame and the count of non-Linux entries.

    Raises:
        InputError: when the document lacks ``spot_advisor`` or an entry lacks ``r``/``s``.
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("spot_advisor"), dict):
        raise InputError(
            origin,
            "top level",
            "not a Spot Advisor document (no 'spot_advisor')",
            "Give the advisor JSON feed; nothing was stored",
        )
    rows = []
    other_systems = 0
    for region, systems in doc["spot_advisor"].items():
        if not isinstance(systems, dict):
            raise InputError(
                origin,
                f"spot_advisor.{region}",
                "expected an object of systems",
                "Give the advisor JSON feed; nothing was stored",
            )
        for system, types in systems.items():
            if system == "Linux":
                rows += _linux_rows(region, types, origin)
            else:
                other_systems += len(types) if isinstance(types, dict) else 0
    frame = pd.DataFrame(
        rows, columns=["region", "instance_type", "interruption_band", "savings_pct", "_row"]
    )
    frame = frame.assign(source=source, provider="aws", observed=observed)
    return validate("bands", frame, origin=origin, where="{}"), other_systems


def _linux_rows(region: str, types: dict[str, object], origin: str) -> list[tuple[object, ...]]:
    """(region, type, band, saving, where) of each Linux entry of one region.

    Raises:
        InputError: when an entry lacks ``r`` or ``s``.
    """
    rows: list[tuple[object, ...]] = []
    for instance_type, entry in types.items():
        where = f"spot_advisor.{region}.Linux.{instance_type}"
        if not isinstance(entry, dict) or "r" not in entry or "s" not in entry:
            raise InputError(
                origin,
                where,
                f"entry lacks 'r' or 's': {entry!r}",
                "Give the advisor JSON feed; nothing was stored",
            )
        rows.append((region, instance_type, entry["r"], entry["s"], where))
    return rows


def read_advisor_file(path: Path) -> Parsed:
    """A bundled snapshot; its date comes from the file name (``..._2025-06-28.json``)."""
    match = _DATE_IN_NAME.search(path.name)
    if not match:
        raise InputError(
            path,
            "file name",
            "an advisor snapshot's date comes from its name",
            "Rename it like spot-advisor-data_2025-06-28.json; nothing was stored",
        )
    doc = read_json(path)
    bands, other = parse_advisor(
        doc, observed=pd.Timestamp(match.group(1), tz="UTC"), origin=str(path)
    )
    return Parsed(
        path=path,
        format="spot-advisor",
        frames={"bands": bands},
        rows_read=len(bands) + other,
        note=f"{other} non-Linux entries not stored (bands are for Linux)",
    )


def fetch_advisor(url: str = ADVISOR_URL, timeout_s: float = 10.0) -> object:
    """Download the live advisor feed.

    Raises:
        SourceUnavailable: when the feed cannot be reached or is not JSON.
    """
    import httpx

    try:
        response = httpx.get(url, timeout=timeout_s, follow_redirects=True)
        response.raise_for_status()
        return json.loads(response.content)
    except (httpx.HTTPError, json.JSONDecodeError) as exc:
        raise SourceUnavailable(f"Spot Advisor feed unreachable at {url}: {exc}") from exc


FORMATS = (
    FileFormat(
        name="spot-advisor",
        description="AWS Spot Instance Advisor snapshot (JSON)",
        sniff=lambda p, head: (
            p.suffix == ".json"
            and any(k in head for k in ('"spot_advisor"', '"instance_types"', '"global_rate"'))
        ),
        read=read_advisor_file,
    ),
)

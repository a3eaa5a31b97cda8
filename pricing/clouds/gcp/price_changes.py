"""GCP spot and on-demand list prices: one row per price change of a VM shape in a region."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from spotwise.pricing.frames import ROW, validate
from spotwise.pricing.sources import FileFormat, Parsed
from spotwise.pricing.sources.tabular import parse_utc, read_csv

COLUMNS = ("snapshot_utc", "machine_type", "region", "hour_ondemand_usd", "hour_spot_usd")
COMPANION_HEADER = "snapshot_utc,commit,n_series_in_subset"


def read_gcp_prices(path: Path) -> Parsed:
    """Price change points as ``prices`` rows, one per market (region-level: zone is '').

    A row without an on-demand price (the shape was not sold on demand then) gives only its
    spot row; the note counts such rows.
    """
    raw = read_csv_allowing_empty(path)
    ts = parse_utc(raw, "snapshot_utc", origin=path)
    frames = []
    for market, column in (("spot", "hour_spot_usd"), ("on_demand", "hour_ondemand_usd")):
        given = raw[column] != "" if market == "on_demand" else pd.Series(True, index=raw.index)
        frames.append(
            pd.DataFrame(
                {
                    "source": "gcp-prices",
                    "provider": "gcp",
                    "region": raw["region"],
                    "zone": "",
                    "instance_type": raw["machine_type"],
                    "market": market,
                    "ts": ts,
                    "price": raw[column],
                    ROW: raw[ROW],
                }
            )[given]
        )
        names = {"price": column, "ts": "snapshot_utc", "instance_type": "machine_type"}
        frames[-1] = validate("prices", frames[-1], origin=str(path), where="line {}", names=names)
    prices = pd.concat(frames, ignore_index=True)
    no_on_demand = int((raw["hour_ondemand_usd"] == "").sum())
    note = f"{no_on_demand} rows had no on-demand price (spot stored)" if no_on_demand else ""
    return Parsed(
        path=path, format="gcp-prices", frames={"prices": prices}, rows_read=len(raw), note=note
    )


def read_csv_allowing_empty(path: Path) -> pd.DataFrame:
    """The price CSV; only the on-demand price may be empty."""
    required = tuple(c for c in COLUMNS if c != "hour_ondemand_usd")
    raw = read_csv(path, columns=required, header=True)
    if "hour_ondemand_usd" not in raw.columns:
        read_csv(path, columns=COLUMNS, header=True)  # raises the missing-column error
    raw["hour_ondemand_usd"] = raw["hour_ondemand_usd"].fillna("").str.strip()
    return raw


def read_gcp_snapshots(path: Path) -> Parsed:
    """The list of times the GCP price list was observed: checked, nothing to store."""
    raw = read_csv(path, columns=tuple(COMPANION_HEADER.split(",")), header=True)
    parse_utc(raw, "snapshot_utc", origin=path)
    return Parsed(
        path=path,
        format="gcp-snapshots",
        rows_read=len(raw),
        note="observation times of the GCP price list; nothing to store",
    )


FORMATS = (
    FileFormat(
        name="gcp-prices",
        description="GCP spot/on-demand price change points (CSV)",
        sniff=lambda p, head: head.startswith("snapshot_utc,commit,machine_type,region"),
        read=read_gcp_prices,
    ),
    FileFormat(
        name="gcp-snapshots",
        description="GCP price-list observation times (CSV)",
        sniff=lambda p, head: head.startswith(COMPANION_HEADER),
        read=read_gcp_snapshots,
    ),
)

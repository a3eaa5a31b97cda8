"""Price rows read from a provider's catalog, each naming the SKU(s) it was built from: split
into the ``prices`` frame and the ``price_skus`` frame beside it (same key), both checked."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from spotwise.pricing.frames import ROW, SPECS, validate


def priced_frames(
    rows: pd.DataFrame,
    *,
    origin: str,
    now: pd.Timestamp,
    where: str = "row {}",
    names: Mapping[str, str] | None = None,
) -> dict[str, pd.DataFrame]:
    """``prices`` and ``price_skus`` from rows holding both (a ``sku`` column of text).

    Raises:
        InputError: the first bad row, naming it; nothing is to be stored.
    """
    prices = validate("prices", rows, origin=origin, where=where, names=names, now=now)
    columns = [*SPECS["price_skus"].columns, *([ROW] if ROW in rows.columns else [])]
    skus = validate(
        "price_skus", rows.loc[:, columns], origin=origin, where=where, names=names, now=now
    )
    return {"prices": prices, "price_skus": skus}


def with_skus(frames: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The prices with a ``sku`` column (None where a price names none), for reading."""
    prices = frames["prices"]
    skus = frames.get("price_skus")
    if skus is None or skus.empty:
        return prices.assign(sku=None)
    key = list(SPECS["price_skus"].key)
    read = prices.merge(skus, on=key, how="left")
    return read.assign(sku=read["sku"].astype(object).where(read["sku"].notna(), None))

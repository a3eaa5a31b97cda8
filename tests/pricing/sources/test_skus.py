"""Prices read with the SKUs they were built from."""

from __future__ import annotations

import pandas as pd

from spotwise.pricing.sources.skus import with_skus

KEY = {
    "source": "gcp-billing",
    "provider": "gcp",
    "region": "us-central1",
    "zone": "",
    "instance_type": "g2-standard-4",
}


def prices(*rows: tuple[str, str, float]) -> pd.DataFrame:
    """Prices of one shape: (market, ts, price) each."""
    return pd.DataFrame(
        [{**KEY, "market": m, "ts": pd.Timestamp(ts, tz="UTC"), "price": p} for m, ts, p in rows]
    )


def test_each_price_gains_the_skus_of_its_own_key_and_none_where_it_has_none() -> None:
    frame = prices(
        ("on_demand", "2026-01-01", 0.71),
        ("spot", "2026-01-01", 0.28),
        ("spot", "2026-02-01", 0.25),
    )
    skus = frame.iloc[[0, 2]].drop(columns="price").assign(sku=["core,ram,gpu", "s-core,s-gpu"])
    read = with_skus({"prices": frame, "price_skus": skus})
    # the January spot price names no SKU; the other two name theirs, matched on the whole key
    assert read["sku"].tolist() == ["core,ram,gpu", None, "s-core,s-gpu"]
    assert read["price"].tolist() == [0.71, 0.28, 0.25]


def test_prices_of_a_source_that_names_no_sku_read_with_none() -> None:
    frame = prices(("spot", "2026-01-01", 0.28))
    for frames in ({"prices": frame}, {"prices": frame, "price_skus": frame.iloc[:0]}):
        read = with_skus(frames)
        assert read["sku"].tolist() == [None] and read["price"].tolist() == [0.28]

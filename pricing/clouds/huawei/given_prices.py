"""Spot prices a user read and gives (``--spot-prices FLAVOR@ZONE=USD,...``): Huawei Cloud
publishes no spot price history, so these are the only spot prices ``collect huawei`` stores,
labelled as given, dated when given."""

from __future__ import annotations

import re
from collections.abc import Callable

import pandas as pd

from spotwise.pricing.errors import FlagError

SOURCE = "huawei-given"
_ENTRY = re.compile(r"^([a-z0-9][a-z0-9.]*)@([a-z]{2}(?:-[a-z]+)+-\d{1,2}[a-z])=(\d+(?:\.\d+)?)$")


def given_spot_prices(
    text: str, region_of: Callable[[str], str], now: pd.Timestamp
) -> pd.DataFrame:
    """The price rows ``--spot-prices`` names (none for an empty value).

    Raises:
        FlagError: naming the entry that is not ``FLAVOR@ZONE=USD`` or whose price is zero.
    """
    rows = []
    for entry in filter(None, (e.strip() for e in text.split(","))):
        found = _ENTRY.match(entry)
        if found is None or float(found.group(3)) <= 0:
            raise FlagError(
                f"--spot-prices: {entry[:60]!r} is not FLAVOR@ZONE=USD with a positive price, "
                "e.g. p3.2xlarge.8@ap-southeast-1a=1.20"
            )
        flavor, zone, price = found.groups()
        rows.append(
            {
                "source": SOURCE,
                "provider": "huawei",
                "region": region_of(zone),
                "zone": zone,
                "instance_type": flavor,
                "market": "spot",
                "ts": now,
                "price": float(price),
            }
        )
    return pd.DataFrame(rows)

"""BSS list prices through the real SDK against the fake: one on-demand row per flavor, in USD an
hour; another currency is refused in one line, never stored as dollars."""

from __future__ import annotations

import pandas as pd
import pytest

from spotwise.executor.clouds.huawei.fake.api import HuaweiApi
from spotwise.executor.clouds.huawei.fake.bss import PriceCatalog
from spotwise.executor.clouds.huawei.fake.ecs import EcsProject
from spotwise.pricing.clouds.huawei.list_prices import list_prices
from spotwise.pricing.errors import PricingError
from tests.executor.clouds.huawei.conftest import bss_client

PROJECT = "0123456789abcdef0123456789abcdef"
NOW = pd.Timestamp("2026-12-07 18:00", tz="UTC")
PRICES = {
    ("ap-southeast-1", "p3.2xlarge.8.linux"): 3.9,
    ("ap-southeast-1", "pi2.2xlarge.4.linux"): 0.7,
}


def test_each_flavor_gets_its_hourly_on_demand_row() -> None:
    api = HuaweiApi(EcsProject(PROJECT, {}), PriceCatalog(PRICES))
    try:
        rows = list_prices(
            bss_client(api), PROJECT, "ap-southeast-1", ["p3.2xlarge.8", "pi2.2xlarge.4"], NOW
        )
    finally:
        api.close()
    assert rows[["instance_type", "market", "price", "source"]].values.tolist() == [
        ["p3.2xlarge.8", "on_demand", 3.9, "huawei-bss-list"],
        ["pi2.2xlarge.4", "on_demand", 0.7, "huawei-bss-list"],
    ]
    assert (rows["ts"] == NOW).all() and (rows["zone"] == "").all()


def test_a_price_in_another_currency_is_refused() -> None:
    api = HuaweiApi(EcsProject(PROJECT, {}), PriceCatalog(PRICES, currency="CNY"))
    try:
        with pytest.raises(PricingError, match="in CNY, not USD"):
            list_prices(bss_client(api), PROJECT, "ap-southeast-1", ["p3.2xlarge.8"], NOW)
    finally:
        api.close()

"""Huawei Cloud's on-demand list prices through BSS (``ListOnDemandResourceRatings``: the
official-website amount of one hour of a Linux flavor in a region), as price rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from spotwise.pricing.errors import PricingError

SOURCE = "huawei-bss-list"
VM_SERVICE = "hws.service.type.ec2"
VM_RESOURCE = "hws.resource.type.vm"
HOUR = 4
"""BSS's measure id of an hour."""
UNIT = 1
"""BSS's measure id of the currency's whole unit (1: dollars; 2: dimes; 3: cents)."""


def list_prices(
    client: Any, project_id: str, region: str, flavors: Sequence[str], now: pd.Timestamp
) -> pd.DataFrame:
    """One on-demand price row (USD an hour) per flavor of ``region``, as of ``now``.

    Raises:
        PricingError: BSS refusing or answering in another currency or unit (the store keeps
            USD an hour).
    """
    from huaweicloudsdkbss import v2
    from huaweicloudsdkcore.exceptions.exceptions import SdkException

    products = [
        v2.DemandProductInfo(
            id=str(n),
            cloud_service_type=VM_SERVICE,
            resource_type=VM_RESOURCE,
            resource_spec=f"{flavor}.linux",
            region=region,
            usage_factor="Duration",
            usage_value=1,
            usage_measure_id=HOUR,
            subscription_num=1,
        )
        for n, flavor in enumerate(flavors)
    ]
    request = v2.ListOnDemandResourceRatingsRequest(
        body=v2.RateOnDemandReq(project_id=project_id, inquiry_precision=1, product_infos=products)
    )
    try:
        rated = client.list_on_demand_resource_ratings(request)
    except SdkException as refused:
        raise PricingError(
            f"collect huawei: BSS refused the price inquiry in {region}: "
            f"{getattr(refused, 'error_msg', refused)} (the account needs BSS read access: "
            "docs/huawei.md)"
        ) from None
    if rated.currency != "USD":
        raise PricingError(
            f"collect huawei: BSS priced {region} in {rated.currency}, not USD (use an "
            "international-site account, or a BSS endpoint that prices in USD)"
        )
    rows = []
    for result in rated.product_rating_results or ():
        if result.measure_id not in (None, UNIT):
            raise PricingError(f"collect huawei: BSS amount in measure {result.measure_id}")
        rows.append(
            {
                "source": SOURCE,
                "provider": "huawei",
                "region": region,
                "zone": "",
                "instance_type": flavors[int(result.id)],
                "market": "on_demand",
                "ts": now,
                "price": float(result.official_website_amount),
            }
        )
    return pd.DataFrame(rows)

"""Whether spot sells, per zone and flavor: ECS's ``flavor-sell-policies`` (``available`` or
``sellout``), as availability rows (1 of 1 node, or 0 of 1): a signal of capacity, not a price.
The risk forecasters read only 1-node traces (``cbl-*-1node``), never these rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from spotwise.pricing.errors import PricingError

SOURCE = "huawei-sell-policies"
PAGE = 100


def spot_sell_status(client: Any, flavors: Sequence[str], now: pd.Timestamp) -> pd.DataFrame:
    """One availability row per (zone, flavor) of ``flavors`` the region sells spot, as of
    ``now``.

    Raises:
        PricingError: ECS refusing, naming what it said.
    """
    from huaweicloudsdkcore.exceptions.exceptions import SdkException
    from huaweicloudsdkecs import v2

    rows = []
    for flavor in flavors:
        marker = None
        while True:
            request = v2.ListFlavorSellPoliciesRequest(
                flavor_id=flavor, sell_mode="spot", limit=PAGE, marker=marker
            )
            try:
                page = client.list_flavor_sell_policies(request)
            except SdkException as refused:
                raise PricingError(
                    f"collect huawei: ECS refused flavor-sell-policies of {flavor}: "
                    f"{getattr(refused, 'error_msg', refused)}"
                ) from None
            policies = page.sell_policies or []
            rows += [
                {
                    "source": SOURCE,
                    "provider": "huawei",
                    "zone": policy.availability_zone_id,
                    "instance_type": policy.flavor_id,
                    "ts": now,
                    "available_nodes": int(policy.sell_status == "available"),
                    "target_nodes": 1,
                }
                for policy in policies
            ]
            if len(policies) < PAGE:
                break
            marker = str(policies[-1].id)
    return pd.DataFrame(rows)

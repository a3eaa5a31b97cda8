"""A fake BSS price inquiry (``ListOnDemandResourceRatings``): the on-demand list price of each
flavor asked, from a catalog the fake is given, in the form of the SDK's response model."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from spotwise.executor.clouds.huawei.fake.ecs import error
from spotwise.executor.local_clouds.http import Answer

VM_SERVICE = "hws.service.type.ec2"
VM_RESOURCE = "hws.resource.type.vm"
HOUR = 4
"""BSS's measure id of an hour (``usage_measure_id``)."""
DOLLAR = 1
"""BSS's measure id of the currency's whole unit (``measure_id`` of an amount)."""


@dataclass(frozen=True, slots=True)
class PriceCatalog:
    """On-demand list prices by (region, ``FLAVOR.linux`` resource spec), in ``currency`` an
    hour."""

    prices: dict[tuple[str, str], float]
    currency: str = "USD"

    def rate(self, body: dict[str, Any]) -> Answer:
        results = []
        for product in body["product_infos"]:
            key = (product["region"], product["resource_spec"])
            if product["cloud_service_type"] != VM_SERVICE or key not in self.prices:
                return error(
                    400,
                    "CBC.0100",
                    f"product_infos id {product['id'][:40]!r}: no price for "
                    f"{product['resource_spec'][:60]!r} in {product['region'][:40]!r}",
                )
            if product.get("usage_measure_id") != HOUR:
                return error(400, "CBC.0100", "usage_measure_id: price by the hour (4)")
            hours = float(product.get("usage_value") or 1)
            amount = round(self.prices[key] * hours * (product.get("subscription_num") or 1), 6)
            results.append(
                {
                    "id": product["id"],
                    "product_id": f"OFFI{zlib.crc32('|'.join(key).encode()):012d}",
                    "amount": amount,
                    "discount_amount": 0,
                    "official_website_amount": amount,
                    "measure_id": DOLLAR,
                }
            )
        total = round(sum(r["amount"] for r in results), 6)
        return Answer(
            200,
            {
                "amount": total,
                "discount_amount": 0,
                "official_website_amount": total,
                "measure_id": DOLLAR,
                "currency": self.currency,
                "product_rating_results": results,
            },
        )

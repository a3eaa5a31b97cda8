"""The Compute Engine SKUs the Cloud Billing fake serves: each SKU in the form of the catalog's
documented example (https://cloud.google.com/billing/docs/how-to/get-pricing-information-api),
with its whole price timeline (the fake answers the versions a request's time range asks for).

Prices are for tests, not quotes. The on-demand A2/N1 core and RAM rates and the A100, T4 and
V100 GPU rates of us-central1 are Google's public list prices, and they add up to the bundled
change-point file's a2-highgpu-1g price (3.673385 USD/h), which a test checks; the other rates
are chosen so that a shape's sum lands near the bundled file's price for it (the file holds
whole-shape prices, not their parts). Every spot GPU rate moves once on 2025-02-15, so a
collection sees a change point. Besides the SKUs Spotwise prices, the catalog holds ones it must
never match: committed use, sole tenancy, DWS, custom machines and another series.
"""

from __future__ import annotations

import hashlib
from typing import Any

BASE = "2025-01-01T08:00:00Z"
SPOT_CHANGE = "2025-02-15T08:00:00Z"
REGIONS = {"us-central1": "Americas", "europe-west4": "Netherlands"}
EUROPE = 1.1
"""europe-west4 costs this much more than us-central1 in the fake."""

# (description after any "Spot Preemptible ", resource group, unit, on-demand, spot, regions)
PARTS: list[tuple[str, str, str, float, float, tuple[str, ...]]] = [
    ("A2 Instance Core", "CPU", "h", 0.031611, 0.012644, ("us-central1", "europe-west4")),
    ("A2 Instance Ram", "RAM", "GiBy.h", 0.004237, 0.001695, ("us-central1", "europe-west4")),
    ("Nvidia Tesla A100 GPU", "GPU", "h", 2.933908, 1.147152, ("us-central1", "europe-west4")),
    ("Nvidia A100 80GB GPU", "GPU", "h", 3.969175890, 1.608302, ("us-central1",)),
    ("A3 Instance Core", "CPU", "h", 0.0377, 0.0151, ("us-central1",)),
    ("A3 Instance Ram", "RAM", "GiBy.h", 0.00505, 0.00202, ("us-central1",)),
    ("Nvidia H100 80GB GPU", "GPU", "h", 8.89935, 2.3883, ("us-central1",)),
    ("G2 Instance Core", "CPU", "h", 0.02627, 0.010508, ("us-central1", "europe-west4")),
    ("G2 Instance Ram", "RAM", "GiBy.h", 0.002607, 0.0010428, ("us-central1", "europe-west4")),
    ("Nvidia L4 GPU", "GPU", "h", 0.56004, 0.2240, ("us-central1", "europe-west4")),
    ("N1 Predefined Instance Core", "N1Standard", "h", 0.031611, 0.00698, ("us-central1",)),
    ("N1 Predefined Instance Ram", "N1Standard", "GiBy.h", 0.004237, 0.00094, ("us-central1",)),
    ("Nvidia Tesla T4 GPU", "GPU", "h", 0.35, 0.14, ("us-central1",)),
    ("Nvidia Tesla V100 GPU", "GPU", "h", 2.48, 0.992, ("us-central1",)),
]
SPOT_GPU_AFTER_CHANGE = 0.9
"""Every spot GPU rate is multiplied by this from :data:`SPOT_CHANGE` on."""

# SKUs no shape may be priced from: (description, usage type, resource group, unit, price)
DECOYS: list[tuple[str, str, str, str, float]] = [
    ("Commitment v1: A2 Cpu in Americas for 1 Year", "Commit1Yr", "CPU", "h", 0.019915),
    ("Sole Tenancy Instance Core running in Americas", "OnDemand", "CPU", "h", 0.034772),
    ("DWS Defined Duration Nvidia H100 80GB GPU running in Americas", "OnDemand", "GPU", "h", 5.5),
    ("Custom Instance Core running in Americas", "OnDemand", "CPU", "h", 0.033174),
    ("E2 Instance Core running in Americas", "OnDemand", "CPU", "h", 0.021811),
]


def sku_id(description: str, usage: str, region: str) -> str:
    """A stable id in the catalog's form (``XXXX-XXXX-XXXX``)."""
    digest = hashlib.sha256(f"{description}|{usage}|{region}".encode()).hexdigest().upper()
    return f"{digest[:4]}-{digest[4:8]}-{digest[8:12]}"


def _money(usd: float) -> dict[str, Any]:
    units = int(usd)
    return {"currencyCode": "USD", "units": str(units), "nanos": round((usd - units) * 1e9)}


def _sku(
    description: str, usage: str, group: str, unit: str, region: str, timeline: list[tuple]
) -> dict[str, Any]:
    ident = sku_id(description, usage, region)
    return {
        "name": f"services/6F81-5844-456A/skus/{ident}",
        "skuId": ident,
        "description": description,
        "category": {
            "serviceDisplayName": "Compute Engine",
            "resourceFamily": "Compute",
            "resourceGroup": group,
            "usageType": usage,
        },
        "serviceRegions": [region],
        "serviceProviderName": "Google",
        "geoTaxonomy": {"type": "REGIONAL", "regions": [region]},
        # the whole timeline; the fake answers the part a request's range asks for
        "timeline": [(when, _expression(unit, usd)) for when, usd in timeline],
    }


def _expression(unit: str, usd: float) -> dict[str, Any]:
    per = {
        "h": ("hour", "s", "second", 3600),
        "GiBy.h": ("gibibyte hour", "By.s", "byte-seconds", 3865470566400),
    }
    described, base, base_described, factor = per[unit]
    return {
        "usageUnit": unit,
        "displayQuantity": 1,
        "tieredRates": [{"startUsageAmount": 0, "unitPrice": _money(usd)}],
        "usageUnitDescription": described,
        "baseUnit": base,
        "baseUnitDescription": base_described,
        "baseUnitConversionFactor": factor,
    }


def compute_engine_skus() -> list[dict[str, Any]]:
    """Every SKU the fake serves, each with its ``timeline`` of (effective time, expression)."""
    skus = []
    for region, place in REGIONS.items():
        scale = EUROPE if region == "europe-west4" else 1.0
        for name, group, unit, on_demand, spot, regions in PARTS:
            if region not in regions:
                continue
            description = f"{name} running in {place}"
            skus.append(
                _sku(description, "OnDemand", group, unit, region, [(BASE, on_demand * scale)])
            )
            spot_timeline = [(BASE, spot * scale)]
            if group == "GPU":
                spot_timeline.append((SPOT_CHANGE, spot * scale * SPOT_GPU_AFTER_CHANGE))
            skus.append(
                _sku(
                    f"Spot Preemptible {description}",
                    "Preemptible",
                    group,
                    unit,
                    region,
                    spot_timeline,
                )
            )
    for description, usage, group, unit, usd in DECOYS:
        skus.append(_sku(description, usage, group, unit, "us-central1", [(BASE, usd)]))
    return skus

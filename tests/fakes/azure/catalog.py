"""What the Azure fakes serve: Retail Prices items in the documented form
(https://learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices, "API
response example") and SpotResources rows in the form of the documented queries
(https://learn.microsoft.com/azure/virtual-machines/spot-vms, "Azure Resource Graph").

Prices are for tests, not quotes: on-demand rates near Azure's list prices of these sizes in
eastus, spot at a fifth of them, westeurope 10 % dearer. Each size has the meters a real region
lists besides its Linux ones (Windows, Low Priority, DevTest, a 1-year reservation), so that a
collector must pick; and other sizes fill pages.
"""

from __future__ import annotations

import hashlib
from typing import Any

ON_DEMAND_FROM = "2023-05-01T00:00:00Z"
SPOT_FROM = "2025-11-01T00:00:00Z"
REGIONS = {"eastus": "US East", "westeurope": "EU West"}
WEST_EUROPE = 1.1
SPOT_SHARE = 0.2

# size: (product family as the Retail API names it, eastus on-demand USD/h, sold in westeurope)
SIZES: dict[str, tuple[str, float, bool]] = {
    "Standard_NC6s_v3": ("NCSv3 Series", 3.06, True),
    "Standard_NC12s_v3": ("NCSv3 Series", 6.12, True),
    "Standard_NC24s_v3": ("NCSv3 Series", 12.24, True),
    "Standard_NC24rs_v3": ("NCSv3 Series", 13.464, True),
    "Standard_ND40rs_v2": ("NDv2 Series", 22.032, False),
    "Standard_NC24ads_A100_v4": ("NCadsA100v4 Series", 3.673, True),
    "Standard_NC48ads_A100_v4": ("NCadsA100v4 Series", 7.346, True),
    "Standard_NC96ads_A100_v4": ("NCadsA100v4 Series", 14.692, True),
    "Standard_ND96asr_v4": ("NDasrA100v4 Series", 27.197, True),
    "Standard_ND96amsr_A100_v4": ("NDamsrA100v4 Series", 32.77, True),
    "Standard_ND96isr_H100_v5": ("NDSH100v5 Series", 98.32, False),
    "Standard_NC40ads_H100_v5": ("NCadsH100v5 Series", 6.98, False),
    "Standard_NC80adis_H100_v5": ("NCadsH100v5 Series", 13.96, False),
    "Standard_NC4as_T4_v3": ("NCasT4 v3 Series", 0.526, True),
    "Standard_NC8as_T4_v3": ("NCasT4 v3 Series", 0.752, True),
    "Standard_NC16as_T4_v3": ("NCasT4 v3 Series", 1.204, True),
    "Standard_NC64as_T4_v3": ("NCasT4 v3 Series", 4.352, True),
}
FILLER = {f"Standard_D{n}s_v5": ("Dsv5 Series", 0.048 * n, True) for n in (2, 4, 8, 16, 32, 48)}
EVICTION = {"Standard_NC6s_v3": "0-5", "Standard_NC24ads_A100_v4": "10-15"}
EVICTION |= {"Standard_NC4as_T4_v3": "5-10", "Standard_ND96isr_H100_v5": "20+"}


def _ident(*parts: str, length: int = 12) -> str:
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:length].upper()


def _meter_id(*parts: str) -> str:
    h = hashlib.sha256("|".join(parts).encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def retail_items() -> list[dict[str, Any]]:
    """Every Virtual Machines item the Retail Prices fake serves."""
    items = []
    for size, (family, usd, europe) in {**SIZES, **FILLER}.items():
        short = size.removeprefix("Standard_").replace("_", " ")
        for region, location in REGIONS.items():
            if region == "westeurope" and not europe:
                continue
            price = usd * (WEST_EUROPE if region == "westeurope" else 1)
            product = _ident(family, "linux")
            windows_product = _ident(family, "windows")
            linux, win = f"Virtual Machines {family}", f"Virtual Machines {family} Windows"
            spot = price * SPOT_SHARE
            meters = (
                (short, linux, product, "Consumption", price, ON_DEMAND_FROM),
                (f"{short} Spot", linux, product, "Consumption", spot, SPOT_FROM),
                (f"{short} Low Priority", linux, product, "Consumption", spot, ON_DEMAND_FROM),
                (short, win, windows_product, "Consumption", price * 1.4, ON_DEMAND_FROM),
                (f"{short} Spot", win, windows_product, "Consumption", price * 0.3, SPOT_FROM),
                (short, win, windows_product, "DevTestConsumption", price, ON_DEMAND_FROM),
            )
            for name, product_name, product_id, kind, rate, start in meters:
                sku_part = _ident(size, name, length=4)
                items.append(
                    {
                        "currencyCode": "USD",
                        "tierMinimumUnits": 0.0,
                        "retailPrice": round(rate, 6),
                        "unitPrice": round(rate, 6),
                        "armRegionName": region,
                        "location": location,
                        "effectiveStartDate": start,
                        "meterId": _meter_id(size, region, name, product_name, kind),
                        "meterName": name,
                        "productId": product_id,
                        "skuId": f"{product_id}/{sku_part}",
                        "availabilityId": None,
                        "productName": product_name,
                        "skuName": name,
                        "serviceName": "Virtual Machines",
                        "serviceId": "DZH313Z7MMC8",
                        "serviceFamily": "Compute",
                        "unitOfMeasure": "1 Hour",
                        "type": kind,
                        "isPrimaryMeterRegion": True,
                        "armSkuName": size,
                    }
                )
            items.append(
                {
                    "currencyCode": "USD",
                    "tierMinimumUnits": 0.0,
                    "retailPrice": round(price * 8760 * 0.6, 2),
                    "unitPrice": round(price * 8760 * 0.6, 2),
                    "armRegionName": region,
                    "location": location,
                    "effectiveStartDate": ON_DEMAND_FROM,
                    "meterId": _meter_id(size, region, "reservation"),
                    "meterName": short,
                    "productId": product,
                    "skuId": f"{product}/{_ident(size, 'r', length=4)}",
                    "availabilityId": None,
                    "productName": f"Virtual Machines {family}",
                    "skuName": short,
                    "serviceName": "Virtual Machines",
                    "serviceId": "DZH313Z7MMC8",
                    "serviceFamily": "Compute",
                    "unitOfMeasure": "1 Hour",
                    "type": "Reservation",
                    "isPrimaryMeterRegion": True,
                    "armSkuName": size,
                    "reservationTerm": "1 Year",
                }
            )
    return items


def spot_resources() -> list[dict[str, Any]]:
    """SpotResources rows as Resource Graph holds them (``sku.name`` in lower case)."""
    rows: list[dict[str, Any]] = []
    for size, (_, usd, europe) in SIZES.items():
        for region in REGIONS:
            if region == "westeurope" and not europe:
                continue
            scale = WEST_EUROPE if region == "westeurope" else 1
            sku = {"name": size.lower()}
            rows.append(
                {
                    "id": f"microsoft.compute/skuspotevictionrate/location/{size.lower()}/{region}",
                    "type": "microsoft.compute/skuspotevictionrate/location",
                    "location": region,
                    "sku": sku,
                    "properties": {"evictionRate": EVICTION.get(size, "0-5")},
                }
            )
            spot = usd * scale * SPOT_SHARE
            rows.append(
                {
                    "id": f"microsoft.compute/skuspotpricehistory/ostype/location/{size.lower()}"
                    f"/linux/{region}",
                    "type": "microsoft.compute/skuspotpricehistory/ostype/location",
                    "location": region,
                    "sku": sku,
                    "properties": {
                        "osType": "Linux",
                        # newest first, as the documented query reads spotPrices[0] as the latest
                        "spotPrices": [
                            {"effectiveDate": f"2025-{m:02d}-01T00:00:00Z", "priceUSD": round(p, 6)}
                            for m, p in ((11, spot), (10, spot * 1.05), (9, spot * 0.97))
                        ],
                    },
                }
            )
    return rows

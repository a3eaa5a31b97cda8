"""On-demand prices from the AWS Price List API (``pricing:GetProducts``, paginated), as
``spotwise collect aws --on-demand`` stores them: one price per instance type and region for
Linux, shared tenancy, no pre-installed software and no license, the hourly on-demand term, as
``market = 'on_demand'`` rows of source :data:`SOURCE` whose time is the price list's
publication date (when AWS published that price)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from spotwise.pricing.errors import InputError, SourceUnavailable
from spotwise.pricing.frames import validate
from spotwise.pricing.store import MarketStore

SOURCE = "aws-price-list"
PRICING_REGION = "us-east-1"
"""Where the Price List API answers (it also does in ap-south-1 and eu-central-1)."""
PRICE_LIST_ATTEMPTS = 3
"""Attempts per Price List call at most: a failing endpoint is reported in seconds, not
retried for a minute."""
LINUX_SHARED = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
    "licenseModel": "No License required",
}
"""The product a Linux spot instance is priced against on demand."""


@dataclass
class PriceListReport:
    """What a collection found: the frame to store, and each product it could not use."""

    frame: pd.DataFrame
    pages: int = 0
    skipped: list[str] = field(default_factory=list)


def _hourly_usd(terms: dict[str, Any]) -> float | None:
    """The USD per hour of an on-demand term set (None if it has no hourly USD price)."""
    for offer in terms.get("OnDemand", {}).values():
        for dimension in offer.get("priceDimensions", {}).values():
            if dimension.get("unit") == "Hrs" and "USD" in dimension.get("pricePerUnit", {}):
                return float(dimension["pricePerUnit"]["USD"])
    return None


def parse_products(items: Iterable[str], report: PriceListReport) -> list[dict[str, Any]]:
    """Rows of the price list items (JSON strings as GetProducts returns them); an item that
    is not a Linux on-demand price is named in ``report.skipped``."""
    rows = []
    for item in items:
        try:
            product = json.loads(item)
            attributes = product["product"]["attributes"]
            instance_type, region = attributes["instanceType"], attributes["regionCode"]
            published = pd.Timestamp(product["publicationDate"]).tz_convert("UTC")
        except (ValueError, KeyError, TypeError) as exc:
            report.skipped.append(f"an unreadable price list item ({type(exc).__name__}: {exc})")
            continue
        wrong = {k: attributes.get(k) for k, v in LINUX_SHARED.items() if attributes.get(k) != v}
        price = _hourly_usd(product.get("terms", {}))
        if wrong or price is None or price <= 0:
            why = f"not {wrong}" if wrong else "no hourly USD on-demand price"
            report.skipped.append(f"{instance_type} in {region}: {why}")
            continue
        rows.append(
            {
                "source": SOURCE,
                "provider": "aws",
                "region": region,
                "zone": "",
                "instance_type": instance_type,
                "market": "on_demand",
                "ts": published,
                "price": price,
            }
        )
    return rows


def collect_on_demand(
    pricing: Any, regions: Sequence[str], instance_types: Sequence[str] = ()
) -> PriceListReport:
    """On-demand prices of ``instance_types`` (all when empty) in ``regions``, page by page.

    Raises:
        InputError: when one instance type and region has two different prices (the filters
            no longer pick one product: AWS changed its attributes).
    """
    report = PriceListReport(frame=pd.DataFrame())
    rows = []
    for region in regions:
        for instance_type in instance_types or [""]:
            filters = {**LINUX_SHARED, "regionCode": region}
            if instance_type:
                filters["instanceType"] = instance_type
            pages = pricing.get_paginator("get_products").paginate(
                ServiceCode="AmazonEC2",
                Filters=[
                    {"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in filters.items()
                ],
                FormatVersion="aws_v1",
            )
            for page in pages:
                report.pages += 1
                rows += parse_products(page.get("PriceList", []), report)
    frame = pd.DataFrame(rows, columns=list(_COLUMNS))
    key = ["region", "instance_type"]
    clash = frame.groupby(key)["price"].nunique()
    if (clash > 1).any():
        region, instance_type = clash[clash > 1].index[0]
        raise InputError(
            "the AWS Price List",
            f"{instance_type} in {region}",
            "more than one Linux on-demand price (its product attributes changed)",
            "nothing was stored; report it to Spotwise",
        )
    frame = frame.drop_duplicates([*key, "ts"]).reset_index(drop=True)
    report.frame = validate("prices", frame, origin="the AWS Price List") if rows else frame
    return report


def collect_on_demand_into(
    store_path: Path,
    regions: Sequence[str],
    instance_types: Sequence[str] = (),
    *,
    endpoint_url: str | None = None,
    max_attempts: int = 8,
) -> tuple[PriceListReport, int]:
    """:func:`collect_on_demand` with a boto3 Price List client (retrying throttled and failed
    calls, at most :data:`PRICE_LIST_ATTEMPTS` times), stored; the report and the new rows.

    Raises:
        SourceUnavailable: without credentials, or when the Price List answers with an error
            (one line: its status, and what to do).
        botocore.exceptions.BotoCoreError: when it cannot be reached.
    """
    from botocore.exceptions import ClientError

    from spotwise.pricing.clouds.aws.spot_prices import retrying_client

    attempts = min(max_attempts, PRICE_LIST_ATTEMPTS)
    pricing = retrying_client("pricing", PRICING_REGION, endpoint_url, attempts)
    try:
        report = collect_on_demand(pricing, regions, instance_types)
    except ClientError as exc:
        raise price_list_error(exc, endpoint_url or pricing.meta.endpoint_url, attempts) from None
    if not len(report.frame):
        return report, 0
    with MarketStore.open(store_path) as store:  # held only to write
        return report, store.upsert({"prices": report.frame}).get("prices", 0)


def price_list_error(exc: Any, endpoint: str, attempts: int) -> SourceUnavailable:
    """One line for an error answer of the Price List: its status and code, never its body
    (a failing endpoint answers with an HTML page), and what to do."""
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
    code = str(exc.response.get("Error", {}).get("Code") or "")
    named = f" ({code})" if code and not code.isdigit() else ""
    if status >= 500 or not status:
        todo = (
            f"AWS's side, tried {attempts} times; run `spotwise collect aws --on-demand` again "
            "in a few minutes (the stored on-demand prices stay as they were)"
        )
    elif status in (401, 403) or code in ("AccessDeniedException", "UnrecognizedClientException"):
        todo = "allow pricing:GetProducts for these credentials (docs/aws.md), then run again"
    else:
        todo = "check --endpoint-url and the credentials, then run again"
    return SourceUnavailable(
        f"the AWS Price List endpoint {endpoint} failed with status {status or '?'}{named}: {todo}"
    )


_COLUMNS = ("source", "provider", "region", "zone", "instance_type", "market", "ts", "price")

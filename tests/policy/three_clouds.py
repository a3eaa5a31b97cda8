"""A store holding all three clouds' prices of A100 shapes, collected with the real CLI from
the project's loopback fakes: EC2's spot price history and the AWS Price List (p4d.24xlarge),
Google's Cloud Billing Catalog (A2 shapes, us-central1) and Azure's Retail Prices API
(NC A100 v4, eastus). The AWS rows are made here (this machine cannot reach AWS); their
on-demand price is AWS's published p4d.24xlarge Linux rate."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from tests.fakes.azure_prices import RetailPricesFake
from tests.fakes.gcp_billing import CloudBillingFake
from tests.pricing.clouds.aws.test_price_list import PriceListServer, item
from tests.pricing.conftest import unused_url
from tests.pricing.ec2_endpoint import PriceHistoryEndpoint

Run = Callable[..., subprocess.CompletedProcess[str]]
P4D_ON_DEMAND = "21.9576000000"
"""p4d.24xlarge, us-east-1, Linux on demand ($/h), AWS's published rate."""


def p4d_spot_history(now: pd.Timestamp) -> pd.DataFrame:
    """Spot price change points of p4d.24xlarge in three us-east-1 zones over the last days,
    in the columns of ``describe-spot-price-history`` (test data, labelled as such here)."""
    rows = []
    for day, prices in enumerate([(8.91, 9.45, 10.12), (8.77, 9.60, 10.05)]):
        ts = (now - pd.Timedelta(days=2 - day)).strftime("%Y-%m-%dT%H:%M:%S+00:00")
        for zone, price in zip(("us-east-1a", "us-east-1b", "us-east-1c"), prices, strict=True):
            rows.append(
                {
                    "timestamp": ts,
                    "availability_zone": zone,
                    "instance_type": "p4d.24xlarge",
                    "product_description": "Linux/UNIX",
                    "spot_price": f"{price:.4f}",
                }
            )
    return pd.DataFrame(rows)


def collect_three_clouds(cli: Run, home: Path) -> list[subprocess.CompletedProcess[str]]:
    """Run ``collect aws`` (spot, then --on-demand), ``collect gcp`` and ``collect azure``
    against the fakes into the store ``cli`` uses; every run's result, in that order."""
    now = pd.Timestamp.now(tz="UTC").floor("s")
    ran = []
    ec2 = PriceHistoryEndpoint(p4d_spot_history(now), page_size=4)
    try:
        ran.append(
            cli(
                *("collect", "aws", "--region", "us-east-1", "--endpoint-url", ec2.url),
                *("--instance-types", "p4d.24xlarge", "--advisor-url", unused_url()),
                *("--since", (now - pd.Timedelta(days=5)).isoformat()),
            )
        )
    finally:
        ec2.close()
    price_list = PriceListServer([item("p4d.24xlarge", "us-east-1", P4D_ON_DEMAND)])
    try:
        ran.append(
            cli(
                *("collect", "aws", "--on-demand", "--region", "us-east-1"),
                *("--instance-types", "p4d.24xlarge", "--endpoint-url", price_list.url),
            )
        )
    finally:
        price_list.close()
    billing = CloudBillingFake(page_size=20)
    google = {
        "CLOUDSDK_CONFIG": str(home / "gcloud"),
        "NO_GCE_CHECK": "True",
        "HOME": str(home),
        "GOOGLE_APPLICATION_CREDENTIALS": str(billing.credentials_file(home)),
        "SPOTWISE_GCP_BILLING_ENDPOINT": billing.url,
    }
    try:
        ran.append(cli("collect", "gcp", "--gpu", "A100", "--regions", "us-central1", env=google))
    finally:
        billing.close()
    retail = RetailPricesFake(page_size=40)
    try:
        ran.append(
            cli(
                *("collect", "azure", "--regions", "eastus", "--gpu", "A100"),
                "--no-resource-graph",
                env={"SPOTWISE_AZURE_PRICES_URL": retail.url, "HOME": str(home)},
            )
        )
    finally:
        retail.close()
    return ran

"""`spotwise collect aws --on-demand` against a local Price List endpoint on 127.0.0.1 that
answers GetProducts as AWS does (JSON protocol, TERM_MATCH filters, NextToken pages). Its items
are made here in the API's aws_v1 format (this machine cannot reach AWS to record real ones);
the prices are AWS's published Linux on-demand rates for these types."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from spotwise.executor.ledger.prices import price_book
from spotwise.pricing.clouds.aws.price_list import LINUX_SHARED, SOURCE
from spotwise.pricing.store import MarketStore
from tests.conftest import CliRun

PUBLISHED = "2026-11-20T18:05:44Z"


def item(instance_type: str, region: str, usd: str, **attributes: str) -> dict[str, Any]:
    """One price list item in the aws_v1 format."""
    sku = f"SKU{abs(hash((instance_type, region, tuple(attributes.items())))) % 10**8:08d}"
    return {
        "product": {
            "productFamily": "Compute Instance",
            "attributes": {
                **LINUX_SHARED,
                "instanceType": instance_type,
                "regionCode": region,
                "servicecode": "AmazonEC2",
                **attributes,
            },
            "sku": sku,
        },
        "serviceCode": "AmazonEC2",
        "terms": {
            "OnDemand": {
                f"{sku}.JRTCKXETXF": {
                    "priceDimensions": {
                        f"{sku}.JRTCKXETXF.6YS6EN2CT7": {
                            "unit": "Hrs",
                            "endRange": "Inf",
                            "description": f"${usd} per On Demand Linux {instance_type} Hour",
                            "appliesTo": [],
                            "rateCode": f"{sku}.JRTCKXETXF.6YS6EN2CT7",
                            "beginRange": "0",
                            "pricePerUnit": {"USD": usd},
                        }
                    },
                    "sku": sku,
                    "effectiveDate": "2026-11-01T00:00:00Z",
                    "offerTermCode": "JRTCKXETXF",
                    "termAttributes": {},
                }
            }
        },
        "version": "20261120180544",
        "publicationDate": PUBLISHED,
    }


CATALOG = [
    item("p3.2xlarge", "us-east-1", "3.0600000000"),
    item("g5.xlarge", "us-east-1", "1.0060000000"),
    item("p3.2xlarge", "us-west-2", "3.0600000000"),
    item("g5.xlarge", "us-east-1", "1.8420000000", operatingSystem="Windows"),
    item("g5.xlarge", "us-east-1", "1.0060000000", capacitystatus="UnusedCapacityReservation"),
]


class PriceListServer:
    """GetProducts over the catalog, one item per page (so paging is exercised)."""

    def __init__(self, catalog: list[Any]) -> None:
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                assert self.headers["X-Amz-Target"] == "AWSPriceListService.GetProducts"
                wanted = {f["Field"]: f["Value"] for f in body.get("Filters", [])}
                matching = [
                    i
                    for i in catalog
                    if isinstance(i, str)
                    or all(i["product"]["attributes"].get(k) == v for k, v in wanted.items())
                ]
                start = int(body.get("NextToken") or 0)
                page: dict[str, Any] = {
                    "FormatVersion": "aws_v1",
                    "PriceList": [
                        i if isinstance(i, str) else json.dumps(i)
                        for i in matching[start : start + 1]
                    ],
                }
                if start + 1 < len(matching):
                    page["NextToken"] = str(start + 1)
                data = json.dumps(page).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-amz-json-1.1")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._http.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()


@pytest.fixture
def price_list() -> Iterator[PriceListServer]:
    server = PriceListServer(CATALOG)
    yield server
    server.close()


@pytest.mark.slow
def test_on_demand_prices_come_from_the_price_list_with_their_publication_date(
    price_list: PriceListServer, cli: CliRun, store_file: Path
) -> None:
    ran = cli(
        *("collect", "aws", "--on-demand", "--region", "us-east-1"),
        *("--instance-types", "p3.2xlarge,g5.xlarge", "--endpoint-url", price_list.url),
    )
    assert ran.returncode == 0, ran.stderr
    assert "2 rows (2 new), published 2026-11-20" in ran.stderr
    # Linux, shared tenancy, no license, used capacity: the filters went to AWS, page by page.
    sent = {f["Field"]: f["Value"] for f in price_list.requests[0]["Filters"]}
    assert sent == {**LINUX_SHARED, "regionCode": "us-east-1", "instanceType": "p3.2xlarge"}
    with MarketStore.open(store_file, read_only=True) as market:
        rows = market.query("SELECT * FROM prices WHERE market = 'on_demand' ORDER BY price")
        book = price_book(market, ["us-east-1a"], instance_type="g5.xlarge", spot_price=0.4)
    assert list(rows["instance_type"]) == ["g5.xlarge", "p3.2xlarge"]
    assert list(rows["price"]) == [1.006, 3.06] and set(rows["source"]) == {SOURCE}
    quote = book.on_demand_quote()
    assert (quote.usd_per_hour, quote.source) == (1.006, f"store: {SOURCE}, us-east-1")
    assert quote.as_of is not None and quote.as_of.startswith("2026-11-20T18:05:44")
    again = cli(
        *("collect", "aws", "--on-demand", "--region", "us-east-1"),
        *("--instance-types", "g5.xlarge", "--endpoint-url", price_list.url),
    )
    assert "1 rows (0 new)" in again.stderr


@pytest.mark.slow
def test_an_item_that_is_not_a_linux_hourly_price_is_named_not_stored(
    cli: CliRun, store_file: Path
) -> None:
    broken = item("p3.8xlarge", "us-east-1", "12.24")
    broken["terms"] = {}
    server = PriceListServer([broken, "{not json", item("p3.2xlarge", "us-east-1", "3.06")])
    try:
        ran = cli(
            *("collect", "aws", "--on-demand", "--region", "us-east-1"),
            *("--endpoint-url", server.url),
        )
    finally:
        server.close()
    assert ran.returncode == 0, ran.stderr
    assert [r.get("NextToken") for r in server.requests] == [None, "1", "2"]  # every page read
    assert "skipped p3.8xlarge in us-east-1: no hourly USD on-demand price" in ran.stderr
    assert "skipped an unreadable price list item" in ran.stderr
    assert "1 rows (1 new)" in ran.stderr


class FailingEndpoint:
    """A Price List endpoint that answers every call with a 500 and an HTML page."""

    def __init__(self) -> None:
        self.calls = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                server.calls += 1
                page = b"<html><body><h1>500 Internal Server Error</h1></body></html>"
                self.send_response(500)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._http.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()


@pytest.mark.slow  # a CLI subprocess and botocore's back-off
def test_a_failing_price_list_is_one_line_with_its_status_after_a_few_attempts(
    cli: CliRun,
) -> None:
    """It was retried eight times (42-63 s) and then printed the raw HTML page."""
    server = FailingEndpoint()
    try:
        ran = cli(
            *("collect", "aws", "--on-demand", "--region", "us-east-1"),
            *("--endpoint-url", server.url),
        )
    finally:
        server.close()
    assert ran.returncode == 1
    assert 1 <= server.calls <= 3
    assert ran.stderr.strip().splitlines() == [
        f"error: the AWS Price List endpoint {server.url} failed with status 500: AWS's side, "
        "tried 3 times; run `spotwise collect aws --on-demand` again in a few minutes (the "
        "stored on-demand prices stay as they were)"
    ]

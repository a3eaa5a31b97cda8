"""A small EC2 query endpoint on 127.0.0.1 that serves real spot price history in pages.

moto's server answers ``DescribeSpotPriceHistory`` with one placeholder price and no pages, so
this endpoint serves the bundled real history with ``NextToken`` pages, honours
``InstanceType.N``/``StartTime``/``EndTime``, and answers ``RequestLimitExceeded`` (HTTP 503)
to the first ``throttle`` requests, as EC2 does under load.
"""

from __future__ import annotations

import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from xml.sax.saxutils import escape

import pandas as pd

NS = "http://ec2.amazonaws.com/doc/2016-11-15/"


class PriceHistoryEndpoint:
    """Serve ``rows`` (columns as in the AWS price CSV) until :meth:`close`."""

    def __init__(self, rows: pd.DataFrame, *, page_size: int = 200, throttle: int = 0) -> None:
        self.rows = rows.assign(ts=pd.to_datetime(rows["timestamp"], utc=True))
        self.page_size = page_size
        self.throttle = throttle
        self.requests: list[dict[str, str]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"])).decode()
                params = {k: v[0] for k, v in urllib.parse.parse_qs(body).items()}
                status, xml = endpoint.answer(params)
                data = xml.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/xml")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def answer(self, params: dict[str, str]) -> tuple[int, str]:
        self.requests.append(params)
        if len(self.requests) <= self.throttle:
            return 503, (
                "<Response><Errors><Error><Code>RequestLimitExceeded</Code>"
                "<Message>Request limit exceeded.</Message></Error></Errors>"
                "<RequestID>throttled</RequestID></Response>"
            )
        if params.get("Action") != "DescribeSpotPriceHistory":
            return 400, (
                "<Response><Errors><Error><Code>InvalidAction</Code><Message>"
                f"{escape(params.get('Action', ''))} is not served here</Message>"
                "</Error></Errors><RequestID>x</RequestID></Response>"
            )
        rows = self.rows
        types = [v for k, v in params.items() if k.startswith("InstanceType.")]
        if types:
            rows = rows[rows["instance_type"].isin(types)]
        products = [v for k, v in params.items() if k.startswith("ProductDescription.")]
        if products:
            rows = rows[rows["product_description"].isin(products)]
        if "StartTime" in params:
            rows = rows[rows["ts"] >= pd.Timestamp(params["StartTime"])]
        if "EndTime" in params:
            rows = rows[rows["ts"] <= pd.Timestamp(params["EndTime"])]
        offset = int(params.get("NextToken", "0"))
        page = rows.iloc[offset : offset + self.page_size]
        items = "".join(
            f"<item><instanceType>{r.instance_type}</instanceType>"
            f"<productDescription>{escape(r.product_description)}</productDescription>"
            f"<spotPrice>{r.spot_price}</spotPrice>"
            f"<timestamp>{r.ts.strftime('%Y-%m-%dT%H:%M:%S.000Z')}</timestamp>"
            f"<availabilityZone>{r.availability_zone}</availabilityZone></item>"
            for r in page.itertuples()
        )
        more = offset + self.page_size < len(rows)
        token = f"<nextToken>{offset + self.page_size}</nextToken>" if more else ""
        return 200, (
            f'<DescribeSpotPriceHistoryResponse xmlns="{NS}"><requestId>r</requestId>'
            f"<spotPriceHistorySet>{items}</spotPriceHistorySet>{token}"
            "</DescribeSpotPriceHistoryResponse>"
        )

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

"""A loopback fake of Google's Cloud Billing Catalog API (``services.list``,
``services.skus.list``) for google-cloud-billing's REST transport.

Every request is checked against Google's discovery document for cloudbilling v1
(``tests/fakes/google/cloudbilling.v1.json``, see its SOURCE.md): the path and HTTP method must
name a method, each query parameter must be one the method or the API declares, with its type,
format and pattern; a request that breaks it is answered 400 ``INVALID_ARGUMENT`` and kept in
:attr:`CloudBillingFake.refused` (tests assert it stays empty). The time range follows the
method's own words: both ends or neither, none in the future, within one calendar month of
America/Los_Angeles; each SKU then carries the pricing versions effective in the range, the first
one dated at the range's start (``effectiveTime`` is "greater than or equal to the start_time");
without a range, the latest version dated within the last 12 hours. Pages are cut at the
requested ``pageSize`` or the fake's own limit, whichever is smaller, with an opaque
``nextPageToken`` bound to the request. Every answer is checked against the response schema.

Authentication is a service account's self-signed JWT, as google-auth makes one for Google
APIs: the fake makes the key, writes the key file (:meth:`credentials_file`) and checks each
bearer token's RS256 signature, key id, issuer, lifetime and scope. Errors are answered in
Google's error model (https://cloud.google.com/apis/design/errors): 401 ``UNAUTHENTICATED``,
403 ``PERMISSION_DENIED`` with an ``ErrorInfo`` of reason ``SERVICE_DISABLED`` when the API is
"not enabled" (:attr:`disabled`), 503 ``UNAVAILABLE`` for the next :attr:`fail_next` requests;
:attr:`damaged_next` answers replace the next SKU pages and :attr:`stall_next` pages come late.

Run as a command (``python -m tests.fakes.gcp_billing --key-file F``) it prints its endpoint
and serves until SIGTERM or Ctrl-C.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from spotwise.executor.local_clouds.http import Answer, LoopbackServer, Request
from tests.fakes.google import catalog, discovery

PROJECT_NUMBER = "734201956218"
CLIENT_EMAIL = f"spotwise-collector@fake-{PROJECT_NUMBER}.iam.gserviceaccount.com"
KEY_ID = "fake-key-1"
SCOPES = {
    "https://www.googleapis.com/auth/cloud-billing",
    "https://www.googleapis.com/auth/cloud-billing.readonly",
    "https://www.googleapis.com/auth/cloud-platform",
}
LOS_ANGELES = ZoneInfo("America/Los_Angeles")
STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED"}
STATUS |= {404: "NOT_FOUND", 500: "INTERNAL", 503: "UNAVAILABLE"}


class CloudBillingFake:
    """Serve the Compute Engine catalog of :mod:`tests.fakes.google.catalog` until
    :meth:`close`."""

    def __init__(
        self,
        *,
        skus: list[dict[str, Any]] | None = None,
        page_size: int = 5000,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        port: int = 0,
    ) -> None:
        from cryptography.hazmat.primitives.asymmetric import rsa

        self.doc = discovery.load()
        self.skus = catalog.compute_engine_skus() if skus is None else skus
        self.page_size = page_size
        self.now = now
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.requests: list[Request] = []
        self.refused: list[str] = []
        """Why each request the discovery document does not allow was refused."""
        self.disabled = False
        self.fail_next = 0
        self.damaged_next: list[Answer] = []
        """Answers given instead of the next ``skus.list`` pages (a broken or hostile API)."""
        self.stall_next = 0
        """``skus.list`` requests answered only after :attr:`stall_s` (a read timeout)."""
        self.stall_s = 0.0
        self._lock = threading.Lock()
        self._server = LoopbackServer(self.answer, port)
        self.url = self._server.url

    def close(self) -> None:
        self._server.close()

    def credentials_file(self, folder: Path) -> Path:
        """A service account key file whose key this fake trusts (0600)."""
        from cryptography.hazmat.primitives import serialization

        pem = self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        path = folder / "gcp-service-account.json"
        path.write_text(
            json.dumps(
                {
                    "type": "service_account",
                    "project_id": f"fake-{PROJECT_NUMBER}",
                    "private_key_id": KEY_ID,
                    "private_key": pem,
                    "client_email": CLIENT_EMAIL,
                    "client_id": "100000000000000000001",
                    "token_uri": f"{self.url}/token",
                }
            )
        )
        path.chmod(0o600)
        return path

    def sku_requests(self) -> list[dict[str, str]]:
        """The query of each ``skus.list`` request served, in order."""
        return [dict(r.query) for r in self.requests if r.path.endswith("/skus")]

    def answer(self, request: Request) -> Answer:
        with self._lock:
            self.requests.append(request)
            if self.fail_next > 0:
                self.fail_next -= 1
                return _error(503, "The service is currently unavailable.")
        try:
            call = discovery.check_request(self.doc, request.method, request.path, request.query)
            window = self._range(call.params)
        except discovery.Invalid as exc:
            self.refused.append(str(exc))
            return _error(400, str(exc))
        denied = self._authenticate(request)
        if denied is not None:
            return denied
        if self.disabled:
            return _service_disabled()
        if call.method_id == "cloudbilling.services.list":
            body: dict[str, Any] = {
                "services": [
                    {
                        "name": "services/6F81-5844-456A",
                        "serviceId": "6F81-5844-456A",
                        "displayName": "Compute Engine",
                        "businessEntityName": "businessEntities/GCP",
                    }
                ]
            }
            discovery.check_answer(self.doc, "ListServicesResponse", body)
            return Answer(200, body)
        with self._lock:
            damaged = self.damaged_next.pop(0) if self.damaged_next else None
            stall = self.stall_next > 0
            self.stall_next -= stall
        if stall:
            time.sleep(self.stall_s)
        return damaged or self._skus(call, *window)

    def _skus(self, call: discovery.Call, start: datetime | None, end: datetime | None) -> Answer:
        if call.params["parent"] != "services/6F81-5844-456A":
            return _error(404, f"Service {call.params['parent']} not found.")
        currency = call.params.get("currencyCode", "USD")
        if currency != "USD":
            return _error(400, "The fake serves USD prices only.")
        listing = [s for s in (self._priced(sku, start, end) for sku in self.skus) if s]
        binding = hashlib.sha256(
            json.dumps([call.params.get("startTime"), call.params.get("endTime")]).encode()
        ).hexdigest()[:16]
        offset = 0
        if call.params.get("pageToken"):
            try:
                got_binding, got_offset = (
                    base64.urlsafe_b64decode(call.params["pageToken"]).decode().split(":")
                )
                offset = int(got_offset)
            except ValueError:
                return _error(400, "Invalid page token.")
            if got_binding != binding:
                return _error(400, "The page token does not belong to this request.")
        size = min(int(call.params.get("pageSize") or 5000), self.page_size)
        page = listing[offset : offset + size]
        body = {"skus": page, "nextPageToken": ""}
        if offset + size < len(listing):
            token = f"{binding}:{offset + size}".encode()
            body["nextPageToken"] = base64.urlsafe_b64encode(token).decode()
        discovery.check_answer(self.doc, "ListSkusResponse", body)
        return Answer(200, body)

    def _range(self, params: dict[str, str]) -> tuple[datetime | None, datetime | None]:
        given = [k for k in ("startTime", "endTime") if k in params]
        if not given:
            return None, None
        if len(given) == 1:
            raise discovery.Invalid("a time range needs both startTime and endTime")
        start = discovery.parse_datetime("startTime", params["startTime"])
        end = discovery.parse_datetime("endTime", params["endTime"])
        if end > self.now():
            raise discovery.Invalid("Timestamps in the future are not allowed (endTime)")
        if not start < end:
            raise discovery.Invalid("startTime must be before endTime")
        first = start.astimezone(LOS_ANGELES)
        last = (end - timedelta(microseconds=1)).astimezone(LOS_ANGELES)
        if (first.year, first.month) != (last.year, last.month):
            raise discovery.Invalid(
                "The time range has to be within a single calendar month in "
                "America/Los_Angeles timezone"
            )
        return start, end

    def _priced(
        self, sku: dict[str, Any], start: datetime | None, end: datetime | None
    ) -> dict[str, Any] | None:
        timeline = [(discovery.parse_datetime("t", t), e) for t, e in sku["timeline"]]
        if start is None or end is None:
            now = self.now()
            current = [e for t, e in timeline if t <= now]
            if not current:
                return None
            versions = [(now - timedelta(hours=3), current[-1])]
        else:
            before = [e for t, e in timeline if t <= start]
            versions = [(start, before[-1])] if before else []
            versions += [(t, e) for t, e in timeline if start < t < end]
        if not versions:
            return None
        listed = {k: v for k, v in sku.items() if k != "timeline"}
        listed["pricingInfo"] = [
            {
                "summary": "",
                "pricingExpression": expression,
                "currencyConversionRate": 1,
                "effectiveTime": t.astimezone(UTC).isoformat(timespec="milliseconds")[:-6] + "Z",
            }
            for t, expression in versions
        ]
        return listed

    def _authenticate(self, request: Request) -> Answer | None:
        scheme, _, token = request.header("Authorization").partition(" ")
        if scheme.lower() != "bearer" or not token:
            return _error(401, "Request is missing required authentication credential.")
        try:
            claims = self._verify(token)
        except (ValueError, KeyError) as exc:
            return _error(401, f"Request had invalid authentication credentials ({exc}).")
        scopes = set(str(claims.get("scope", "")).split())
        if not scopes & SCOPES and claims.get("aud") != "https://cloudbilling.googleapis.com/":
            return _error(403, "Request had insufficient authentication scopes.")
        return None

    def _verify(self, token: str) -> dict[str, Any]:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        head, payload, signature = token.split(".")
        header = json.loads(_b64(head))
        if header.get("alg") != "RS256" or header.get("kid") != KEY_ID:
            raise ValueError("not signed by this service account's key")
        try:
            self.key.public_key().verify(
                _b64(signature), f"{head}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256()
            )
        except InvalidSignature:
            raise ValueError("bad signature") from None
        claims = json.loads(_b64(payload))
        now = time.time()
        if claims["iss"] != CLIENT_EMAIL or not claims["iat"] - 300 <= now < claims["exp"]:
            raise ValueError("wrong issuer or expired")
        return claims


def _b64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def _error(code: int, message: str) -> Answer:
    return Answer(code, {"error": {"code": code, "message": message, "status": STATUS[code]}})


def _service_disabled() -> Answer:
    """What Google answers when the API is not enabled in the caller's project."""
    message = (
        f"Cloud Billing API has not been used in project {PROJECT_NUMBER} before or it is "
        "disabled. Enable it by visiting https://console.developers.google.com/apis/api/"
        f"cloudbilling.googleapis.com/overview?project={PROJECT_NUMBER} then retry."
    )
    return Answer(
        403,
        {
            "error": {
                "code": 403,
                "message": message,
                "status": "PERMISSION_DENIED",
                "details": [
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": "SERVICE_DISABLED",
                        "domain": "googleapis.com",
                        "metadata": {
                            "service": "cloudbilling.googleapis.com",
                            "consumer": f"projects/{PROJECT_NUMBER}",
                        },
                    }
                ],
            }
        },
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key-file-folder", type=Path, required=True)
    parser.add_argument("--page-size", type=int, default=5000)
    parser.add_argument("--disabled", action="store_true")
    parser.add_argument("--fail", type=int, default=0, help="answer 503 to this many requests")
    args = parser.parse_args()
    fake = CloudBillingFake(page_size=args.page_size)
    fake.disabled, fake.fail_next = args.disabled, args.fail
    key_file = fake.credentials_file(args.key_file_folder)
    print(f"endpoint {fake.url}\nkey file {key_file}", flush=True)
    fake._server.wait_for_signal()


if __name__ == "__main__":
    main()

"""Huawei Cloud's AK/SK request signature (``SDK-HMAC-SHA256``), checked as the API gateway checks
it: the canonical request rebuilt from what arrived (method, path with a trailing ``/``, sorted
query, the signed headers, the body's SHA-256), the string to sign with ``X-Sdk-Date``, and the
HMAC of the secret key (https://support.huaweicloud.com/devg-apisign/api-sign-algorithm.html)."""

from __future__ import annotations

import hashlib
import hmac
import re
from urllib.parse import quote, unquote

from spotwise.executor.local_clouds.http import Request

ALGORITHM = "SDK-HMAC-SHA256"
_AUTHORIZATION = re.compile(
    rf"^{ALGORITHM} Access=([^,]+), SignedHeaders=([^,]+), Signature=([0-9a-f]+)$"
)


def _encode(text: str) -> str:
    return quote(text, safe="~")


def _signed_value(request: Request, name: str) -> str:
    """A signed header's value as the client sent it: behind a proxy, the host it asked is the
    proxy's ``X-Forwarded-Host``."""
    if name == "host" and request.header("X-Forwarded-Host"):
        return request.header("X-Forwarded-Host").strip()
    return request.header(name).strip()


def canonical_request(request: Request, signed: list[str]) -> str:
    """The canonical request of the signature algorithm, from the request as received."""
    path = "/".join(_encode(part) for part in unquote(request.path).split("/"))
    path = path if path.endswith("/") else path + "/"
    query = "&".join(f"{_encode(k)}={_encode(v)}" for k, v in sorted(request.query))
    headers = "".join(f"{name}:{_signed_value(request, name)}\n" for name in signed)
    payload = request.header("X-Sdk-Content-Sha256") or hashlib.sha256(request.body).hexdigest()
    return "\n".join((request.method, path, query, headers, ";".join(signed), payload))


def problem(request: Request, keys: dict[str, str]) -> str | None:
    """Why ``request`` is not signed by one of ``keys`` (access key: secret key); None when it
    is."""
    found = _AUTHORIZATION.match(request.header("Authorization"))
    if found is None:
        return f"no {ALGORITHM} Authorization header (sign the request with an AK/SK)"
    access, signed_headers, signature = found.groups()
    secret = keys.get(access)
    if secret is None:
        return f"the access key {access[:24]!r} is unknown"
    signed = signed_headers.split(";")
    if "x-sdk-date" not in signed or "host" not in signed:
        return "X-Sdk-Date and Host must be signed"
    digest = hashlib.sha256(canonical_request(request, signed).encode()).hexdigest()
    to_sign = f"{ALGORITHM}\n{request.header('X-Sdk-Date')}\n{digest}"
    expected = hmac.new(secret.encode(), to_sign.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, signature):
        return "the signature does not match the request (wrong secret key, or changed on the way)"
    return None

"""Loopback fakes of Azure's Retail Prices API and of Resource Graph (with the App Service
managed identity endpoint that azure-identity gets its token from).

Retail Prices (:class:`RetailPricesFake`): every request is checked against the documented
query (https://learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices):
``GET /api/retail/prices`` with only the documented parameters (``api-version``, ``$filter``,
``currencyCode``, ``meterRegion``, and ``$skip`` of the next-page links), each once; a ``$filter``
of ``<field> eq '<value>'`` clauses joined by ``and`` over the documented filter fields; values
matched case-sensitively (as from 2023-01-01-preview). Pages hold :attr:`page_size` items, each
linked by ``NextPageLink`` (the request's own query plus ``$skip``, as the documented example),
the last with ``null``; every answer is checked against ``azure/retail_prices.schema.json``,
written from the documented fields.

Resource Graph (:class:`ResourceGraphFake`): ``POST
/providers/Microsoft.ResourceGraph/resources?api-version=2021-03-01`` with a body checked against
the request model of azure-mgmt-resourcegraph (``QueryRequest`` and the models it holds: their
``_attribute_map`` names every field the wire may carry and its type, ``_validation`` the
required ones; ``resultFormat`` one of ``ResultFormat``); the query must be one of the two
documented SpotResources queries (eviction rates, price history) with ``in~`` lists of sizes and
locations; answers are ``QueryResponse`` bodies, paged by ``$skipToken`` at ``$top`` or
:attr:`page_size` rows. A bearer token is needed: the fake issues it from its managed identity
endpoint (GET ``/msi/token?api-version=2019-08-01&resource=...`` with the ``X-IDENTITY-HEADER``
secret, https://learn.microsoft.com/azure/app-service/overview-managed-identity#rest-endpoint-
reference), which azure-identity's DefaultAzureCredential finds through ``IDENTITY_ENDPOINT``
and ``IDENTITY_HEADER`` (:meth:`ResourceGraphFake.identity_env`).

Refused requests answer 400 and are kept in ``refused`` (tests assert it stays empty).
``python -m tests.fakes.azure_prices`` runs both and prints what to set.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import secrets
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from spotwise.executor.local_clouds.http import Answer, LoopbackServer, Request
from tests.fakes.azure import catalog

SCHEMA = Path(__file__).parent / "azure" / "retail_prices.schema.json"
RETAIL_PATH = "/api/retail/prices"
RETAIL_PARAMS = {"api-version", "$filter", "currencyCode", "meterRegion", "$skip"}
RETAIL_API_VERSIONS = {"2023-01-01-preview", "2021-10-01-preview"}
FILTER_FIELDS = {
    "armregionname": "armRegionName",
    "location": "location",
    "meterid": "meterId",
    "metername": "meterName",
    "productid": "productId",
    "skuid": "skuId",
    "productname": "productName",
    "skuname": "skuName",
    "servicename": "serviceName",
    "serviceid": "serviceId",
    "servicefamily": "serviceFamily",
    "pricetype": "type",
    "armskuname": "armSkuName",
}
"""The documented filter fields (as the docs' table spells them, case-insensitive) and the
item field each filters ("priceType" filters "type")."""
GRAPH_PATH = "/providers/Microsoft.ResourceGraph/resources"
GRAPH_API_VERSION = "2021-03-01"
MSI_PATH = "/msi/token"
ARM_RESOURCE = "https://management.azure.com"


class Invalid(ValueError):
    """A request the documentation does not allow."""


class RetailPricesFake:
    """Serve :func:`catalog.retail_items` until :meth:`close`."""

    def __init__(self, *, page_size: int = 100, port: int = 0) -> None:
        import jsonschema

        self.items = catalog.retail_items()
        self.page_size = page_size
        self.fail_next = 0
        self.damaged_next: list[Answer] = []
        """Answers given instead of the next pages (a broken or hostile API)."""
        self.requests: list[Request] = []
        self.refused: list[str] = []
        self._schema = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
        self._lock = threading.Lock()
        self._server = LoopbackServer(self.answer, port)
        self.url = f"{self._server.url}{RETAIL_PATH}"

    def close(self) -> None:
        self._server.close()

    def answer(self, request: Request) -> Answer:
        with self._lock:
            self.requests.append(request)
            if self.fail_next > 0:
                self.fail_next -= 1
                return Answer(503, b"Service Unavailable", {"Content-Type": "text/plain"})
            if self.damaged_next:
                return self.damaged_next.pop(0)
        try:
            params = _retail_params(request)
            clauses = parse_filter(params.get("$filter", ""))
        except Invalid as exc:
            self.refused.append(str(exc))
            return Answer(400, {"Error": {"Code": "BadRequest", "Message": str(exc)}})
        chosen = [i for i in self.items if all(i.get(k) == v for k, v in clauses)]
        skip = int(params.get("$skip", "0"))
        page = chosen[skip : skip + self.page_size]
        next_link = None
        if skip + self.page_size < len(chosen):
            query = {k: v for k, v in params.items() if k != "$skip"}
            query["$skip"] = str(skip + self.page_size)
            next_link = f"{self._server.url}{RETAIL_PATH}?{urlencode(query)}"
        body = {
            "BillingCurrency": "USD",
            "CustomerEntityId": "Default",
            "CustomerEntityType": "Retail",
            "Items": page,
            "NextPageLink": next_link,
            "Count": len(page),
        }
        self._schema.validate(body)
        return Answer(200, body)


def _retail_params(request: Request) -> dict[str, str]:
    if request.method != "GET" or request.path != RETAIL_PATH:
        raise Invalid(f"{request.method} {request.path}: the API answers GET {RETAIL_PATH}")
    params: dict[str, str] = {}
    for key, value in request.query:
        if key not in RETAIL_PARAMS:
            raise Invalid(f"unknown query parameter {key!r}")
        if key in params:
            raise Invalid(f"query parameter {key!r} given twice")
        params[key] = value
    if params.get("api-version", "2023-01-01-preview") not in RETAIL_API_VERSIONS:
        raise Invalid(f"api-version {params['api-version']!r} is not a published version")
    if params.get("meterRegion", "'primary'") != "'primary'":
        raise Invalid("meterRegion takes 'primary' (quoted) only")
    if params.get("currencyCode", "'USD'") != "'USD'":
        raise Invalid("this fake serves currencyCode='USD' only")
    if not re.fullmatch(r"\d+", params.get("$skip", "0")):
        raise Invalid("$skip is not a count")
    return params


def parse_filter(text: str) -> list[tuple[str, str]]:
    """``field eq 'value' and ...`` as (item field, value) pairs.

    Raises:
        Invalid: any other syntax, or a field the documentation does not list.
    """
    if not text:
        return []
    clauses = []
    rest = text
    clause = re.compile(r"(\w+) eq '((?:[^']|'')*)'")
    while True:
        found = clause.match(rest)
        if found is None:
            raise Invalid(f"$filter: cannot read {rest[:60]!r} (field eq 'value' [and ...])")
        field = FILTER_FIELDS.get(found.group(1).lower())
        if field is None:
            raise Invalid(f"$filter: {found.group(1)!r} is not a documented filter field")
        clauses.append((field, found.group(2).replace("''", "'")))
        rest = rest[found.end() :]
        if not rest:
            return clauses
        if not rest.startswith(" and "):
            raise Invalid(f"$filter: expected ' and ' before {rest[:40]!r}")
        rest = rest[len(" and ") :]


class ResourceGraphFake:
    """Serve :func:`catalog.spot_resources` to the token its identity endpoint issued."""

    def __init__(self, *, page_size: int = 1000, port: int = 0) -> None:
        self.rows = catalog.spot_resources()
        self.page_size = page_size
        self.identity_secret = secrets.token_hex(16)
        self.token = ""
        self.forbidden = False
        self.fail_next = 0
        self.requests: list[Request] = []
        self.refused: list[str] = []
        self._lock = threading.Lock()
        self._server = LoopbackServer(self.answer, port)
        self.url = self._server.url

    def close(self) -> None:
        self._server.close()

    def identity_env(self) -> dict[str, str]:
        """What DefaultAzureCredential reads to ask this fake for a token (App Service)."""
        return {
            "IDENTITY_ENDPOINT": f"{self.url}{MSI_PATH}",
            "IDENTITY_HEADER": self.identity_secret,
        }

    def queries(self) -> list[dict[str, Any]]:
        """The body of each query request served."""
        return [r.json() for r in self.requests if r.path == GRAPH_PATH]

    def answer(self, request: Request) -> Answer:
        with self._lock:
            self.requests.append(request)
            if request.path == MSI_PATH:
                return self._identity(request)
            if self.fail_next > 0:
                self.fail_next -= 1
                return _arm_error(503, "ServiceUnavailable", "The service is unavailable.")
        try:
            if request.method != "POST" or request.path != GRAPH_PATH:
                raise Invalid(f"{request.method} {request.path}: not a Resource Graph call")
            if dict(request.query) != {"api-version": GRAPH_API_VERSION} or len(request.query) > 1:
                raise Invalid(f"query {request.query}: needs api-version={GRAPH_API_VERSION}")
            if request.header("Authorization") != f"Bearer {self.token}" or not self.token:
                return _arm_error(401, "AuthenticationFailed", "Authentication failed.")
            if self.forbidden:
                return _arm_error(
                    403,
                    "AuthorizationFailed",
                    "The client does not have authorization to perform action "
                    "'Microsoft.ResourceGraph/resources/read' over scope '/subscriptions' or the "
                    "scope is invalid.",
                )
            body = request.json()
            check_model("QueryRequest", body, "body")
            rows = select(self.rows, body["query"])
        except (Invalid, json.JSONDecodeError) as exc:
            self.refused.append(str(exc))
            return _arm_error(400, "BadRequest", str(exc))
        options = body.get("options") or {}
        if options.get("resultFormat", "objectArray") != "objectArray":
            return _arm_error(400, "BadRequest", "this fake answers objectArray results only")
        offset = int(base64.b64decode(options["$skipToken"])) if options.get("$skipToken") else 0
        size = min(options.get("$top") or self.page_size, self.page_size)
        page = rows[offset : offset + size]
        answer: dict[str, Any] = {
            "totalRecords": len(rows),
            "count": len(page),
            "resultTruncated": "false",
            "data": page,
            "facets": [],
        }
        if offset + size < len(rows):
            answer["$skipToken"] = base64.b64encode(str(offset + size).encode()).decode()
        check_model("QueryResponse", answer, "answer")
        return Answer(200, answer)

    def _identity(self, request: Request) -> Answer:
        params = dict(request.query)
        problems = []
        if request.method != "GET":
            problems.append("the identity endpoint answers GET")
        if params.get("api-version") != "2019-08-01":
            problems.append("api-version must be 2019-08-01")
        if params.get("resource", "").rstrip("/") != ARM_RESOURCE:
            problems.append(f"resource must be {ARM_RESOURCE}")
        if request.header("X-IDENTITY-HEADER") != self.identity_secret:
            problems.append("X-IDENTITY-HEADER is not the secret")
        if problems:
            self.refused.append("; ".join(problems))
            return Answer(400, {"error": "invalid_request", "error_description": problems[0]})
        self.token = secrets.token_urlsafe(24)
        return Answer(
            200,
            {
                "access_token": self.token,
                "expires_on": str(int(time.time()) + 3600),
                "resource": params["resource"],
                "token_type": "Bearer",
                "client_id": "00000000-0000-0000-0000-00000000cafe",
            },
        )


def _arm_error(status: int, code: str, message: str) -> Answer:
    return Answer(status, {"error": {"code": code, "message": message}})


def check_model(name: str, value: Any, where: str) -> None:
    """Whether ``value`` (wire JSON) fits the azure-mgmt-resourcegraph model ``name``.

    Raises:
        Invalid: naming the first field that does not.
    """
    from azure.mgmt.resourcegraph import models

    model = getattr(models, name)
    if not isinstance(value, dict):
        raise Invalid(f"{where} is not an object ({name})")
    fields = {spec["key"]: (attr, spec["type"]) for attr, spec in model._attribute_map.items()}
    for key, item in value.items():
        if key not in fields:
            raise Invalid(f"{where}.{key} is not a field of {name}")
        attr, kind = fields[key]
        _check_type(kind, item, f"{where}.{key}")
        if (name, attr) == ("QueryRequestOptions", "result_format") and item not in {
            f.value for f in models.ResultFormat
        }:
            raise Invalid(f"{where}.{key}={item!r} is not a ResultFormat")
    for attr, rule in getattr(model, "_validation", {}).items():
        key = model._attribute_map[attr]["key"]
        if rule.get("required") and key not in value:
            raise Invalid(f"{where} lacks {key!r}, which {name} requires")


def _check_type(kind: str, value: Any, where: str) -> None:
    if kind.startswith("[") and kind.endswith("]"):
        if not isinstance(value, list):
            raise Invalid(f"{where} is not a list")
        for i, item in enumerate(value):
            _check_type(kind[1:-1], item, f"{where}[{i}]")
    elif kind == "str":
        if not isinstance(value, str):
            raise Invalid(f"{where} is not a string")
    elif kind == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            raise Invalid(f"{where} is not an integer")
    elif kind == "bool":
        if not isinstance(value, bool):
            raise Invalid(f"{where} is not a boolean")
    elif kind == "object":
        return
    else:
        check_model(kind, value, where)


_IN = r"in~\s*\(((?:\s*'[^']*'\s*,?)+)\)"
QUERIES = {
    "eviction": re.compile(
        r"^SpotResources \| where type =~ 'microsoft\.compute/skuspotevictionrate/location' "
        rf"\| where sku\.name {_IN} \| where location {_IN} "
        r"\| project skuName = tostring\(sku\.name\), location, "
        r"spotEvictionRate = tostring\(properties\.evictionRate\)$"
    ),
    "history": re.compile(
        r"^SpotResources \| where type =~ 'microsoft\.compute/skuspotpricehistory/ostype/location' "
        rf"\| where sku\.name {_IN} \| where properties\.osType =~ 'linux' "
        rf"\| where location {_IN} "
        r"\| project skuName = tostring\(sku\.name\), osType = tostring\(properties\.osType\), "
        r"location, spotPrices = properties\.spotPrices$"
    ),
}
"""The documented SpotResources queries (learn.microsoft.com/azure/virtual-machines/spot-vms),
in the form the collector sends them."""


TYPES = {
    "eviction": "microsoft.compute/skuspotevictionrate/location",
    "history": "microsoft.compute/skuspotpricehistory/ostype/location",
}


def select(rows: list[dict[str, Any]], query: str) -> list[dict[str, Any]]:
    """The projected rows of one of :data:`QUERIES`.

    Raises:
        Invalid: any other query.
    """
    for kind, pattern in QUERIES.items():
        found = pattern.match(query)
        if found is None:
            continue
        sizes = {s.lower() for s in re.findall(r"'([^']*)'", found.group(1))}
        places = {p.lower() for p in re.findall(r"'([^']*)'", found.group(2))}
        wanted = TYPES[kind]
        out = []
        for row in rows:
            if row["type"] != wanted or row["sku"]["name"].lower() not in sizes:
                continue
            if row["location"].lower() not in places:
                continue
            if kind == "eviction":
                out.append(
                    {
                        "skuName": row["sku"]["name"],
                        "location": row["location"],
                        "spotEvictionRate": row["properties"]["evictionRate"],
                    }
                )
            elif row["properties"]["osType"].lower() == "linux":
                out.append(
                    {
                        "skuName": row["sku"]["name"],
                        "osType": row["properties"]["osType"],
                        "location": row["location"],
                        "spotPrices": row["properties"]["spotPrices"],
                    }
                )
        return out
    raise Invalid(f"not a SpotResources query this fake answers: {query[:120]!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--page-size", type=int, default=100)
    parser.add_argument("--forbidden", action="store_true", help="Resource Graph answers 403")
    args = parser.parse_args()
    retail = RetailPricesFake(page_size=args.page_size)
    graph = ResourceGraphFake()
    graph.forbidden = args.forbidden
    print(f"SPOTWISE_AZURE_PRICES_URL={retail.url}")
    print(f"SPOTWISE_AZURE_RESOURCE_GRAPH_URL={graph.url}")
    for key, value in graph.identity_env().items():
        print(f"{key}={value}")
    print("", flush=True)
    graph._server.wait_for_signal()
    retail.close()


if __name__ == "__main__":
    main()

"""Azure spot and on-demand prices per region and VM size (``spotwise collect azure``).

Two sources:

- the Azure Retail Prices API (public, no sign-in): ``GET {url}?api-version=2023-01-01-preview&
  meterRegion='primary'&$filter=serviceName eq 'Virtual Machines' and priceType eq 'Consumption'
  and armRegionName eq '<region>'``, paged by following ``NextPageLink`` (only while it stays on
  the same host). A Linux VM's hourly meter is its price: products without "Windows", unit
  "1 Hour", USD; a meter whose ``skuName`` ends in " Spot" is the spot price, one ending in
  " Low Priority" (Batch) is left out, the rest is on demand. Each row's time (``as_of``) is the
  meter's ``effectiveStartDate`` and its SKU (``price_skus``) the Retail API's ``skuId``; the API
  holds no history, so a collection adds a row only when a price took effect since the last one
  (the upsert makes a rerun change nothing).
- Azure Resource Graph's ``SpotResources`` table, where the identity may query it
  (azure-identity's DefaultAzureCredential, azure-mgmt-resourcegraph): each size's spot
  eviction-rate band in each region (``0-5`` .. ``20+`` % an hour, stored as bands 0..4 with
  the saving against this collection's on-demand price) and its Linux spot price history (about
  90 days of daily change points). Without the library, credentials or permission, one line
  says why and the retail prices are still stored.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pandas as pd

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.core.echo import echo
from spotwise.core.settings import CloudEndpoint
from spotwise.pricing.errors import InputError, SourceUnavailable
from spotwise.pricing.frames import ROW, SPECS, utc_now, validate
from spotwise.pricing.gpus import GpuShape
from spotwise.pricing.sources.skus import priced_frames
from spotwise.pricing.store import MarketStore

RETAIL_SOURCE = "azure-retail"
RETAIL_ENDPOINT = CloudEndpoint(
    "SPOTWISE_AZURE_PRICES_URL", "https://prices.azure.com/api/retail/prices"
)
"""Azure's public Retail Prices API."""
GRAPH_ENDPOINT = CloudEndpoint("SPOTWISE_AZURE_RESOURCE_GRAPH_URL", "https://management.azure.com")
"""Azure Resource Manager, where Resource Graph answers."""
GRAPH_SOURCE = "azure-resource-graph"
API_VERSION = "2023-01-01-preview"
EVICTION_BANDS = {"0-5": 0, "5-10": 1, "10-15": 2, "15-20": 3, "20+": 4}
"""Resource Graph's eviction-rate bands (% an hour) as the store's interruption bands (AWS's
Spot Advisor uses the same five steps)."""
EVICTION_TYPE = "microsoft.compute/skuspotevictionrate/location"
PRICE_HISTORY_TYPE = "microsoft.compute/skuspotpricehistory/ostype/location"
REGION = re.compile(r"^[a-z][a-z0-9]{1,39}$")
SIZE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{1,63}$")
MAX_PAGES = 10_000
"""More pages than any answer has: a collection that gets them stops."""
NO_AZURE_LIBRARIES = (
    "resource graph: skipped, it needs Azure's client libraries: pip install 'spotwise[azure]' "
    "(the retail prices were collected)"
)
NO_AZURE_CREDENTIALS = (
    "resource graph: skipped, no Azure credentials found: run `az login`, or set "
    "AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_CLIENT_SECRET (the retail prices were collected)"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class AzureReport:
    """What a collection read: frames to store, retail pages, Resource Graph pages, and one
    line per part skipped."""

    frames: dict[str, pd.DataFrame]
    retail_pages: int
    graph_pages: int
    messages: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class AzurePrice:
    """One Linux price of a size in a region, as an answer gave it (the ``prices`` frame checks
    it: :func:`retail_frames`, and :func:`~spotwise.pricing.frames.validate` for the history)."""

    source: str
    region: object
    """The region as the answer named it."""
    instance_type: str
    market: str
    ts: pd.Timestamp
    price: object
    """USD an hour as the answer gave it (the frame refuses one that is not a number)."""
    sku: str | None = None
    """The retail meter's SKU id (None: a price-history row, which names none)."""
    row: int
    """Its item's or row's position in the answer, for a refusal to name."""

    def to_dict(self) -> dict[str, Any]:
        """The frame row: the ``prices`` columns, the SKU of a retail price, the position."""
        row: dict[str, Any] = {
            "source": self.source,
            "provider": "azure",
            "region": self.region,
            "zone": "",
            "instance_type": self.instance_type,
            "market": self.market,
            "ts": self.ts,
            "price": self.price,
        }
        if self.sku is not None:
            row["sku"] = self.sku
        row[ROW] = self.row
        return row


@dataclass(frozen=True, slots=True, kw_only=True)
class AzureBand:
    """One size's eviction band in a region, with its spot saving against on-demand."""

    region: str
    instance_type: str
    observed: pd.Timestamp
    interruption_band: int
    savings_pct: float

    def to_dict(self) -> dict[str, Any]:
        """The ``bands`` frame row."""
        return {
            "source": GRAPH_SOURCE,
            "provider": "azure",
            "region": self.region,
            "instance_type": self.instance_type,
            "observed": self.observed,
            "interruption_band": self.interruption_band,
            "savings_pct": self.savings_pct,
        }


def check_names(regions: Sequence[str], shapes: Sequence[GpuShape]) -> None:
    """Refuse a region or size that could not be one (they are written into queries).

    Raises:
        InputError: naming the first one.
    """
    for region in regions:
        if not REGION.match(region):
            raise InputError(
                "--regions", echo(region), "not an Azure region name", "Give names like eastus"
            )
    for shape in shapes:
        if not SIZE.match(shape.shape):
            raise InputError(
                "the GPU table", echo(shape.shape), "not an Azure size", "Fix the table"
            )


def retail_filter(region: str) -> str:
    """The OData filter of one region's VM consumption prices (documented fields only)."""
    return (
        f"serviceName eq 'Virtual Machines' and priceType eq 'Consumption' and "
        f"armRegionName eq '{region}'"
    )


def fetch_retail(
    http: Any,
    url: str,
    region: str,
    *,
    max_attempts: int,
    sleep: Callable[[float], None] = time.sleep,
    on_page: Callable[[], None] | None = None,
) -> list[Mapping[str, Any]]:
    """Every item of one region, page by page (``NextPageLink`` until it is null): the API's
    JSON as it is (:func:`retail_rows` reads the prices from it).

    Raises:
        SourceUnavailable: an error answer (after ``max_attempts`` tries for 5xx and 429), an
            unreachable API, a body that is not the documented JSON, or a next page elsewhere.
    """
    params: dict[str, str] | None = {
        "api-version": API_VERSION,
        "meterRegion": "'primary'",
        "$filter": retail_filter(region),
    }
    page_url, items = url, []
    while page_url:
        response = _get_with_retries(http, page_url, params, url, max_attempts, sleep)
        page, next_link = _retail_page(response, url)
        items += page
        if on_page:
            on_page()
        if next_link:
            _require_same_host(next_link, url)
        page_url, params = next_link or "", None
    return items


def _get_with_retries(
    http: Any,
    page_url: str,
    params: dict[str, str] | None,
    url: str,
    max_attempts: int,
    sleep: Callable[[float], None],
) -> Any:
    """The answer to one page request; connection failures, 5xx and 429 back off and retry.

    Raises:
        SourceUnavailable: when the last of ``max_attempts`` tries still failed.
    """
    import httpx

    for attempt in range(1, max_attempts + 1):
        last = attempt == max_attempts
        try:
            response = http.get(page_url, params=params)
        except httpx.TransportError as exc:
            if last:
                raise SourceUnavailable(
                    f"collect azure: could not reach the Retail Prices API at {url} after "
                    f"{attempt} tries ({type(exc).__name__}); check SPOTWISE_AZURE_PRICES_URL "
                    "and the network"
                ) from None
        else:
            if response.status_code < 500 and response.status_code != 429:
                return response
            if last:
                raise SourceUnavailable(
                    f"collect azure: the Retail Prices API at {url} failed with "
                    f"{response.status_code} {attempt} times; run again in a few minutes "
                    "(the store is unchanged)"
                )
        sleep(min(0.2 * 2 ** (attempt - 1), 5.0))
    raise AssertionError("unreachable")


def _retail_page(response: Any, url: str) -> tuple[list[Mapping[str, Any]], str | None]:
    """The items of one page and the link to the next (None on the last).

    Raises:
        SourceUnavailable: an answer other than 200, or a body that is not the documented JSON.
    """
    if response.status_code != 200:
        raise SourceUnavailable(
            f"collect azure: the Retail Prices API at {url} answered {response.status_code} "
            f"({_error_text(response)}); check SPOTWISE_AZURE_PRICES_URL, then run again"
        )
    try:
        body = response.json()
        items, next_link = body["Items"], body.get("NextPageLink")
    except (ValueError, KeyError, TypeError, AttributeError):
        raise SourceUnavailable(
            f"collect azure: the Retail Prices API at {url} answered something other than "
            "its documented JSON (no Items); check SPOTWISE_AZURE_PRICES_URL"
        ) from None
    wrong = _wrongly_typed(items, next_link)
    if wrong:
        raise SourceUnavailable(
            f"collect azure: the Retail Prices API at {url} answered its JSON with {wrong}; "
            "check SPOTWISE_AZURE_PRICES_URL (nothing was stored)"
        )
    return items, next_link


def _wrongly_typed(items: object, next_link: object) -> str:
    """What of a page is not of its documented type ('' when all is): Items a list of
    objects, each ``armSkuName`` text, ``NextPageLink`` text or null (a broken API is an
    error, never a region that sells nothing)."""
    if not isinstance(items, list):
        return f"Items a {type(items).__name__}, not a list"
    if next_link is not None and not isinstance(next_link, str):
        return f"NextPageLink a {type(next_link).__name__}, not text"
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            return f"item {i} a {type(item).__name__}, not an object"
        if not isinstance(item.get("armSkuName"), str):
            return f"item {i}'s armSkuName {echo(item.get('armSkuName'))}, not text"
    return ""


def _require_same_host(next_link: str, url: str) -> None:
    """Fail when the next page lies on another scheme or host than ``url``.

    Raises:
        SourceUnavailable: naming the other host.
    """
    home, target = urlsplit(url), urlsplit(next_link)
    if (target.scheme, target.netloc.removesuffix(":443")) != (
        home.scheme,
        home.netloc.removesuffix(":443"),
    ):
        raise SourceUnavailable(
            f"collect azure: the Retail Prices API sent a next page on another host "
            f"({target.scheme}://{target.netloc}); nothing was stored"
        )


def _error_text(response: Any) -> str:
    try:
        error = response.json().get("Error") or response.json().get("error") or {}
        text = str(error.get("Message") or error.get("message") or "")
    except (ValueError, AttributeError):
        text = ""
    text = " ".join(text.split())[:160]
    return text or response.reason_phrase or "no message"


def retail_rows(
    items: Sequence[Mapping[str, Any]], shapes: Sequence[GpuShape], region: str
) -> list[AzurePrice]:
    """Price rows of the sizes in ``shapes`` from one region's items (rules in the module's
    docstring).

    Raises:
        InputError: an item of a size asked for that lacks a documented field or has a price
            that is not a number (nothing is stored).
    """
    by_name = {s.shape.lower(): s.shape for s in shapes}
    rows = []
    for i, item in enumerate(items):
        size = by_name.get(str(item.get("armSkuName", "")).lower())
        if size is None:
            continue
        try:
            if _linux_hourly(item, region):
                rows.append(_retail_row(item, i, size, region))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InputError(
                f"the Retail Prices API ({region})",
                f"item {i} ({size})",
                f"not a documented price item ({type(exc).__name__}: {exc})",
                "nothing was stored; report it to Spotwise",
            ) from None
    return rows


def _linux_hourly(item: Mapping[str, Any], region: str) -> bool:
    """Whether an item is a Linux VM's hourly USD consumption meter of ``region`` (not Batch's
    low priority, not a secondary meter region)."""
    return not (
        item["type"] != "Consumption"
        or item["unitOfMeasure"] != "1 Hour"
        or item["currencyCode"] != "USD"
        or "Windows" in item["productName"]
        or item["skuName"].endswith("Low Priority")
        or item["armRegionName"] != region
        or item.get("isPrimaryMeterRegion") is False
    )


def _retail_row(item: Mapping[str, Any], i: int, size: str, region: str) -> AzurePrice:
    """The price row of one meter (spot when its ``skuName`` ends in " Spot")."""
    return AzurePrice(
        source=RETAIL_SOURCE,
        region=region,
        instance_type=size,
        market="spot" if item["skuName"].endswith(" Spot") else "on_demand",
        ts=pd.Timestamp(item["effectiveStartDate"]),
        price=item["retailPrice"],
        sku=str(item["skuId"]),
        row=i,
    )


def retail_frames(rows: list[AzurePrice], now: pd.Timestamp) -> dict[str, pd.DataFrame]:
    """The retail rows as ``prices`` and ``price_skus``, checked (one price per size, region,
    market and start date).

    Raises:
        InputError: a bad price or time, or two prices of one meter from one date.
    """
    frame = pd.DataFrame(
        [r.to_dict() for r in rows], columns=[*SPECS["prices"].columns, "sku", ROW]
    )
    if frame.empty:
        return {"prices": frame.loc[:, list(SPECS["prices"].columns)]}
    frame["ts"] = pd.to_datetime(frame["ts"], utc=True)
    key = ["region", "instance_type", "market", "ts"]
    clash = frame.groupby(key)["price"].nunique()
    if (clash > 1).any():
        region, size, market, ts = clash[clash > 1].index[0]
        raise InputError(
            "the Retail Prices API",
            f"{size} in {region} ({market}, from {ts:%Y-%m-%d})",
            "two different Linux prices for one meter",
            "nothing was stored; report it to Spotwise",
        )
    return priced_frames(
        frame.drop_duplicates(key),
        origin="the Retail Prices API",
        where="item {}",
        names={"ts": "effectiveStartDate", "price": "retailPrice", "instance_type": "armSkuName"},
        now=now,
    )


def graph_client(base_url: str, max_attempts: int) -> Any:
    """A Resource Graph client at ``base_url`` with DefaultAzureCredential, retrying 5xx and
    429 (azure-core's policy) ``max_attempts`` times in all.

    Raises:
        SourceUnavailable: without the libraries (naming the extra).
    """
    try:
        from azure.identity import DefaultAzureCredential
        from azure.mgmt.resourcegraph import ResourceGraphClient
    except ImportError:
        raise SourceUnavailable(NO_AZURE_LIBRARIES) from None
    # DefaultAzureCredential logs every credential it tried as a warning; the one line this
    # module prints says what to do instead.
    logging.getLogger("azure.identity").setLevel(logging.CRITICAL)
    return ResourceGraphClient(
        DefaultAzureCredential(),
        base_url=base_url,
        retry_total=max_attempts - 1,
        retry_backoff_factor=0.2,
        retry_backoff_max=5,
    )


def spot_query(kind: str, regions: Sequence[str], shapes: Sequence[GpuShape]) -> str:
    """The KQL of the documented SpotResources queries, for names :func:`check_names` passed."""
    sizes = ", ".join(f"'{s.shape.lower()}'" for s in shapes)
    places = ", ".join(f"'{r}'" for r in regions)
    if kind == "eviction":
        return (
            f"SpotResources | where type =~ '{EVICTION_TYPE}' | where sku.name in~ ({sizes}) "
            f"| where location in~ ({places}) | project skuName = tostring(sku.name), location, "
            "spotEvictionRate = tostring(properties.evictionRate)"
        )
    return (
        f"SpotResources | where type =~ '{PRICE_HISTORY_TYPE}' | where sku.name in~ ({sizes}) "
        f"| where properties.osType =~ 'linux' | where location in~ ({places}) "
        "| project skuName = tostring(sku.name), osType = tostring(properties.osType), location, "
        "spotPrices = properties.spotPrices"
    )


def query_all(
    client: Any, query: str, subscriptions: Sequence[str], base_url: str
) -> tuple[int, list[Any]]:
    """Every row of a Resource Graph query, page by page (``$skipToken``), and the pages."""
    from azure.mgmt.resourcegraph.models import QueryRequest, QueryRequestOptions

    # azure-core sends a bearer token over https only; plain http is allowed by the settings
    # for a server on this machine alone (GRAPH_ENDPOINT, core.settings), so the same holds here.
    plain = urlsplit(base_url).scheme == "http"
    rows: list[Any] = []
    token: str | None = None
    pages = 0
    while True:
        options = QueryRequestOptions(result_format="objectArray", top=1000, skip_token=token)
        request = QueryRequest(query=query, subscriptions=list(subscriptions) or None)
        request.options = options
        response = client.resources(request, **({"enforce_https": False} if plain else {}))
        pages += 1
        if pages > MAX_PAGES:
            break
        rows += list(response.data or [])
        token = response.skip_token
        if not token:
            return pages, rows
    raise SourceUnavailable(f"resource graph: more than {MAX_PAGES} pages; nothing was stored")


def graph_error_line(exc: BaseException, base_url: str, attempts: int) -> str:
    """One line for a Resource Graph query that failed, and what to do."""
    from azure.core.exceptions import (
        ClientAuthenticationError,
        HttpResponseError,
        ServiceRequestError,
    )

    if isinstance(exc, ClientAuthenticationError) and exc.status_code is None:
        return NO_AZURE_CREDENTIALS
    if isinstance(exc, HttpResponseError) and exc.status_code in (401, 403):
        code = exc.error.code if exc.error is not None else exc.reason
        return (
            f"resource graph: skipped, this identity may not query it ({exc.status_code} "
            f"{code}): give it the Reader role on a subscription and name it with "
            "--subscriptions (the retail prices were collected)"
        )
    if isinstance(exc, HttpResponseError) and (exc.status_code or 0) >= 500:
        return (
            f"resource graph: skipped, {base_url} failed with {exc.status_code} after {attempts} "
            "tries; run again later (the retail prices were collected)"
        )
    if isinstance(exc, ServiceRequestError):
        return (
            f"resource graph: skipped, could not reach {base_url} ({type(exc).__name__}); check "
            "SPOTWISE_AZURE_RESOURCE_GRAPH_URL (the retail prices were collected)"
        )
    text = " ".join(str(getattr(exc, "message", exc)).split())[:160]
    return f"resource graph: skipped, the query failed ({text}) (the retail prices were collected)"


def band_rows(
    rows: Sequence[Any],
    shapes: Sequence[GpuShape],
    on_demand: pd.DataFrame,
    spot: pd.DataFrame,
    observed: pd.Timestamp,
) -> tuple[list[AzureBand], int]:
    """Band rows from eviction-rate rows, each with its saving against on-demand from this
    collection's retail prices; and how many had no retail price pair to compute one from.

    Raises:
        InputError: a row without the documented fields or with an unknown band.
    """
    names = {s.shape.lower(): s.shape for s in shapes}
    latest_od = _latest(on_demand)
    latest_spot = _latest(spot)
    out, unpaired = [], 0
    for i, row in enumerate(rows):
        try:
            size = names[str(row["skuName"]).lower()]
            region = str(row["location"])
            band = EVICTION_BANDS[row["spotEvictionRate"]]
        except (KeyError, TypeError) as exc:
            raise InputError(
                "Resource Graph SpotResources",
                f"eviction row {i}",
                f"not a documented eviction-rate row ({type(exc).__name__}: {exc})",
                "nothing was stored; report it to Spotwise",
            ) from None
        od, sp = latest_od.get((region, size)), latest_spot.get((region, size))
        if od is None or sp is None:
            unpaired += 1
            continue
        out.append(
            AzureBand(
                region=region,
                instance_type=size,
                observed=observed,
                interruption_band=band,
                savings_pct=round(100 * (1 - sp / od), 1),
            )
        )
    return out, unpaired


def _latest(frame: pd.DataFrame) -> dict[tuple[str, str], float]:
    if frame.empty:
        return {}
    newest = frame.sort_values("ts").groupby(["region", "instance_type"])["price"].last()
    return {(r, t): float(p) for (r, t), p in newest.items()}


def history_rows(rows: Sequence[Any], shapes: Sequence[GpuShape]) -> list[AzurePrice]:
    """Spot price rows (Linux) from price-history rows: one per ``effectiveDate``.

    Raises:
        InputError: a row without the documented fields.
    """
    names = {s.shape.lower(): s.shape for s in shapes}
    out = []
    for i, row in enumerate(rows):
        try:
            size = names[str(row["skuName"]).lower()]
            for point in row["spotPrices"]:
                out.append(
                    AzurePrice(
                        source=GRAPH_SOURCE,
                        region=row["location"],
                        instance_type=size,
                        market="spot",
                        ts=pd.Timestamp(point["effectiveDate"]),
                        price=point["priceUSD"],
                        row=i,
                    )
                )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(
                "Resource Graph SpotResources",
                f"price history row {i}",
                f"not a documented price-history row ({type(exc).__name__}: {exc})",
                "nothing was stored; report it to Spotwise",
            ) from None
    return out


def collect_azure(
    *,
    regions: Sequence[str],
    shapes: Sequence[GpuShape],
    prices_url: str,
    graph_url: str | None,
    subscriptions: Sequence[str] = (),
    now: pd.Timestamp,
    max_attempts: int = 5,
    on_page: Callable[[str], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> AzureReport:
    """Retail prices of ``shapes`` in ``regions``, then (``graph_url`` given) Resource Graph's
    eviction bands and spot price history where the identity may read them.

    Raises:
        SourceUnavailable: the Retail Prices API failed (one line; nothing to store).
        InputError: an answer that is not what the documentation describes.
    """
    import httpx

    check_names(regions, shapes)
    retail: list[AzurePrice] = []
    pages = 0

    def page_done(region: str) -> None:
        nonlocal pages
        pages += 1
        if on_page:
            on_page(f"{region}: {pages} retail pages")

    with httpx.Client(timeout=60, follow_redirects=False) as http:
        for region in regions:
            items = fetch_retail(
                http,
                prices_url,
                region,
                max_attempts=max_attempts,
                sleep=sleep,
                on_page=functools.partial(page_done, region),
            )
            retail += retail_rows(items, shapes, region)
    frames = retail_frames(retail, now)
    prices = frames["prices"]
    messages: list[str] = []
    sized = {s.shape for s in shapes}
    missing = sorted(sized - set(prices["instance_type"])) if len(prices) else sorted(sized)
    if missing:
        messages.append(
            f"retail prices: none for {', '.join(missing)} in "
            f"{echo(', '.join(regions), quote=False)} (not sold there)"
        )
    graph_pages = 0
    if graph_url is not None:
        graph_pages, extra, line = _from_graph(
            graph_url, regions, shapes, subscriptions, prices, now, max_attempts
        )
        if line:
            messages.append(line)
        for table, frame in extra.items():
            frames[table] = pd.concat([frames[table], frame]) if table in frames else frame
    return AzureReport(
        frames=frames, retail_pages=pages, graph_pages=graph_pages, messages=tuple(messages)
    )


def _from_graph(
    graph_url: str,
    regions: Sequence[str],
    shapes: Sequence[GpuShape],
    subscriptions: Sequence[str],
    prices: pd.DataFrame,
    now: pd.Timestamp,
    max_attempts: int,
) -> tuple[int, dict[str, pd.DataFrame], str]:
    """Bands and spot history from Resource Graph, or why not (a line; nothing raised)."""
    try:
        client = graph_client(graph_url, max_attempts)
    except SourceUnavailable as exc:
        return 0, {}, str(exc)
    from azure.core.exceptions import AzureError

    try:
        eviction_pages, evictions = query_all(
            client, spot_query("eviction", regions, shapes), subscriptions, graph_url
        )
        history_pages, history = query_all(
            client, spot_query("history", regions, shapes), subscriptions, graph_url
        )
    except AzureError as exc:
        return 0, {}, graph_error_line(exc, graph_url, max_attempts)
    bands, unpaired = band_rows(
        evictions,
        shapes,
        prices[prices["market"] == "on_demand"],
        prices[prices["market"] == "spot"],
        now.floor("D"),
    )
    out: dict[str, pd.DataFrame] = {}
    line = ""
    if bands:
        out["bands"] = validate(
            "bands",
            pd.DataFrame([b.to_dict() for b in bands]),
            origin="Resource Graph SpotResources",
            now=now,
        )
    if unpaired:
        line = (
            f"resource graph: {unpaired} eviction bands left out, their size has no retail spot "
            "and on-demand price in this collection"
        )
    spot = history_rows(history, shapes)
    if spot:
        frame = pd.DataFrame([r.to_dict() for r in spot])
        frame["ts"] = pd.to_datetime(frame["ts"], utc=True)
        out["prices"] = validate(
            "prices",
            frame,
            origin="Resource Graph SpotResources",
            where="price history row {}",
            names={"ts": "effectiveDate", "price": "priceUSD"},
            now=now,
        )
    return eviction_pages + history_pages, out, line


def collect_azure_into(
    store_path: Path,
    *,
    regions: Sequence[str],
    shapes: Sequence[GpuShape],
    prices_url: str,
    graph_url: str | None,
    subscriptions: Sequence[str] = (),
    max_attempts: int = 5,
    on_page: Callable[[str], None] | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> tuple[AzureReport, dict[str, int]]:
    """:func:`collect_azure`, stored in one transaction; the report and the new rows per
    table. The store is opened only to write.

    Raises:
        SourceUnavailable, InputError: one line; nothing was stored.
    """
    report = collect_azure(
        regions=regions,
        shapes=shapes,
        prices_url=prices_url,
        graph_url=graph_url,
        subscriptions=subscriptions,
        now=utc_now(clock),
        max_attempts=max_attempts,
        on_page=on_page,
    )
    frames = {t: f for t, f in report.frames.items() if len(f)}
    if not frames:
        return report, {}
    with MarketStore.open(store_path) as store:
        return report, store.upsert(frames)

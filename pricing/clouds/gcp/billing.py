"""GCP spot and on-demand prices of GPU machine shapes from the Cloud Billing Catalog API
(``spotwise collect gcp``), with Google's own client (google-cloud-billing over REST; google-auth
finds the credentials). The bundled change-point file
(:mod:`spotwise.pricing.clouds.gcp.price_changes`) stays the offline source.

How a shape's hourly price is built: Compute Engine bills a GPU machine by its parts, each a
SKU of the Compute Engine service (``services/6F81-5844-456A``) priced per region:

    price = vCPUs × core SKU (USD per vCPU-hour, unit ``h``)
          + memory GiB × RAM SKU (USD per GiB-hour, unit ``GiBy.h``)
          + GPUs × GPU SKU (USD per GPU-hour, unit ``h``)

with the vCPUs, memory and GPUs of the shape from the GPU equivalence table
(:mod:`spotwise.pricing.gpus`). The core and RAM SKUs are the machine series' own ("A2 Instance
Core running in Americas", "N1 Predefined Instance Ram running in ..."), the GPU SKU the
accelerator's ("Nvidia Tesla A100 GPU running in ..."); the on-demand price uses the SKUs of
usage type ``OnDemand``, the spot price those of usage type ``Preemptible`` (Spot VMs are billed
on them: their descriptions begin "Spot Preemptible"). Each SKU's rate is its first tier (start
usage 0): Compute Engine's hourly SKUs have one, and sustained-use discounts are applied on the
bill, not in the catalog. A price changes whenever one of its SKUs does; each row's time
(``as_of``) is the ``effectiveTime`` Google gives that version, and its ``price_skus`` row names
the SKU ids it was built from (core, RAM, GPU). Sole-tenant, committed-use, custom-machine and DWS
SKUs never match (the descriptions are matched from their start).

Incremental: the catalog answers the pricing versions of a time range inside one calendar month
of America/Los_Angeles, so a collection asks month by month from the newest price stored for the
shapes asked (``--since`` or the start of this month when none is), up to now.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pandas as pd

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.core.echo import echo
from spotwise.core.settings import CloudEndpoint
from spotwise.pricing.clouds.gcp.credentials import key_file_problem
from spotwise.pricing.errors import InputError, SourceUnavailable
from spotwise.pricing.frames import SPECS, utc_now
from spotwise.pricing.gpus import GpuShape
from spotwise.pricing.sources.skus import priced_frames
from spotwise.pricing.store import MarketStore

SOURCE = "gcp-billing"
CATALOG_ENDPOINT = CloudEndpoint(
    "SPOTWISE_GCP_BILLING_ENDPOINT", "https://cloudbilling.googleapis.com"
)
"""Google's Cloud Billing API, where the Catalog API's SKUs are read (its variable points
``collect gcp`` at a local server for tests)."""
COMPUTE_ENGINE = "services/6F81-5844-456A"
"""The Compute Engine service in the Cloud Billing Catalog."""
SCOPES = ("https://www.googleapis.com/auth/cloud-billing.readonly",)
MARKETS = {"OnDemand": "on_demand", "Preemptible": "spot"}
"""Usage types of the catalog and the market their SKUs price."""
CATALOG_MONTH_ZONE = ZoneInfo("America/Los_Angeles")
"""A catalog time range must lie within one calendar month of this zone."""
SERIES = {"a2": "A2", "a3": "A3", "g2": "G2", "n1": "N1 Predefined"}
"""How the core and RAM SKUs of a machine series begin (after any "Spot Preemptible")."""
GPU_SKUS = {
    "nvidia-tesla-a100": "Tesla A100",
    "nvidia-a100-80gb": "A100 80GB",
    "nvidia-h100-80gb": "H100 80GB",
    "nvidia-h100-mega-80gb": "H100 80GB Mega",
    "nvidia-l4": "L4",
    "nvidia-tesla-t4": "Tesla T4",
    "nvidia-tesla-v100": "Tesla V100",
}
"""How a GPU's SKU names it ("Nvidia <name> GPU running in <place>"), by accelerator type."""
UNITS = {"core": "h", "ram": "GiBy.h", "gpu": "h"}
READ_TIMEOUT_S = 60.0
"""Seconds one page of the catalog may take to come (then it is tried again)."""
MAX_PAGES = 10_000
"""More pages than the whole catalog has: a collection that gets them stops."""
_PREEMPTIBLE = r"^(?:Spot Preemptible |Preemptible )?"
NO_LIBRARIES = (
    "collect gcp needs Google's client libraries: pip install 'spotwise[gcp]', then run again"
)
NO_CREDENTIALS = (
    "collect gcp: no Google credentials found; run `gcloud auth application-default login`, "
    "or set GOOGLE_APPLICATION_CREDENTIALS to a service account key file, then run again"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class SkuVersion:
    """One pricing version of a SKU: from ``ts`` on, ``usd`` per usage unit."""

    ts: pd.Timestamp
    usd: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ComponentSku:
    """A SKU that prices one part (core, ram, gpu) of a machine series in some regions."""

    sku_id: str
    part: str
    key: str
    """The series (``A2``) for a core or RAM SKU, the accelerator type for a GPU SKU."""
    market: str
    regions: tuple[str, ...]
    versions: tuple[SkuVersion, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CatalogReport:
    """What a collection read: the frames to store (``prices`` and ``price_skus``), pages and
    month windows asked, and one line per shape it could not price."""

    frames: dict[str, pd.DataFrame]
    pages: int
    windows: int
    messages: tuple[str, ...] = ()


def catalog_windows(start: pd.Timestamp, end: pd.Timestamp) -> list[tuple[pd.Timestamp, ...]]:
    """``[start, end)`` cut at each calendar month of America/Los_Angeles (what one catalog
    request may span)."""
    windows = []
    while start < end:
        local = start.tz_convert(CATALOG_MONTH_ZONE)
        month = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0, nanosecond=0)
        next_month = (month + pd.DateOffset(months=1)).tz_convert("UTC")
        stop = min(next_month, end)
        windows.append((start, stop))
        start = stop
    return windows


def month_start(now: pd.Timestamp) -> pd.Timestamp:
    """The start of ``now``'s calendar month in America/Los_Angeles, in UTC."""
    local = now.tz_convert(CATALOG_MONTH_ZONE)
    return local.replace(day=1, hour=0, minute=0, second=0, microsecond=0, nanosecond=0).tz_convert(
        "UTC"
    )


def _matchers() -> list[tuple[re.Pattern[str], str, str]]:
    found = []
    for series in SERIES.values():
        for part, word in (("core", "Core"), ("ram", "Ram")):
            pattern = re.compile(rf"{_PREEMPTIBLE}{re.escape(series)} Instance {word} running in ")
            found.append((pattern, part, series))
    for accelerator, name in GPU_SKUS.items():
        pattern = re.compile(rf"{_PREEMPTIBLE}Nvidia {re.escape(name)} GPU running in ")
        found.append((pattern, "gpu", accelerator))
    return found


_MATCHERS = _matchers()


def component(sku: Any, where: str) -> ComponentSku | None:
    """The part a catalog SKU prices, or None for a SKU Spotwise does not use.

    Raises:
        InputError: for a SKU of a part whose unit or currency is not the one expected (the
            catalog changed how it prices that part; nothing is stored).
    """
    market = MARKETS.get(sku.category.usage_type)
    if market is None:
        return None
    description = sku.description
    hit = next(((p, k) for pattern, p, k in _MATCHERS if pattern.match(description)), None)
    if hit is None:
        return None
    part, key = hit
    versions = []
    for info in sku.pricing_info:
        expression = info.pricing_expression
        if expression.usage_unit != UNITS[part] or not expression.tiered_rates:
            raise InputError(
                where,
                f"SKU {sku.sku_id} ({description})",
                f"priced per {expression.usage_unit!r}, not per {UNITS[part]!r}",
                "Google changed how it prices this part; nothing was stored. Report it to Spotwise",
            )
        rate = expression.tiered_rates[0].unit_price
        if rate.currency_code != "USD":
            raise InputError(
                where,
                f"SKU {sku.sku_id}",
                f"priced in {rate.currency_code!r}",
                "Ask for USD prices (the default); nothing was stored",
            )
        stamp = pd.Timestamp(info.effective_time)
        stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
        versions.append(SkuVersion(ts=stamp, usd=rate.units + rate.nanos / 1e9))
    return ComponentSku(
        sku_id=sku.sku_id,
        part=part,
        key=key,
        market=market,
        regions=tuple(sku.service_regions),
        versions=tuple(sorted(versions, key=lambda v: v.ts)),
    )


def shape_rows(
    shapes: Sequence[GpuShape], components: Sequence[ComponentSku], regions: Sequence[str]
) -> tuple[list[dict[str, Any]], list[str]]:
    """Price rows of each shape in each region (all the SKUs offer when ``regions`` is empty)
    and market, one per change of any of its SKUs; and one line per shape left unpriced.

    Raises:
        InputError: when two SKUs price the same part in the same region and market.
    """
    index = _sku_index(components)
    rows: list[dict[str, Any]] = []
    messages = []
    for shape in shapes:
        parts = _shape_parts(shape)
        if parts is None:
            messages.append(f"{shape.shape}: no SKU rule for this machine series; not collected")
            continue
        new = _shape_rows(shape, parts, index, regions)
        if not new:
            messages.append(
                f"{shape.shape}: no complete set of SKUs (core, RAM, GPU) in "
                f"{echo(', '.join(regions), quote=False) or 'any region'}; not collected"
            )
        rows += new
    return rows, messages


_Slot = tuple[str, str, str, str]
"""(part, key, market, region): what one SKU prices."""


def _sku_index(components: Sequence[ComponentSku]) -> dict[_Slot, ComponentSku]:
    """The SKU of each part, key, market and region; two SKUs for one slot are an error."""
    index: dict[_Slot, ComponentSku] = {}
    for c in components:
        for region in c.regions:
            slot = (c.part, c.key, c.market, region)
            other = index.get(slot)
            if other is not None and other.sku_id != c.sku_id:
                raise InputError(
                    "the Cloud Billing Catalog",
                    f"{c.part} of {c.key} in {region} ({c.market})",
                    f"two SKUs price it ({other.sku_id} and {c.sku_id})",
                    "nothing was stored; report it to Spotwise",
                )
            index[slot] = c
    return index


def _shape_parts(shape: GpuShape) -> tuple[tuple[str, str, float], ...] | None:
    """(part, key, count) of the core, RAM and GPU SKUs that price ``shape``, or None for a
    machine series or accelerator without a SKU rule."""
    series = SERIES.get(shape.machine_type.split("-", 1)[0])
    if series is None or shape.accelerator not in GPU_SKUS:
        return None
    return (
        ("core", series, float(shape.vcpus)),
        ("ram", series, shape.memory_gb),
        ("gpu", shape.accelerator, float(shape.gpu_count)),
    )


def _shape_rows(
    shape: GpuShape,
    parts: Sequence[tuple[str, str, float]],
    index: dict[_Slot, ComponentSku],
    regions: Sequence[str],
) -> list[dict[str, Any]]:
    """The price rows of ``shape`` in every wanted region that sells its GPU and market where
    every part has a SKU."""
    rows: list[dict[str, Any]] = []
    for region in _regions_selling(index, shape.accelerator, regions):
        for market in MARKETS.values():
            found = [(index.get((p, k, market, region)), n) for p, k, n in parts]
            complete = [(c, n) for c, n in found if c is not None]
            if len(complete) == len(found):
                rows += _timeline(shape.shape, region, market, complete)
    return rows


def _regions_selling(
    index: dict[_Slot, ComponentSku], accelerator: str, regions: Sequence[str]
) -> list[str]:
    """The regions with a SKU for ``accelerator``, among ``regions`` when any are named."""
    offered = {r for (p, k, _, r) in index if p == "gpu" and k == accelerator}
    return sorted(offered & set(regions) if regions else offered)


def _timeline(
    shape: str, region: str, market: str, parts: Sequence[tuple[ComponentSku, float]]
) -> list[dict[str, Any]]:
    """One row per time any part's price changes, from when every part has a price."""
    if not parts or any(not c.versions for c, _ in parts):
        return []
    sku = ",".join(c.sku_id for c, _ in parts)
    return [
        {
            "source": SOURCE,
            "provider": "gcp",
            "region": region,
            "zone": "",
            "instance_type": shape,
            "market": market,
            "ts": ts,
            "price": round(sum(n * _rate_at(c, ts) for c, n in parts), 9),
            "sku": sku,
        }
        for ts in _change_times([c for c, _ in parts])
    ]


def _change_times(skus: Sequence[ComponentSku]) -> list[pd.Timestamp]:
    """Every time one of ``skus`` changes rate, from when the last of them got its first."""
    first = max(c.versions[0].ts for c in skus)
    return sorted({v.ts for c in skus for v in c.versions if v.ts >= first})


def _rate_at(sku: ComponentSku, ts: pd.Timestamp) -> float:
    """The SKU's rate in force at ``ts`` (its last version from ``ts`` or before)."""
    return [v.usd for v in sku.versions if v.ts <= ts][-1]


def collect_gcp(
    client: Any,
    *,
    shapes: Sequence[GpuShape],
    regions: Sequence[str] = (),
    resume_from: pd.Timestamp | None,
    since: pd.Timestamp | None,
    now: pd.Timestamp,
    max_attempts: int = 5,
    page_size: int | None = None,
    on_page: Callable[[int, int], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    timeout_s: float = READ_TIMEOUT_S,
) -> CatalogReport:
    """Page the Compute Engine SKUs month by month from ``resume_from`` (else ``since``, else
    the start of this month) to ``now`` and price ``shapes`` in ``regions`` (empty = all).

    Args:
        client: a ``google.cloud.billing_v1.CloudCatalogClient``.
        max_attempts: tries per page; 5xx, 429, connection failures and answers that do not
            come within ``timeout_s`` back off and retry.
        on_page: called with (pages so far, SKUs kept so far) after each page.
        timeout_s: seconds one page may take.

    Raises:
        SourceUnavailable: one line (:func:`error_line`) for what the last try met.
        InputError: a SKU Spotwise reads that it cannot use (nothing to store).
    """
    start, messages = _start_point(resume_from, since, now)
    windows = catalog_windows(start, now)
    pages = 0
    kept: list[ComponentSku] = []
    for page in _pages(client, windows, page_size, (max_attempts, timeout_s), sleep):
        pages += 1
        if pages > MAX_PAGES:
            raise SourceUnavailable(
                f"collect gcp: the catalog sent more than {MAX_PAGES} pages; nothing was stored"
            )
        where = f"the Cloud Billing Catalog, page {pages}"
        kept += [c for sku in page.skus if (c := component(sku, where)) is not None]
        if on_page:
            on_page(pages, len(kept))
    rows, unpriced = shape_rows(shapes, _merge(kept), regions)
    frame = pd.DataFrame(rows, columns=[*SPECS["prices"].columns, "sku"])
    frames = priced_frames(frame, origin="the Cloud Billing Catalog", now=now) if rows else {}
    return CatalogReport(
        frames=frames, pages=pages, windows=len(windows), messages=(*messages, *unpriced)
    )


def _start_point(
    resume_from: pd.Timestamp | None, since: pd.Timestamp | None, now: pd.Timestamp
) -> tuple[pd.Timestamp, list[str]]:
    """Where a collection starts (the stored resume point, else ``since``, else this month),
    and a line when the stored point lies in the future and is passed over."""
    if resume_from is not None and resume_from > now:
        line = (
            f"the newest stored {SOURCE} price ({resume_from:%Y-%m-%d}) lies in the future; "
            "collecting from --since or this month instead (remove that row)"
        )
        return since or month_start(now), [line]
    return resume_from or since or month_start(now), []


def _pages(
    client: Any,
    windows: Sequence[tuple[pd.Timestamp, ...]],
    page_size: int | None,
    tries: tuple[int, float],
    sleep: Callable[[float], None],
) -> Iterator[Any]:
    """Every page of Compute Engine SKUs of each month window, in order, each with ``tries``
    (attempts, seconds an attempt may take).

    Raises:
        SourceUnavailable: one line (:func:`error_line`) for what the last try of a page met.
    """
    for window_start, window_end in windows:
        token = ""
        while True:
            request = _list_request(window_start, window_end, token, page_size)
            call = functools.partial(client.list_skus, request=request, timeout=tries[1])
            try:
                page = _with_retries(call, tries[0], sleep)
            except _Failed as failed:
                line = error_line(failed.error, client.api_endpoint, failed.attempts)
                raise SourceUnavailable(line) from None
            yield page
            token = page.next_page_token
            if not token:
                break


def _list_request(start: pd.Timestamp, end: pd.Timestamp, token: str, page_size: int | None) -> Any:
    """The catalog request for one page of the Compute Engine SKUs priced in ``[start, end)``."""
    from google.cloud import billing_v1

    request = billing_v1.ListSkusRequest(
        parent=COMPUTE_ENGINE,
        start_time=start.to_pydatetime(),
        end_time=end.to_pydatetime(),
        page_token=token,
    )
    if page_size:
        request.page_size = page_size
    return request


def _merge(components: Sequence[ComponentSku]) -> list[ComponentSku]:
    """One component per SKU, its versions from every month window joined."""
    by_id: dict[tuple[str, str], ComponentSku] = {}
    for c in components:
        known = by_id.get((c.sku_id, c.market))
        if known is None:
            by_id[(c.sku_id, c.market)] = c
            continue
        versions = {v.ts: v for v in (*known.versions, *c.versions)}
        by_id[(c.sku_id, c.market)] = ComponentSku(
            sku_id=c.sku_id,
            part=c.part,
            key=c.key,
            market=c.market,
            regions=tuple(sorted({*known.regions, *c.regions})),
            versions=tuple(versions[t] for t in sorted(versions)),
        )
    return list(by_id.values())


def _retryable(exc: BaseException) -> bool:
    from google.api_core import exceptions as api
    from requests import exceptions as http

    return isinstance(
        exc,
        api.ServerError
        | api.TooManyRequests
        | http.ConnectionError
        | http.Timeout
        | http.ChunkedEncodingError,
    )


def _with_retries(call: Callable[[], Any], attempts: int, sleep: Callable[[float], None]) -> Any:
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except Exception as exc:
            if not _is_library_error(exc):
                raise
            if attempt == attempts or not _retryable(exc):
                raise _Failed(exc, attempt) from exc
            sleep(min(0.2 * 2 ** (attempt - 1), 5.0))
    raise AssertionError("unreachable")


class _Failed(Exception):
    """The last try's error and how many tries were made."""

    def __init__(self, error: BaseException, attempts: int) -> None:
        super().__init__(str(error))
        self.error = error
        self.attempts = attempts


def error_line(exc: BaseException, endpoint: str, attempts: int = 1) -> str:
    """One line for a failed collection: what went wrong and what to do."""
    return (
        _credentials_line(exc)
        or _refused_line(exc)
        or _api_line(exc, endpoint, attempts)
        or _unreadable_line(exc, endpoint)
        or (
            f"collect gcp: could not reach the Cloud Billing API at {endpoint} after {attempts} "
            f"tries ({type(exc).__name__}); check SPOTWISE_GCP_BILLING_ENDPOINT and the network"
        )
    )


def _credentials_line(exc: BaseException) -> str | None:
    """The line for credentials that are missing or cannot be refreshed, else None."""
    from google.auth import exceptions as auth

    if isinstance(exc, auth.DefaultCredentialsError):
        return NO_CREDENTIALS
    if isinstance(exc, auth.RefreshError | auth.TransportError):
        return (
            f"collect gcp: the Google credentials could not be refreshed ({_short(exc)}); sign "
            "in again (`gcloud auth application-default login`) or fix the key file, then run "
            "again"
        )
    return None


def _refused_line(exc: BaseException) -> str | None:
    """The line for an API that is disabled or refuses these credentials, else None."""
    from google.api_core import exceptions as api

    denied = api.PermissionDenied | api.Forbidden  # gRPC's name, and REST's (HTTP 403)
    if isinstance(exc, denied) and exc.reason == "SERVICE_DISABLED":
        project = str((exc.metadata or {}).get("consumer", "")).removeprefix("projects/")
        named = f" --project {project}" if project else ""
        return (
            f"collect gcp: the Cloud Billing API is not enabled in project {project or '?'}: "
            f"run `gcloud services enable cloudbilling.googleapis.com{named}`, wait a minute, "
            "then run again"
        )
    if isinstance(exc, denied | api.Unauthenticated | api.Unauthorized):
        return (
            f"collect gcp: the Cloud Billing API refused these credentials ({exc.code} "
            f"{_said(exc)}); use an account that may read the catalog, or set a quota "
            "project (GOOGLE_CLOUD_QUOTA_PROJECT), then run again"
        )
    return None


def _api_line(exc: BaseException, endpoint: str, attempts: int) -> str | None:
    """The line for any other answer of the API (retried or not), else None."""
    from google.api_core import exceptions as api

    if not isinstance(exc, api.GoogleAPICallError):
        return None
    if _retryable(exc):
        return (
            f"collect gcp: the Cloud Billing API at {endpoint} failed with {exc.code} "
            f"({_said(exc)}) {attempts} times; run again in a few minutes (the store is "
            "unchanged)"
        )
    return f"collect gcp: the Cloud Billing API answered {exc.code} ({_said(exc)})"


def _unreadable_line(exc: BaseException, endpoint: str) -> str | None:
    """The line for an answer that is not the API's JSON (cut short, not JSON, wrongly typed,
    a web page), else None."""
    from google.protobuf.json_format import ParseError

    if not isinstance(exc, ParseError):
        return None
    return (
        f"collect gcp: the Cloud Billing API at {endpoint} answered something other than its "
        f"documented JSON ({_short(exc)[:120]}); check SPOTWISE_GCP_BILLING_ENDPOINT, then run "
        "again (nothing was stored)"
    )


def _said(exc: Any) -> str:
    """What the API said, without the request line the REST transport puts before it."""
    return _short(re.sub(r"^(GET|POST|PUT|PATCH|DELETE) \S+: ", "", str(exc.message)))


def _short(value: object) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= 200 else text[:197] + "..."


def catalog_client(endpoint: str) -> Any:
    """A Cloud Catalog client over REST at ``endpoint``, with Application Default Credentials.

    Raises:
        SourceUnavailable: without the libraries (naming the extra) or without credentials.
    """
    try:
        import google.auth
        from google.api_core.client_options import ClientOptions
        from google.auth.exceptions import DefaultCredentialsError
        from google.cloud import billing_v1
    except ImportError:
        raise SourceUnavailable(NO_LIBRARIES) from None
    try:
        credentials, _ = google.auth.default(scopes=list(SCOPES))
    # google-auth reads a key file that is JSON but no object with an AttributeError
    except (DefaultCredentialsError, ValueError, AttributeError, TypeError) as exc:
        problem = key_file_problem(exc)
        raise SourceUnavailable(f"collect gcp: {problem}" if problem else NO_CREDENTIALS) from None
    return billing_v1.CloudCatalogClient(
        credentials=credentials,
        transport="rest",
        client_options=ClientOptions(api_endpoint=endpoint),
    )


def stored_resume_point(
    store: MarketStore, shapes: Sequence[GpuShape], regions: Sequence[str]
) -> pd.Timestamp | None:
    """Where to resume: the oldest of the newest stored prices of the shapes asked (None when
    none of them has one: ``--since`` then applies). A shape the others have been collected
    without (not sold in those regions then) starts where they resume."""
    names = [s.shape for s in shapes]
    if not names:
        return None
    marks = ", ".join("?" for _ in names)
    where = f"source = ? AND instance_type IN ({marks})"
    params: list[Any] = [SOURCE, *names]
    if regions:
        where += f" AND region IN ({', '.join('?' for _ in regions)})"
        params += list(regions)
    newest = store.query(
        f"SELECT instance_type, max(ts) AS ts FROM prices WHERE {where} GROUP BY instance_type",
        params,
    )
    if newest.empty:
        return None
    return pd.Timestamp(newest["ts"].min()).tz_convert("UTC")


def collect_gcp_into(
    store_path: Path,
    *,
    shapes: Sequence[GpuShape],
    regions: Sequence[str] = (),
    since: pd.Timestamp | None = None,
    endpoint: str,
    max_attempts: int = 5,
    on_page: Callable[[int, int], None] | None = None,
    now: pd.Timestamp | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> tuple[CatalogReport, int]:
    """:func:`collect_gcp` from where the store left off, up to ``now`` (default: a minute
    before the clock, as Google refuses a range that ends in its future), stored in one
    transaction; the report and the new rows. The store is held only to read where to resume
    and to write.

    Raises:
        SourceUnavailable: one line saying what failed and what to do (nothing was stored).
        InputError: a SKU that cannot be used (nothing was stored).
    """
    client = catalog_client(endpoint)
    resume = None
    if store_path.exists():
        with MarketStore.open_to_read(store_path) as store:
            resume = stored_resume_point(store, shapes, regions)
    if now is None:
        now = utc_now(clock).floor("s") - pd.Timedelta(minutes=1)
    report = collect_gcp(
        client,
        shapes=shapes,
        regions=regions,
        resume_from=resume,
        since=since,
        now=now,
        max_attempts=max_attempts,
        on_page=on_page,
    )
    if not report.frames:
        return report, 0
    with MarketStore.open(store_path) as store:
        return report, store.upsert(report.frames).get("prices", 0)


def _is_library_error(exc: BaseException) -> bool:
    from google.api_core.exceptions import GoogleAPICallError
    from google.auth.exceptions import GoogleAuthError
    from google.protobuf.json_format import ParseError
    from requests.exceptions import RequestException

    return isinstance(exc, GoogleAPICallError | GoogleAuthError | RequestException | ParseError)

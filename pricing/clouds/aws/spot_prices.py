"""AWS spot prices: the ``describe-spot-price-history`` CSV reader and the boto3 collector.

The collector pages ``describe_spot_price_history`` (Linux/UNIX) with boto3's paginator,
resumes each instance type from the newest stored price in the region, lets botocore's
standard retry mode back off on throttling (``RequestLimitExceeded``), and also records
spot placement scores and the Spot Advisor feed where they are permitted and reachable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.pricing.clouds.aws.advisor import ADVISOR_URL, fetch_advisor, parse_advisor
from spotwise.pricing.errors import InputError, SourceUnavailable
from spotwise.pricing.frames import ROW, region_of_zone, utc_now, validate
from spotwise.pricing.operational import upsert_frames
from spotwise.pricing.sources import FileFormat, Parsed
from spotwise.pricing.sources.tabular import parse_utc, read_csv
from spotwise.pricing.store import MarketStore

PRODUCT = "Linux/UNIX"
LINUX_PRODUCTS = frozenset({PRODUCT, "Linux/UNIX (Amazon VPC)"})
CSV_COLUMNS = (
    "timestamp",
    "availability_zone",
    "instance_type",
    "product_description",
    "spot_price",
)
CSV_NAMES = {"zone": "availability_zone", "ts": "timestamp", "price": "spot_price"}
API_SOURCE = "aws-api"


def price_rows(raw: pd.DataFrame, *, source: str, origin: str, where: str) -> pd.DataFrame:
    """Spot price rows from text columns named as in :data:`CSV_COLUMNS` (plus ``_row``).

    Raises:
        InputError: a product other than Linux/UNIX, or any contract violation.
    """
    other = ~raw["product_description"].isin(LINUX_PRODUCTS)
    if other.any():
        row = raw[ROW][other].iloc[0]
        raise InputError(
            origin,
            f"{where.format(row)}, field 'product_description'",
            f"only {PRODUCT} prices are stored, got {raw['product_description'][other].iloc[0]!r}",
            f"Keep only {PRODUCT} rows; nothing was stored",
        )
    zones = raw["availability_zone"]
    return validate(
        "prices",
        pd.DataFrame(
            {
                "source": source,
                "provider": "aws",
                "region": zones.map(lambda z: region_of_zone("aws", z)),
                "zone": zones,
                "instance_type": raw["instance_type"],
                "market": "spot",
                "ts": raw["timestamp"],
                "price": raw["spot_price"],
                ROW: raw[ROW],
            }
        ),
        origin=origin,
        where=where,
        names=CSV_NAMES,
    )


def read_price_history_csv(path: Path) -> Parsed:
    """A CSV of ``describe-spot-price-history`` output (one row per price change)."""
    raw = read_csv(path, columns=CSV_COLUMNS, header=True)
    raw["timestamp"] = parse_utc(raw, "timestamp", origin=path)
    prices = price_rows(raw, source="aws-price-history", origin=str(path), where="line {}")
    return Parsed(
        path=path, format="aws-price-history", frames={"prices": prices}, rows_read=len(raw)
    )


@dataclass(slots=True)
class CollectReport:
    """What one collection fetched, and one line per source that was skipped."""

    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    pages: int = 0
    messages: list[str] = field(default_factory=list)


def collect_aws(
    client: Any,
    *,
    region: str,
    instance_types: Sequence[str],
    resume_from: Callable[[str], pd.Timestamp | None],
    since: pd.Timestamp | None,
    now: pd.Timestamp,
    advisor_url: str | None = ADVISOR_URL,
    placement_scores: bool = True,
    on_page: Callable[[int, int], None] | None = None,
) -> CollectReport:
    """Collect one region's spot prices, placement scores and advisor bands.

    Args:
        client: a boto3 EC2 client for ``region`` (its retry config handles throttling).
        instance_types: types to fetch; empty = every type the region reports.
        resume_from: newest stored price time for an instance type ('' = all types), or None.
        since: earliest time to fetch when nothing is stored (None = all the API keeps).
        now: the collection's clock (end of the requested window, time of observations).
        advisor_url: where to fetch the Spot Advisor feed; None skips it.
        placement_scores: whether to ask for spot placement scores (needs instance types).
        on_page: called with (pages so far, rows so far) after each page.

    Raises:
        botocore.exceptions.ClientError: when the price history itself cannot be fetched.
    """
    report = CollectReport()
    frames = [
        _price_history(
            client,
            instance_type,
            _start(instance_type, resume_from, since, now, report),
            now,
            report,
            on_page,
        )
        for instance_type in instance_types or [""]
    ]
    report.frames["prices"] = validate(
        "prices", pd.concat(frames, ignore_index=True), origin=f"{API_SOURCE} {region}", now=now
    )
    if placement_scores:
        _add_placement_scores(report, client, region, instance_types, now)
    if advisor_url:
        _add_advisor_bands(report, advisor_url, now)
    return report


def _start(
    instance_type: str,
    resume_from: Callable[[str], pd.Timestamp | None],
    since: pd.Timestamp | None,
    now: pd.Timestamp,
    report: CollectReport,
) -> pd.Timestamp | None:
    """Where one type's price history starts: the stored resume point, else ``since`` (with a
    line in the report when the stored point lies in the future)."""
    start = resume_from(instance_type)
    if start is not None and start > now:
        report.messages.append(
            f"{instance_type or 'all types'}: the newest stored price ({start:%Y-%m-%d}) "
            "lies in the future; collecting from --since instead (delete that row)"
        )
        start = None
    return start or since


def _add_placement_scores(
    report: CollectReport,
    client: Any,
    region: str,
    instance_types: Sequence[str],
    now: pd.Timestamp,
) -> None:
    """The placement scores of ``instance_types`` into the report, or a line why not."""
    if not instance_types:
        report.messages.append("placement scores: skipped (they need --instance-types)")
        return
    try:
        report.frames["placement_scores"] = _placement_scores(client, region, instance_types, now)
    except SourceUnavailable as exc:
        report.messages.append(str(exc))


def _add_advisor_bands(report: CollectReport, advisor_url: str, now: pd.Timestamp) -> None:
    """The Spot Advisor's bands, observed today, into the report, or a line why not."""
    try:
        bands, _ = parse_advisor(
            fetch_advisor(advisor_url), observed=now.floor("D"), origin=advisor_url
        )
        report.frames["bands"] = bands
    except (SourceUnavailable, InputError) as exc:
        report.messages.append(f"spot advisor: skipped ({exc})")


def collect_into(
    store_path: Path,
    region: str,
    *,
    instance_types: Sequence[str] = (),
    since: pd.Timestamp | None = None,
    endpoint_url: str | None = None,
    max_attempts: int = 8,
    advisor_url: str | None = ADVISOR_URL,
    placement_scores: bool = True,
    on_page: Callable[[int, int], None] | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> tuple[CollectReport, dict[str, int]]:
    """Collect one region into the store at ``store_path`` from where it left off
    (:func:`collect_aws` with a boto3 client that retries throttled calls); the report and the
    new rows per table. The store is held only to read where to resume and to write, not while
    AWS answers.

    Raises:
        botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError: when the price
            history cannot be fetched.
    """
    client = retrying_client("ec2", region, endpoint_url, max_attempts)
    with MarketStore.open_to_read(store_path) as store:
        resume_from = stored_resume_point(store, region)
    report = collect_aws(
        client,
        region=region,
        instance_types=instance_types,
        resume_from=resume_from,
        since=since,
        now=utc_now(clock),
        advisor_url=advisor_url,
        placement_scores=placement_scores,
        on_page=on_page,
    )
    return report, upsert_frames(store_path, report.frames)


def no_credentials(who: str) -> str:
    """The one line that says ``who`` found no AWS credentials, and how to set them."""
    return (
        f"{who}: no AWS credentials found; set AWS_PROFILE, or AWS_ACCESS_KEY_ID and "
        "AWS_SECRET_ACCESS_KEY, or run `aws configure`, then run again"
    )


NO_CREDENTIALS = no_credentials("collect aws")


def require_credentials(region: str) -> None:
    """Refuse, saying how to set them, when boto3 finds no AWS credentials.

    Raises:
        SourceUnavailable: without credentials.
    """
    import boto3

    if boto3.Session(region_name=region).get_credentials() is None:
        raise SourceUnavailable(NO_CREDENTIALS)


def retrying_client(service: str, region: str, endpoint_url: str | None, max_attempts: int) -> Any:
    """A boto3 client whose throttled and failed calls back off and retry (botocore's standard
    mode), ``max_attempts`` times in all.

    Raises:
        SourceUnavailable: without AWS credentials (saying how to set them), before any call.
    """
    import boto3
    from botocore.config import Config

    require_credentials(region)
    return boto3.client(
        service,
        region_name=region,
        endpoint_url=endpoint_url,
        config=Config(retries={"total_max_attempts": max_attempts, "mode": "standard"}),
    )


def stored_resume_point(store: MarketStore, region: str) -> Callable[[str], pd.Timestamp | None]:
    """The resume rule of :func:`collect_aws` over a store: the newest stored spot price of the
    region for an instance type ('' = any type), read now (the store may close after)."""
    newest = store.query(
        "SELECT instance_type, max(ts) AS ts FROM prices "
        "WHERE provider = 'aws' AND region = ? AND market = 'spot' GROUP BY instance_type",
        [region],
    )
    by_type = {
        str(t): pd.Timestamp(ts).tz_convert("UTC")
        for t, ts in zip(newest["instance_type"], newest["ts"], strict=True)
    }

    def resume_from(instance_type: str) -> pd.Timestamp | None:
        if instance_type:
            return by_type.get(instance_type)
        return max(by_type.values()) if by_type else None

    return resume_from


def _price_history(
    client: Any,
    instance_type: str,
    start: pd.Timestamp | None,
    now: pd.Timestamp,
    report: CollectReport,
    on_page: Callable[[int, int], None] | None,
) -> pd.DataFrame:
    kwargs: dict[str, Any] = {"ProductDescriptions": [PRODUCT], "EndTime": now.to_pydatetime()}
    if instance_type:
        kwargs["InstanceTypes"] = [instance_type]
    if start is not None:
        kwargs["StartTime"] = start.to_pydatetime()
    rows: list[tuple[Any, ...]] = []
    for page in client.get_paginator("describe_spot_price_history").paginate(**kwargs):
        report.pages += 1
        for i, item in enumerate(page.get("SpotPriceHistory", [])):
            rows.append(
                (
                    item.get("Timestamp"),
                    item.get("AvailabilityZone"),
                    item.get("InstanceType"),
                    item.get("ProductDescription"),
                    item.get("SpotPrice"),
                    report.pages * 1_000_000 + i,
                )
            )
        if on_page:
            on_page(report.pages, len(rows))
    raw = pd.DataFrame(rows, columns=[*CSV_COLUMNS, ROW])
    raw["timestamp"] = pd.to_datetime(raw["timestamp"], utc=True).astype("datetime64[ns, UTC]")
    return price_rows(
        raw,
        source=API_SOURCE,
        origin=f"{API_SOURCE} describe_spot_price_history",
        where="response item {} (page*1e6 + index)",
    )


def _placement_scores(
    client: Any, region: str, instance_types: Iterable[str], now: pd.Timestamp
) -> pd.DataFrame:
    from botocore.exceptions import BotoCoreError, ClientError
    from botocore.parsers import ResponseParserError

    rows = []
    try:
        for instance_type in instance_types:
            response = client.get_spot_placement_scores(
                InstanceTypes=[instance_type],
                TargetCapacity=1,
                SingleAvailabilityZone=True,
                RegionNames=[region],
            )
            for item in response.get("SpotPlacementScores", []):
                rows.append((instance_type, item.get("AvailabilityZoneId", ""), item["Score"]))
    except (ClientError, BotoCoreError, ResponseParserError, KeyError) as exc:
        code = exc.response["Error"]["Code"] if isinstance(exc, ClientError) else type(exc).__name__
        raise SourceUnavailable(
            f"placement scores: skipped, not available to this account or endpoint ({code})"
        ) from exc
    frame = pd.DataFrame(rows, columns=["instance_type", "zone", "score"])
    frame = frame.assign(source=API_SOURCE, provider="aws", region=region, observed=now)
    return validate("placement_scores", frame, origin=f"{API_SOURCE} get_spot_placement_scores")


FORMATS = (
    FileFormat(
        name="aws-price-history",
        description="AWS describe-spot-price-history output (CSV)",
        sniff=lambda p, head: head.startswith("timestamp,availability_zone,instance_type"),
        read=read_price_history_csv,
    ),
)

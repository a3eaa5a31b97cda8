"""``spotwise collect aws``'s run (its flags are its profile's, in ``__init__.py``): a region's
spot price history (Linux/UNIX), placement scores and Spot Advisor bands
(:mod:`~spotwise.pricing.clouds.aws.spot_prices`), or with ``--on-demand`` its on-demand prices
from the AWS Price List (:mod:`~spotwise.pricing.clouds.aws.price_list`). Imported only when the
command runs (:class:`~spotwise.pricing.clouds.profile.CollectorModule`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError

from spotwise.pricing.clouds import collecting
from spotwise.pricing.clouds.aws.advisor import ADVISOR_URL
from spotwise.pricing.clouds.aws.price_list import collect_on_demand_into
from spotwise.pricing.clouds.aws.spot_prices import collect_into, require_credentials
from spotwise.pricing.clouds.profile import Collected, CollectValues, Line
from spotwise.pricing.errors import SourceUnavailable


def collect(
    store: Callable[[], Path], values: CollectValues, progress: Callable[[str], None]
) -> Collected:
    """The region's spot prices, placement scores and advisor bands, or its on-demand prices.

    Raises:
        PricingError: a flag's value, the store, no credentials, or AWS refusing the price
            history (botocore's words): one line.
    """
    region = values.text("region")
    start = collecting.since(values.optional_text("since"))
    types = [t.strip() for t in values.text("instance_types").split(",") if t.strip()]
    endpoint_url = values.optional_text("endpoint_url")
    max_attempts = values.number("max_attempts")
    require_credentials(region)  # before the store: a refused run leaves no file behind
    if values.switch("on_demand"):
        return _on_demand(store(), region, types, endpoint_url, max_attempts)
    path = store()
    advisor_url = values.optional_text("advisor_url")
    progress(region)
    try:
        report, added = collect_into(
            path,
            region,
            instance_types=types,
            since=start,
            endpoint_url=endpoint_url,
            max_attempts=max_attempts,
            advisor_url=ADVISOR_URL if advisor_url is None else advisor_url or None,
            placement_scores=values.switch("placement_scores"),
            on_page=lambda pages, rows: progress(f"{region}: {pages} pages, {rows} prices"),
        )
    except (ClientError, BotoCoreError) as exc:
        raise SourceUnavailable(f"AWS spot price history for {region}: {exc}") from exc
    sizes = ", ".join(
        f"{len(f)} {t} rows ({added.get(t, 0)} new)" for t, f in report.frames.items()
    )
    return Collected(
        (
            *(Line(message) for message in report.messages),
            Line(f" in {report.pages} pages: {sizes}", lead=f"collected {region}"),
        )
    )


def _on_demand(
    path: Path, region: str, types: list[str], endpoint_url: str | None, max_attempts: int
) -> Collected:
    """``collect aws --on-demand``: the region's on-demand prices from the AWS Price List."""
    try:
        report, added = collect_on_demand_into(
            path, [region], types, endpoint_url=endpoint_url, max_attempts=max_attempts
        )
    except (ClientError, BotoCoreError) as exc:
        raise SourceUnavailable(f"AWS Price List for {region}: {exc}") from exc
    published = report.frame["ts"].max() if len(report.frame) else None
    return Collected(
        (
            *(Line(f"skipped {line}") for line in report.skipped),
            Line(
                f" on-demand prices in {report.pages} pages: {len(report.frame)} rows ({added} new)"
                + (f", published {published:%Y-%m-%d}" if published is not None else ""),
                lead=f"collected {region}",
            ),
        )
    )

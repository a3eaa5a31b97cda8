"""``spotwise collect gcp``'s run (its flags are its profile's, in ``__init__.py``): the spot and
on-demand prices of GCP's GPU shapes from the Cloud Billing Catalog
(:mod:`~spotwise.pricing.clouds.gcp.billing`). Imported only when the command runs
(:class:`~spotwise.pricing.clouds.profile.CollectorModule`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from spotwise.core import settings
from spotwise.pricing.clouds import collecting
from spotwise.pricing.clouds.collecting import plural
from spotwise.pricing.clouds.gcp import COLLECTOR
from spotwise.pricing.clouds.gcp.billing import CATALOG_ENDPOINT, collect_gcp_into
from spotwise.pricing.clouds.profile import Collected, CollectValues, Line


def collect(
    store: Callable[[], Path], values: CollectValues, progress: Callable[[str], None]
) -> Collected:
    """The shapes' prices in the regions asked, month by month from the newest stored.

    Raises:
        PricingError: a flag's value, the store, Google's client or credentials missing, or the
            catalog failing or answering what cannot be read: one line.
        SettingsError: SPOTWISE_GCP_BILLING_ENDPOINT is not a URL it may use.
    """
    chosen = collecting.cloud_shapes(
        "gcp", values.text("shapes"), values.optional_text("gpu"), COLLECTOR.shape_flag
    )
    start = collecting.since(values.optional_text("since"))
    regions = collecting.names(values.text("regions"), "--regions")
    endpoint = settings.endpoint_url(CATALOG_ENDPOINT)
    path = store()
    report, added = collect_gcp_into(
        path,
        shapes=chosen,
        regions=regions,
        since=start,
        endpoint=endpoint,
        max_attempts=values.number("max_attempts"),
        on_page=lambda pages, skus: progress(f"gcp: {pages} pages, {skus} SKUs kept"),
    )
    read = f"{plural(report.pages, 'page')} ({plural(report.windows, 'month')})"
    return Collected(
        (
            *(Line(message) for message in report.messages),
            collecting.collected("gcp", report.frames.get("prices"), added, read),
        )
    )

"""``spotwise collect azure``'s run (its flags are its profile's, in ``__init__.py``): Azure's spot
and on-demand prices from the Retail Prices API and, where the account may read them, spot
eviction bands and price history from Resource Graph (:mod:`~spotwise.pricing.clouds.azure.prices`).
Imported only when the command runs (:class:`~spotwise.pricing.clouds.profile.CollectorModule`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from spotwise.core import settings
from spotwise.pricing.clouds import collecting
from spotwise.pricing.clouds.azure import COLLECTOR
from spotwise.pricing.clouds.azure.prices import (
    GRAPH_ENDPOINT,
    RETAIL_ENDPOINT,
    collect_azure_into,
)
from spotwise.pricing.clouds.collecting import plural
from spotwise.pricing.clouds.profile import Collected, CollectValues, Line
from spotwise.pricing.errors import FlagError


def collect(
    store: Callable[[], Path], values: CollectValues, progress: Callable[[str], None]
) -> Collected:
    """The sizes' retail prices in the regions asked, and Resource Graph's bands and history.

    Raises:
        PricingError: a flag's value, the store, or the Retail Prices API failing or answering
            what cannot be read: one line (Resource Graph's failures are a line of the result).
        SettingsError: an endpoint variable is not a URL it may use.
    """
    chosen = collecting.cloud_shapes(
        "azure", values.text("vm_sizes"), values.optional_text("gpu"), COLLECTOR.shape_flag
    )
    regions = collecting.names(values.text("regions"), "--regions")
    if not regions:
        raise FlagError("--regions: name at least one Azure region, e.g. eastus")
    subscriptions = collecting.names(values.text("subscriptions"), "--subscriptions")
    resource_graph = values.switch("resource_graph")
    prices_url = settings.endpoint_url(RETAIL_ENDPOINT)
    graph_url = settings.endpoint_url(GRAPH_ENDPOINT) if resource_graph else None
    path = store()
    report, added = collect_azure_into(
        path,
        regions=regions,
        shapes=chosen,
        prices_url=prices_url,
        graph_url=graph_url,
        subscriptions=subscriptions,
        max_attempts=values.number("max_attempts"),
        on_page=lambda what: progress(f"azure {what}"),
    )
    read = plural(report.retail_pages, "retail page")
    if resource_graph:
        read += f" and {plural(report.graph_pages, 'Resource Graph page')}"
    lines = [
        *(Line(message) for message in report.messages),
        collecting.collected("azure", report.frames["prices"], added.get("prices", 0), read),
    ]
    if "bands" in report.frames:
        bands = report.frames["bands"]
        lines.append(
            Line(
                f"eviction bands: {plural(len(bands), 'row')} ({added.get('bands', 0)} new), "
                f"observed {bands['observed'].max():%Y-%m-%d}"
            )
        )
    return Collected(tuple(lines))

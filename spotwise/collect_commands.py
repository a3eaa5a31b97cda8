"""``spotwise collect CLOUD``: each cloud's live prices (and AWS's placement scores) into the
market store, incremental, each row with its source and ``as_of``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

import spotwise.executor.ledger.schema  # noqa: F401  (every store the CLI opens holds the ledger too)
from spotwise.console import (
    StoreOption,
    err,
    fail,
    plural,
    ready_store,
    say,
    styled,
)
from spotwise.core import settings
from spotwise.pricing.errors import PricingError

if TYPE_CHECKING:
    import pandas as pd


collect_app = typer.Typer(
    help="Collect live market data from cloud APIs.", no_args_is_help=True, rich_markup_mode=None
)


def _collect_on_demand(
    store: Path | None,
    region: str,
    types: list[str],
    endpoint_url: str | None,
    max_attempts: int,
) -> None:
    """``collect aws --on-demand``: the region's on-demand prices from the AWS Price List."""
    from botocore.exceptions import BotoCoreError, ClientError

    from spotwise.pricing.clouds.aws.price_list import collect_on_demand_into

    path = ready_store(store)
    try:
        report, added = collect_on_demand_into(
            path, [region], types, endpoint_url=endpoint_url, max_attempts=max_attempts
        )
    except (ClientError, BotoCoreError) as exc:
        fail(f"AWS Price List for {region}: {exc}")
    except PricingError as exc:
        fail(str(exc))
    for line in report.skipped:
        say(f"skipped {line}")
    published = report.frame["ts"].max() if len(report.frame) else None
    err.print(
        styled(
            f"collected {region}",
            "green",
            f" on-demand prices in {report.pages} pages: {len(report.frame)} rows ({added} new)"
            + (f", published {published:%Y-%m-%d}" if published is not None else ""),
        )
    )


@collect_app.command("aws")
def collect_aws_command(
    region: Annotated[str, typer.Option("--region", help="AWS region, e.g. us-east-1.")],
    instance_types: Annotated[
        str,
        typer.Option(
            "--instance-types",
            help="Comma-separated instance types (default: all in the region).",
            show_default=False,
        ),
    ] = "",
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="Earliest time (ISO 8601, UTC) for series with nothing stored yet; "
            "stored series resume from their newest price.",
            show_default=False,
        ),
    ] = None,
    endpoint_url: Annotated[
        str | None,
        typer.Option(
            "--endpoint-url",
            help="EC2 endpoint (e.g. a moto server); default: AWS.",
            show_default=False,
        ),
    ] = None,
    advisor_url: Annotated[
        str | None,
        typer.Option(
            "--advisor-url",
            help="Spot Advisor feed URL (default: AWS's public feed); '' skips it.",
            show_default=False,
        ),
    ] = None,
    placement_scores: Annotated[
        bool,
        typer.Option(
            "--placement-scores/--no-placement-scores",
            help="Ask for spot placement scores (needs --instance-types and permission).",
        ),
    ] = True,
    max_attempts: Annotated[
        int,
        typer.Option(
            "--max-attempts", min=1, help="Attempts per API call; throttled calls back off."
        ),
    ] = 8,
    on_demand: Annotated[
        bool,
        typer.Option(
            "--on-demand",
            help="Collect the region's on-demand prices from the AWS Price List instead "
            "(--endpoint-url is then the Price List's).",
        ),
    ] = False,
    store: StoreOption = None,
) -> None:
    """Collect spot price history (Linux/UNIX), placement scores and Spot Advisor bands; with
    --on-demand, on-demand prices from the AWS Price List."""
    from botocore.exceptions import BotoCoreError, ClientError
    from rich.progress import Progress, TextColumn

    from spotwise.pricing.clouds.aws.advisor import ADVISOR_URL
    from spotwise.pricing.clouds.aws.spot_prices import collect_into

    start = _parse_since(since)
    types = [t.strip() for t in instance_types.split(",") if t.strip()]
    if on_demand:
        _collect_on_demand(store, region, types, endpoint_url, max_attempts)
        return
    path = ready_store(store)
    with Progress(TextColumn("collecting {task.description}"), console=err, transient=True) as bar:
        task = bar.add_task(region)
        try:
            report, added = collect_into(
                path,
                region,
                instance_types=types,
                since=start,
                endpoint_url=endpoint_url,
                max_attempts=max_attempts,
                advisor_url=ADVISOR_URL if advisor_url is None else advisor_url or None,
                placement_scores=placement_scores,
                on_page=lambda pages, rows: bar.update(
                    task, description=f"{region}: {pages} pages, {rows} prices"
                ),
            )
        except (ClientError, BotoCoreError) as exc:
            fail(f"AWS spot price history for {region}: {exc}")
        except PricingError as exc:
            fail(str(exc))
    for message in report.messages:
        err.print(message, highlight=False, soft_wrap=True)
    sizes = ", ".join(
        f"{len(f)} {t} rows ({added.get(t, 0)} new)" for t, f in report.frames.items()
    )
    err.print(styled(f"collected {region}", "green", f" in {report.pages} pages: {sizes}"))


@collect_app.command("gcp")
def collect_gcp_command(
    regions: Annotated[
        str,
        typer.Option(
            "--regions",
            help="Comma-separated GCP regions, e.g. us-central1 (default: every region a "
            "shape is priced in).",
            show_default=False,
        ),
    ] = "",
    shapes: Annotated[
        str,
        typer.Option(
            "--shapes",
            help="Comma-separated shapes of the GPU table, e.g. a2-highgpu-1g (default: all "
            "of GCP's, or those of --gpu).",
            show_default=False,
        ),
    ] = "",
    gpu: Annotated[
        str | None,
        typer.Option("--gpu", help="Only shapes with this GPU (A100, H100, L4, T4, V100)."),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="Earliest time (ISO 8601, UTC) when nothing is stored yet (default: the "
            "start of this month); stored prices resume from their newest.",
            show_default=False,
        ),
    ] = None,
    max_attempts: Annotated[
        int,
        typer.Option("--max-attempts", min=1, help="Tries per page; 5xx and 429 back off."),
    ] = 5,
    store: StoreOption = None,
) -> None:
    """Collect spot and on-demand prices of GCP GPU shapes from the Cloud Billing Catalog
    (built from their vCPU, RAM and GPU SKUs; SPOTWISE_GCP_BILLING_ENDPOINT overrides
    Google's endpoint)."""
    from spotwise.pricing.clouds.gcp.billing import CATALOG_ENDPOINT, collect_gcp_into

    chosen = _cloud_shapes("gcp", shapes, gpu)
    start = _parse_since(since)
    names = _names(regions, "--regions")
    endpoint = settings.endpoint_url(CATALOG_ENDPOINT)
    path = ready_store(store)
    with _collecting("gcp") as show:
        report, added = collect_gcp_into(
            path,
            shapes=chosen,
            regions=names,
            since=start,
            endpoint=endpoint,
            max_attempts=max_attempts,
            on_page=lambda pages, skus: show(f"gcp: {pages} pages, {skus} SKUs kept"),
        )
    for message in report.messages:
        err.print(message, highlight=False, soft_wrap=True)
    _print_collected(
        "gcp",
        report.frames.get("prices"),
        added,
        f"{plural(report.pages, 'page')} ({plural(report.windows, 'month')})",
    )


@collect_app.command("azure")
def collect_azure_command(
    regions: Annotated[
        str,
        typer.Option("--regions", help="Comma-separated Azure regions, e.g. eastus,westeurope."),
    ],
    vm_sizes: Annotated[
        str,
        typer.Option(
            "--vm-sizes",
            help="Comma-separated VM sizes of the GPU table, e.g. Standard_NC6s_v3 (default: "
            "all of Azure's, or those of --gpu).",
            show_default=False,
        ),
    ] = "",
    gpu: Annotated[
        str | None, typer.Option("--gpu", help="Only sizes with this GPU (A100, H100, T4, V100).")
    ] = None,
    resource_graph: Annotated[
        bool,
        typer.Option(
            "--resource-graph/--no-resource-graph",
            help="Also read spot eviction bands and spot price history from Resource Graph "
            "(needs Azure credentials and the azure extra).",
        ),
    ] = True,
    subscriptions: Annotated[
        str,
        typer.Option(
            "--subscriptions",
            help="Comma-separated subscription ids Resource Graph queries (default: all the "
            "identity may read).",
            show_default=False,
        ),
    ] = "",
    max_attempts: Annotated[
        int,
        typer.Option("--max-attempts", min=1, help="Tries per request; 5xx and 429 back off."),
    ] = 5,
    store: StoreOption = None,
) -> None:
    """Collect Azure spot and on-demand prices from the Retail Prices API and, where the account
    may read them, spot eviction bands and price history from Resource Graph
    (SPOTWISE_AZURE_PRICES_URL and SPOTWISE_AZURE_RESOURCE_GRAPH_URL override the endpoints)."""
    from spotwise.pricing.clouds.azure.prices import (
        GRAPH_ENDPOINT,
        RETAIL_ENDPOINT,
        collect_azure_into,
    )

    chosen = _cloud_shapes("azure", vm_sizes, gpu)
    names = _names(regions, "--regions")
    if not names:
        fail("--regions: name at least one Azure region, e.g. eastus")
    ids = _names(subscriptions, "--subscriptions")
    prices_url = settings.endpoint_url(RETAIL_ENDPOINT)
    graph_url = settings.endpoint_url(GRAPH_ENDPOINT) if resource_graph else None
    path = ready_store(store)
    with _collecting("azure") as show:
        report, added = collect_azure_into(
            path,
            regions=names,
            shapes=chosen,
            prices_url=prices_url,
            graph_url=graph_url,
            subscriptions=ids,
            max_attempts=max_attempts,
            on_page=lambda what: show(f"azure {what}"),
        )
    for message in report.messages:
        err.print(message, highlight=False, soft_wrap=True)
    read = plural(report.retail_pages, "retail page")
    if resource_graph:
        read += f" and {plural(report.graph_pages, 'Resource Graph page')}"
    _print_collected("azure", report.frames["prices"], added.get("prices", 0), read)
    if "bands" in report.frames:
        bands = report.frames["bands"]
        err.print(
            f"eviction bands: {plural(len(bands), 'row')} ({added.get('bands', 0)} new), "
            f"observed {bands['observed'].max():%Y-%m-%d}",
            soft_wrap=True,
        )


@contextmanager
def _collecting(label: str) -> Iterator[Callable[[str], None]]:
    """A progress line on stderr (on a terminal only) that the block updates; a PricingError in
    the block ends the command with its one line, once the progress line is gone."""
    from rich.progress import Progress, TextColumn

    failure = None
    with Progress(
        TextColumn("collecting {task.description}"),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as bar:
        task = bar.add_task(label)
        try:
            yield lambda text: bar.update(task, description=text)
        except PricingError as exc:
            failure = str(exc)
    if failure is not None:
        fail(failure)


def _cloud_shapes(cloud: str, shapes: str, gpu: str | None) -> list[Any]:
    """The table's shapes of ``cloud`` that ``--shapes`` names (all, or those of ``--gpu``)."""
    known = _shapes_with(cloud, gpu)
    named = _names(shapes, "--shapes")
    if not named:
        return list(known)
    by_name = {s.shape.lower(): s for s in known}
    missing = [n for n in named if n.lower() not in by_name]
    if missing:
        fail(
            f"--shapes: {', '.join(missing)} not in the GPU table for {cloud}"
            + (f" with {gpu}" if gpu else "")
            + f"; known: {', '.join(s.shape for s in known)}"
        )
    return [by_name[n.lower()] for n in named]


def _shapes_with(cloud: str, gpu: str | None) -> tuple[Any, ...]:
    """The table's shapes of ``cloud`` (those carrying ``gpu``, when given), or one line."""
    from spotwise.pricing import gpus

    try:
        known = gpus.on_cloud(cloud)
    except PricingError as exc:
        fail(str(exc))
    if gpu is None:
        return known
    carrying = tuple(s for s in known if s.gpu.lower() == gpu.lower())
    if not carrying:
        fail(f"--gpu {gpu!r}: no {cloud} shape carries it; GPUs: {', '.join(gpus.gpu_models())}")
    return carrying


def _names(text: str, flag: str) -> list[str]:
    """A comma-separated list of names (letters, digits, '.', '_', '+', '-') from ``flag``."""
    import re

    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,79}", n)]
    if bad:
        fail(f"{flag}: {bad[0]!r} is not a name (letters, digits, '.', '_', '+' and '-')")
    return names


def _print_collected(cloud: str, frame: pd.DataFrame | None, added: int, read: str) -> None:
    """One line: how many prices of how many shapes and regions, and the newest as_of."""
    if frame is None or not len(frame):
        err.print(styled(f"collected {cloud}", "green", f" from {read}: no prices"), soft_wrap=True)
        return
    err.print(
        styled(f"collected {cloud}", "green", f" from {read}: ")
        + f"{plural(len(frame), 'price')} ({added} new) "
        f"of {plural(frame['instance_type'].nunique(), 'shape')} in "
        f"{plural(frame['region'].nunique(), 'region')}, as of {frame['ts'].min():%Y-%m-%d} .. "
        f"{frame['ts'].max():%Y-%m-%d %H:%M}Z",
        soft_wrap=True,
    )


def _parse_since(since: str | None) -> pd.Timestamp | None:
    if since is None:
        return None
    import pandas as pd

    try:
        stamp = pd.Timestamp(since)
    except ValueError:
        fail(f"--since {since!r} is not a time: give ISO 8601 like 2026-01-01T00:00:00Z")
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")

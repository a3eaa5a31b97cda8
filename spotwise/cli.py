"""The ``spotwise`` command line: the only place that wires the packages together.

Heavy libraries (pandas, torch, scikit-learn, ...) are imported inside the commands that use
them, so that every command starts in well under a second (``spotwise bench startup``).
"""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

import spotwise.executor.ledger.schema  # noqa: F401  (every store the CLI opens holds the ledger too)
from spotwise import (
    api_commands,
    bids_command,
    cloud_commands,
    dashboard_command,
    fleet_commands,
    forecast_commands,
    jobs_commands,
    policy_commands,
    run_commands,
    startup_bench,
    sweep_commands,
)
from spotwise.console import (
    StoreOption,
    err,
    fail,
    open_operational_store,
    open_store,
    out,
    plural,
    ready_store,
    say,
    styled,
)
from spotwise.core import settings
from spotwise.executor.errors import ExecutorError
from spotwise.policy.errors import PolicyError
from spotwise.pricing.errors import PricingError
from spotwise.pricing.store import exportable_tables

if TYPE_CHECKING:
    import pandas as pd

    from spotwise.pricing.ingest import LoadReport
    from spotwise.pricing.store import MarketStore

app = typer.Typer(
    help="Spotwise: train ML models cheaply and safely on spot GPUs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's help: option names are never cut short at 80 columns
)
data_app = typer.Typer(
    help="Load, summarise and export the market store.", no_args_is_help=True, rich_markup_mode=None
)
collect_app = typer.Typer(
    help="Collect live market data from cloud APIs.", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(data_app, name="data")
app.add_typer(collect_app, name="collect")
app.add_typer(policy_commands.bench_app, name="bench")
app.command("plan")(policy_commands.plan)
policy_commands.bench_app.command("risk")(forecast_commands.bench_risk_command)
policy_commands.bench_app.command("price")(forecast_commands.bench_price_command)
app.add_typer(forecast_commands.forecast_app, name="forecast")
app.add_typer(api_commands.policy_app, name="policy")
app.command("serve")(api_commands.serve)
app.command("run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(
    run_commands.run
)
app.add_typer(jobs_commands.jobs_app, name="jobs")
app.add_typer(sweep_commands.sweep_app, name="sweep")
app.add_typer(fleet_commands.fleet_app, name="fleet")
app.add_typer(cloud_commands.gc_app, name="gc")
app.add_typer(cloud_commands.check_app, name="check")
app.add_typer(cloud_commands.setup_app, name="setup")
app.command("dashboard")(dashboard_command.dashboard)
policy_commands.bench_app.command("api")(api_commands.bench_api)
policy_commands.bench_app.command("startup")(startup_bench.bench_startup)
policy_commands.bench_app.command("bids")(bids_command.bench_bids)


@data_app.command("load")
def data_load(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Files or folders to load (default: all bundled data).", show_default=False
        ),
    ] = None,
    format_name: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="Format of every file (default: recognised from content; the README and an "
            "unknown name list the formats).",
            show_default=False,
        ),
    ] = None,
    store: StoreOption = None,
) -> None:
    """Load market data files into the store (one transaction: all or nothing)."""
    report = _load(store, paths or [settings.bundled_data_dir()], format_name)
    _print_load_report(report)


def _load(store: Path | None, paths: list[Path], format_name: str | None) -> LoadReport:
    """Read every file (showing progress), then hold the store only to write them."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from spotwise.pricing.ingest import discover, read_paths, store_files

    try:
        n_files = len(discover(paths)[0])
        with Progress(
            TextColumn("loading"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            console=err,
            transient=True,
        ) as bar:
            task = bar.add_task("", total=n_files)
            read = read_paths(
                paths,
                format_name=format_name,
                on_file=lambda p: bar.update(task, advance=1, description=p.name),
            )
        with open_store(store) as market:
            return store_files(market, read)
    except PricingError as exc:
        fail(str(exc))


def _print_load_report(report: LoadReport) -> None:
    for parsed in report.files:
        rows = ", ".join(f"{len(f)} {t}" for t, f in parsed.frames.items()) or "nothing stored"
        note = f" ({parsed.note})" if parsed.note else ""
        say(f"{parsed.path} [{parsed.format}]: {parsed.rows_read} rows read, {rows}{note}")
    for path in report.skipped:
        say(f"{path}: documentation, not data")
    added = ", ".join(f"{n} new {t} rows" for t, n in report.added.items()) or "no rows"
    err.print(styled(f"loaded {len(report.files)} files:", "green", f" {added}"))


@data_app.command("summary")
def data_summary(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    store: StoreOption = None,
) -> None:
    """Rows per table; rows, series and time span per source."""
    from spotwise.pricing.operational import operational_url

    with open_store(store, read_only=True) as market:
        summary = market.summary()
    if operational_url() is not None:
        with open_operational_store(store, read_only=True) as operational:
            summary["operational"] = operational.summary()
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    _print_summary(summary)


def _print_summary(summary: dict[str, Any]) -> None:
    versions = ", ".join(f"{name} v{v}" for name, v in summary["schemas"].items())
    out.print(f"store {summary['store']} ({versions})")
    tables = Table("table", "rows", title="tables")
    for table, rows in summary["tables"].items():
        tables.add_row(table, f"{rows:,}")
    out.print(tables)
    sources = Table("source", "table", "rows", "series", "from", "to", title="sources")
    for source, per_table in summary["sources"].items():
        for table, stats in per_table.items():
            sources.add_row(
                source,
                table,
                f"{stats['rows']:,}",
                f"{stats['series']:,}",
                *_span(stats),
            )
    out.print(sources)
    if any(s.get("relative_time") for t in summary["sources"].values() for s in t.values()):
        out.print("+N h: hours from the start of a trace whose files carry no date")
    if "operational" in summary:
        database = summary["operational"]
        rows = ", ".join(f"{table} {n:,}" for table, n in database["tables"].items())
        out.print(f"jobs, ledger, forecasts and placement scores in {database['store']}: {rows}")


def _span(stats: dict[str, Any]) -> tuple[str, str]:
    """A source's first and last time: dates, or hours from its start when it has none."""
    if not stats.get("relative_time"):
        return stats["start"][:16], stats["end"][:16]
    from datetime import datetime

    start, end = (datetime.fromisoformat(stats[k]) for k in ("start", "end"))
    return "+0 h", f"+{(end - start).total_seconds() / 3600:.1f} h"


@data_app.command("export")
def data_export(
    table: Annotated[
        str, typer.Option("--table", help=f"One of: {', '.join(exportable_tables())}.")
    ],
    parquet: Annotated[Path, typer.Option("--parquet", help="Parquet file to write.")],
    store: StoreOption = None,
) -> None:
    """Export one table to a Parquet file."""
    with open_store(store, read_only=True) as market:
        try:
            rows = market.export_parquet(table, parquet)
        except PricingError as exc:
            fail(str(exc))
    say(f"wrote {rows} {table} rows to {parquet}")


@data_app.command("remove")
def data_remove(
    source: Annotated[
        str, typer.Option("--source", help="The source to drop (as `data summary` names it).")
    ],
    store: StoreOption = None,
) -> None:
    """Drop every row of one source (e.g. a collection with too little history), in one
    transaction; `data load` or `collect` brings it back."""
    with open_store(store) as market:
        known = set(market.summary()["sources"])
        if source not in known:
            fail(
                f"the store {market.path} holds no source {source!r}; its sources: "
                f"{', '.join(sorted(known)) or 'none'}"
            )
        try:
            removed = market.remove_source(source)
        except PricingError as exc:
            fail(str(exc))
    say(f"removed {source}: " + ", ".join(f"{n} {table} rows" for table, n in removed.items()))


def _collect_on_demand(
    store: Path | None,
    region: str,
    types: list[str],
    endpoint_url: str | None,
    max_attempts: int,
) -> None:
    """``collect aws --on-demand``: the region's on-demand prices from the AWS Price List."""
    from botocore.exceptions import BotoCoreError, ClientError

    from spotwise.pricing.sources.aws_price_list import collect_on_demand_into

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

    from spotwise.pricing.sources.advisor import ADVISOR_URL
    from spotwise.pricing.sources.aws import collect_into

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
    from spotwise.pricing.sources.gcp_billing import collect_gcp_into

    chosen = _cloud_shapes("gcp", shapes, gpu)
    start = _parse_since(since)
    names = _names(regions, "--regions")
    endpoint = settings.current().gcp_billing_endpoint
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
    from spotwise.pricing.sources.azure_prices import collect_azure_into

    chosen = _cloud_shapes("azure", vm_sizes, gpu)
    names = _names(regions, "--regions")
    if not names:
        fail("--regions: name at least one Azure region, e.g. eastus")
    ids = _names(subscriptions, "--subscriptions")
    current = settings.current()
    path = ready_store(store)
    with _collecting("azure") as show:
        report, added = collect_azure_into(
            path,
            regions=names,
            shapes=chosen,
            prices_url=current.azure_prices_url,
            graph_url=current.azure_resource_graph_url if resource_graph else None,
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


@app.command()
def demo(
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print {completed, preemptions, migrations, bitwise_identical, cost_usd, "
            "on_demand_cost_usd} (+ job_id and the ledger) on stdout.",
        ),
    ] = False,
    store: StoreOption = None,
) -> None:
    """The main job end to end: load the bundled data, fit forecasts, plan a job, then train
    the example under the supervisor on replayed real V100 traces (preemptions, a migration,
    bit-exact resume) and print the cost report. SIGINT or SIGTERM stops it at any step
    (exit 128 + the signal), even where the shell that started it ignores Ctrl-C."""
    from spotwise.executor.errors import Cancelled

    with _stopped_by_signals() as stopped:
        try:
            _demo(as_json=as_json, store=store)
        except Cancelled as exc:  # the supervised run had the job checkpoint and stop
            stopped.append(exc.signum)
    if stopped:
        say(f"demo stopped by {signal.Signals(stopped[0]).name}: nothing more was run")
        raise typer.Exit(128 + stopped[0])


class _Interrupted(BaseException):
    """A stop signal, raised where the demo is (the supervised run catches its own)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def _stopped_by_signals() -> Iterator[list[int]]:
    """SIGINT and SIGTERM end the block at once; the list gets the signal's number."""

    def interrupt(signum: int, _: FrameType | None) -> None:
        raise _Interrupted(signum)

    stopped: list[int] = []
    previous = {s: signal.signal(s, interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stopped
    except _Interrupted as exc:
        stopped.append(exc.signum)
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


def _demo(*, as_json: bool, store: Path | None) -> None:
    """:func:`demo`'s steps."""
    from spotwise.executor.demo import run_example
    from spotwise.executor.errors import Cancelled
    from spotwise.policy.traces import load_traces
    from spotwise.pricing.forecast.run import run_forecasts
    from spotwise.reports import print_report

    def step(message: str) -> None:
        err.print(styled("›", "bold", f" {message}"))

    step("loading the bundled real data")
    report = _load(store, [settings.bundled_data_dir()], None)
    with open_store(store, read_only=True) as market:
        store_path = market.path
        if not as_json:
            _print_load_report(report)
            _print_summary(market.summary())
    step("fitting price and preemption-risk forecasts")
    try:
        forecasts = run_forecasts(store_path, progress=lambda m: say(f"  {m}"))
    except PricingError as exc:
        fail(str(exc))
    step(
        f"forecasts: {forecasts.price_series} price series, {forecasts.risk_pools} pools "
        f"in {forecasts.seconds:.0f} s"
    )
    with open_store(store, read_only=True) as market:
        _print_plan(market)
    traces = load_traces(settings.bundled_traces())
    try:
        result = run_example(store_path, traces, step)
    except Cancelled:
        raise
    except (ExecutorError, PolicyError) as exc:
        fail(str(exc))
    if as_json:
        print(json.dumps(result.to_dict(), default=str))
        return
    print_report(result.ledger, as_json=False)
    out.print(
        f"bit-exact resume: {result.bitwise_identical}; see it with "
        f"`spotwise jobs show {result.job_id}` or `spotwise dashboard`"
    )


def _print_plan(market: MarketStore) -> None:
    """The planner's pick for the demo's kind of job (a V100 instance, p3.2xlarge)."""
    from spotwise.policy.market import pools_from_store
    from spotwise.policy.plan import PlanInputs, plan_job, price_sources

    pools = pools_from_store(market, "p3.2xlarge", "aws", None).pools
    if not pools:
        return
    plan = plan_job(PlanInputs(gpu_hours=48, deadline_hours=60), pools).best
    err.print(
        styled(
            "›",
            "bold",
            f" plan for 48 GPU-hours of p3.2xlarge in 60 h: {plan.pool.name}, "
            f"{plan.spot_share:.0%} spot, checkpoint every "
            f"{60 * plan.checkpoint_interval_hours:.0f} min, ${plan.cost.total:,.2f} against "
            f"${plan.cost.on_demand:,.2f} on demand ({price_sources(plan.pool)})",
        )
    )


def main() -> None:
    """Entry point of the ``spotwise`` console script."""
    try:
        app()
    except BrokenPipeError:
        sys.exit(0)
    except settings.SettingsError as exc:
        say(f"error: {exc}")
        sys.exit(2)

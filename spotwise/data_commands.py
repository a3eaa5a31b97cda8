"""``spotwise data``: load files into the market store, summarise, export and remove them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

import spotwise.executor.ledger.schema  # noqa: F401  (every store the CLI opens holds the ledger too)
from spotwise.console import (
    StoreOption,
    err,
    fail,
    open_operational_store,
    open_store,
    out,
    say,
    styled,
)
from spotwise.core import settings
from spotwise.pricing.errors import PricingError
from spotwise.pricing.schemas import exportable_tables

if TYPE_CHECKING:
    from spotwise.pricing.ingest import LoadReport
    from spotwise.pricing.store import SourceSpan, StoreSummary


data_app = typer.Typer(
    help="Load, summarise and export the market store.", no_args_is_help=True, rich_markup_mode=None
)


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
            help="Format of every file (default: recognised from content; docs/data.md and an "
            "unknown name list the formats).",
            show_default=False,
        ),
    ] = None,
    store: StoreOption = None,
) -> None:
    """Load market data files into the store (one transaction: all or nothing)."""
    report = load_files(store, paths or [settings.bundled_data_dir()], format_name)
    print_load_report(report)


def load_files(store: Path | None, paths: list[Path], format_name: str | None) -> LoadReport:
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


def print_load_report(report: LoadReport) -> None:
    """What each file added to the store, and what it skipped."""
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
    with open_store(store, read_only=True) as market:
        summary = market.summary()
    with open_operational_store(store, read_only=True) as operational:
        summary = replace(summary, operational=operational.summary())
    if as_json:
        print(json.dumps(summary.to_dict(), indent=2))
        return
    print_summary(summary)


def print_summary(summary: StoreSummary) -> None:
    """The store's schemas, tables and spans, as ``data summary`` prints them."""
    versions = ", ".join(f"{name} v{v}" for name, v in summary.schemas.items())
    out.print(f"store {summary.store} ({versions})")
    tables = Table("table", "rows", title="tables")
    for table, n in summary.tables.items():
        tables.add_row(table, f"{n:,}")
    out.print(tables)
    sources = Table("source", "table", "rows", "series", "from", "to", title="sources")
    for source, per_table in summary.sources.items():
        for table, span in per_table.items():
            sources.add_row(source, table, f"{span.rows:,}", f"{span.series:,}", *_span(span))
    out.print(sources)
    if any(s.relative_time for t in summary.sources.values() for s in t.values()):
        out.print("+N h: hours from the start of a trace whose files carry no date")
    if summary.operational is not None:
        database = summary.operational
        counts = ", ".join(f"{table} {n:,}" for table, n in database.tables.items())
        out.print(f"jobs, ledger, forecasts and placement scores in {database.store}: {counts}")


def _span(span: SourceSpan) -> tuple[str, str]:
    """A source's first and last time: dates, or hours from its start when it has none."""
    if not span.relative_time:
        return str(span.start)[:16], str(span.end)[:16]
    from datetime import datetime

    start, end = (datetime.fromisoformat(str(t)) for t in (span.start, span.end))
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
    from spotwise.pricing.operational import OPERATIONAL_TABLES, export_parquet

    if table in OPERATIONAL_TABLES:
        with open_operational_store(store, read_only=True) as operational:
            rows = export_parquet(operational, table, parquet)
    else:
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
        known = set(market.summary().sources)
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

"""``spotwise jobs``: the supervised jobs in the ledger, their reports, their logs, and
cancelling one from another shell."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from spotwise.console import (
    StoreOption,
    fail,
    open_operational_store,
    open_store,
    out,
    ready_store,
    say,
)
from spotwise.core import settings
from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.executor.errors import ExecutorError
from spotwise.pricing.errors import PricingError
from spotwise.pricing.operational import OperationalStore
from spotwise.reports import print_report

if TYPE_CHECKING:
    from spotwise.executor.supervise.job_log import InstanceLog

jobs_app = typer.Typer(
    help="The executor's cost ledger.", no_args_is_help=True, rich_markup_mode=None
)


@contextmanager
def _ledger_store(store: Path | None) -> Iterator[OperationalStore]:
    """The store for reading the ledger: read-only (other readers share it, and no writer waits
    for it), unless a gone supervisor left ledger writes pending: then opened for writing, to
    write them first. An older store is brought up to date either way."""
    from spotwise.executor.ledger.journal import has_orphans, replay_orphans
    from spotwise.pricing.operational import operational_exists

    path = settings.store_path(store)
    write = operational_exists(path) and has_orphans(path)
    with open_operational_store(store, read_only=not write) as market:
        if write:
            replay_orphans(market)
        yield market


@jobs_app.command("list")
def jobs_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print the jobs as JSON.")] = False,
    store: StoreOption = None,
) -> None:
    """Every supervised job: status, cost so far, preemptions, migrations."""
    from spotwise.executor.ledger.ledger import list_jobs

    with _ledger_store(store) as market:
        rows = list_jobs(market)
    if as_json:
        lines = [r.to_dict() for r in rows]
        print(json.dumps(lines, default=lambda v: v.isoformat() if hasattr(v, "isoformat") else v))
        return
    if not rows:
        out.print("no jobs yet: run `spotwise demo` or `spotwise run -- COMMAND`")
        return
    table = Table("job", "name", "status", "started", "cost $", "preemptions", "migrations")
    for row in rows:
        table.add_row(
            row.job_id,
            row.name,
            row.status + (f" ({row.pending} pending)" if row.pending else ""),
            str(row.started)[:19],
            f"{row.cost_usd:,.2f}" + (" (simulated)" if row.simulated else ""),
            str(row.preemptions),
            str(row.migrations),
        )
    out.print(table)


@jobs_app.command("cancel")
def jobs_cancel(
    job_id: Annotated[str, typer.Argument(help="A running job's id (`spotwise jobs list`).")],
    wait_s: Annotated[
        float, typer.Option("--wait-s", min=0.0, help="Seconds to wait for it to stop.")
    ] = 60.0,
    store: StoreOption = None,
) -> None:
    """Cancel a running job: its supervisor passes a notice, waits for the checkpoint, stops
    the job and everything it runs (cloud instances too), and records it cancelled."""
    from spotwise.executor.supervise.cancel import cancel_job

    path = ready_store(store)
    try:
        status = cancel_job(path, job_id, wait_s=wait_s)
    except (ExecutorError, PricingError) as exc:
        fail(str(exc))
    out.print(f"job {job_id}: {status}")


@jobs_app.command("logs")
def jobs_logs(
    job_id: Annotated[str, typer.Argument(help="A job id from `spotwise jobs list`.")],
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing until the job ends.")
    ] = False,
    poll_s: Annotated[float, typer.Option("--poll-s", min=0.05, hidden=True)] = 1.0,
    store: StoreOption = None,
) -> None:
    """What the job's command printed, instance by instance (each opened by a line naming it),
    prefixed by where each ran; on stderr, what an instance that printed nothing yet waits for."""

    from spotwise.executor.supervise.job_log import instance_logs, log_folder

    path = settings.store_path(store)
    printed: dict[int, int] = {}
    """Lines printed of each instance (by its number)."""
    told: set[int] = set()
    while True:
        status = _job_status(store, job_id)
        logs = instance_logs(log_folder(path, job_id))
        _print_new_lines(logs, printed)
        _say_what_is_missing(job_id, status, logs, told)
        if not follow or status != "running":
            return
        SYSTEM_CLOCK.sleep(poll_s)


def _job_status(store: Path | None, job_id: str) -> str:
    """The job's status in the ledger now (no such job: one line and exit)."""
    from spotwise.executor.ledger.ledger import job_report

    with open_operational_store(store, read_only=True) as market:
        try:
            return job_report(market, job_id).status
        except PricingError as exc:
            fail(str(exc))


def _print_new_lines(logs: list[InstanceLog], printed: dict[int, int]) -> None:
    """The lines of ``logs`` not yet ``printed`` (each instance's opened by its marker line),
    prefixed by where they ran; ``printed`` counts them."""
    for log in logs:
        if log.number not in printed:
            out.print(log.marker(), markup=False, highlight=False, soft_wrap=True)
            printed[log.number] = 0
        for line in log.lines[printed[log.number] :]:
            out.print(f"[{log.where}] {line}", markup=False, highlight=False, soft_wrap=True)
        printed[log.number] = len(log.lines)


def _say_what_is_missing(job_id: str, status: str, logs: list[InstanceLog], told: set[int]) -> None:
    """On stderr: what a running job's latest instance that printed nothing waits for (once
    per instance, ``told`` keeping count), or that an ended job printed nothing at all."""
    last = logs[-1] if logs else None
    if status == "running" and (last is None or not last.lines):
        key = last.number if last is not None else 0
        if key not in told:
            told.add(key)
            say(_no_output_yet(job_id, last))
    elif status != "running" and not any(log.lines for log in logs):
        say(f"job {job_id} ({status}) printed nothing")


def _no_output_yet(job_id: str, log: Any, clock: Clock = SYSTEM_CLOCK) -> str:
    """What a running job that has printed nothing (yet) waits for."""
    if log is None:
        return f"job {job_id}: no instance has started yet (the supervisor is choosing where)"
    since = ""
    if log.launched_at is not None:
        minutes = max(0.0, clock.time() - log.launched_at) / 60
        since = f", launched {minutes:.0f} min ago" if minutes >= 1 else ", launched just now"
    named = f" ({log.instance_id})" if log.instance_id else ""
    return (
        f"job {job_id}: instance {log.number}{named} on {log.where}{since}, no output yet "
        "(a cloud instance boots, fetches the code and sets up first); --follow waits for it"
    )


@jobs_app.command("show")
def jobs_show(
    job_id: Annotated[str, typer.Argument(help="A job id from `spotwise jobs list`.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    store: StoreOption = None,
) -> None:
    """One job's cost so far, savings against on-demand and cost breakdown (a reference price
    replaced by the store's quote where prices were collected after the job was priced)."""
    from spotwise.executor.ledger.ledger import job_report
    from spotwise.executor.ledger.prices import requoted

    with _ledger_store(store) as market:
        try:
            report = job_report(market, job_id)
        except PricingError as exc:
            fail(str(exc))
    collected = settings.store_path(store).exists()  # none: the ledger's own prices stand
    if report.prices is not None and report.prices.has_references() and collected:
        with open_store(store, read_only=True) as prices_store:
            book = requoted(report.prices, prices_store, report.pools_used)
        if book != report.prices:
            with _ledger_store(store) as market:
                report = job_report(market, job_id, prices=book)
    print_report(report, as_json)

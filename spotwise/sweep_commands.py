"""``spotwise sweep``: hyperparameter sweeps and work queues on spot, on Optuna."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from spotwise.cloud_options import GIVEN, cloud_options
from spotwise.console import (
    OnDemandPriceOption,
    PolicyNameOption,
    SpotPriceOption,
    StoreOption,
    err,
    fail,
    out,
    plural,
    positive,
    ready_store,
)
from spotwise.core import settings
from spotwise.executor.clouds.base import CloudOptions, CloudTarget
from spotwise.executor.clouds.registry import CLOUDS
from spotwise.executor.errors import ExecutorError
from spotwise.pricing.errors import PricingError

if TYPE_CHECKING:
    from spotwise.executor.sweeps.sweep import SweepSource

sweep_app = typer.Typer(
    help="Sweeps and work queues: many trials, each a supervised job on spot.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

StorageOption = Annotated[
    str | None,
    typer.Option(
        "--storage",
        help="Optuna storage URL shared by every worker (e.g. postgresql://user@host/db for "
        "workers on many machines; default: a SQLite file in the sweep's folder).",
        show_default=False,
    ),
]


def _storage_for(storage: str | None, store_path: Path, name: str) -> tuple[str, Path]:
    from spotwise.executor.sweeps.sweep import default_storage, sweep_folder

    folder = sweep_folder(store_path, name)
    return storage or default_storage(folder), folder


@sweep_app.command(
    "run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
)
@cloud_options()
def sweep_run(
    ctx: typer.Context,
    spec: Annotated[
        str | None,
        typer.Argument(help="The sweep spec (.toml or .yaml); or --grid and a command after --."),
    ] = None,
    grid: Annotated[
        list[str] | None,
        typer.Option(
            "--grid",
            help="A work queue: NAME=0..N-1 or NAME=a,b,c (repeat), each point run at least "
            "once by the command after -- ({NAME} in it is replaced).",
            show_default=False,
        ),
    ] = None,
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            help="A work queue's name (a spec names its own). Default: queue-HASH, from its "
            "command and grid, so the same queue run again resumes it.",
            show_default=False,
        ),
    ] = None,
    fresh: Annotated[
        bool,
        typer.Option(
            "--start-over",
            help="Delete the stored sweep or queue of this name (its study and its trials' "
            "checkpoints here) and run it from the start.",
        ),
    ] = False,
    workers: Annotated[
        int, typer.Option("--workers", min=1, max=64, help="Worker processes on this machine.")
    ] = 1,
    storage: StorageOption = None,
    deadline_hours: Annotated[
        float | None,
        typer.Option(
            "--deadline-hours",
            callback=positive,
            help="The whole sweep's deadline (cloud hours): its slack is shared among the "
            "trials left, so late trials fall back to on-demand and early ones wait for spot; "
            "no trial starts after it.",
            show_default=False,
        ),
    ] = None,
    budget: Annotated[
        float | None,
        typer.Option(
            "--budget",
            callback=positive,
            help="USD the sweep may spend (from the ledger); no trial starts past it.",
            show_default=False,
        ),
    ] = None,
    traces: Annotated[
        Path | None,
        typer.Option(
            "--traces", help="The traces to replay (default: bundled).", show_default=False
        ),
    ] = None,
    pools: Annotated[
        str | None, typer.Option("--pools", help="Pools to use (trace names), comma-separated.")
    ] = None,
    start_hours: Annotated[
        float, typer.Option("--start-hours", min=0.0, help="Replay from this trace hour.")
    ] = 0.0,
    scale: Annotated[
        float, typer.Option("--scale", min=1.0, help="Trace seconds per wall second.")
    ] = 1000.0,
    step_seconds: Annotated[
        float | None,
        typer.Option(
            "--step-seconds",
            callback=positive,
            help="Pace the replay by the guard's steps: cloud seconds per training step.",
            show_default=False,
        ),
    ] = None,
    boot_seconds: Annotated[
        float, typer.Option("--boot-seconds", min=0.0, help="With --step-seconds: per launch.")
    ] = 0.0,
    policy_name: PolicyNameOption = "best",
    spot_price: SpotPriceOption = None,
    on_demand_price: OnDemandPriceOption = None,
    heartbeat_s: Annotated[
        int,
        typer.Option(
            "--heartbeat-s",
            min=1,
            max=3600,
            help="Seconds between a trial's heartbeats; one silent for three is retried.",
        ),
    ] = 10,
    max_retry: Annotated[
        int, typer.Option("--max-retry", min=0, max=100, help="Retries of one trial.")
    ] = 3,
    launcher: Annotated[
        str,
        typer.Option(
            "--launcher", help=f"local (replayed traces) or a cloud: {', '.join(CLOUDS)}."
        ),
    ] = "local",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the sweep's report as JSON.")
    ] = False,
    store: StoreOption = None,
    cloud: CloudOptions = GIVEN,
) -> None:
    """Run a sweep (an Optuna study) with trials as supervised jobs: a preempted trial resumes
    from its checkpoint, a dead worker's trial is retried by another, pruned trials stop at
    once. Run it on more machines with the same --storage URL to add workers there."""
    from spotwise.executor.sweeps.report import sweep_report
    from spotwise.executor.sweeps.sweep import ReplayMarket, SweepConfig, start_over
    from spotwise.executor.sweeps.workers import run_workers

    source = _sweep_source(spec, grid, name, tuple(ctx.args))
    _check_launcher(launcher, fresh)
    try:
        target = _cloud_target(launcher, cloud, pools)
        loaded = source.load()  # a bad spec is refused before anything is made
    except ExecutorError as exc:
        fail(str(exc))
    if source.spec_file is None and name is None:
        err.print(
            f"… work queue {loaded.name} (named from its command and grid; --name to choose)",
            markup=False,
            highlight=False,
        )
    path = ready_store(store)
    try:
        url, folder = _storage_for(storage, path, loaded.name)
        config = SweepConfig(
            source=source,
            store=str(path),
            storage=url,
            root=str(folder),
            market=ReplayMarket(
                traces=str(traces or settings.bundled_traces()),
                pools=_pool_names(pools),
                start_hours=start_hours,
                scale=scale,
                step_s=step_seconds,
                boot_s=boot_seconds,
            ),
            cloud=target,
            workers=workers,
            deadline_hours=deadline_hours,
            budget_usd=budget,
            policy=policy_name,
            spot_price=spot_price,
            on_demand_price=on_demand_price,
            heartbeat_s=heartbeat_s,
            max_retry=max_retry,
        )
        if fresh and start_over(config, loaded):
            err.print(f"… {loaded.name}: the stored one deleted, starting over", markup=False)
        ended = run_workers(config, lambda m: err.print(f"… {m}", markup=False, highlight=False))
        report = sweep_report(url, loaded.name, path)
    except (ExecutorError, PricingError) as exc:
        fail(str(exc))
    _print_report(report.to_dict(), as_json)
    if ended.interrupted is not None:
        raise typer.Exit(128 + ended.interrupted)
    if any(ended.exit_codes):
        fail(f"workers exited with {list(ended.exit_codes)}: their logs are in {folder}")
    _fail_if_failed(report.to_dict(), folder)


def _sweep_source(
    spec: str | None, grid: list[str] | None, name: str | None, command: tuple[str, ...]
) -> SweepSource:
    """What the sweep runs: a spec file, or a grid and the command after ``--``."""
    from spotwise.executor.sweeps.sweep import SweepSource

    if grid and spec is not None:  # with --grid, the first word after -- is the program
        command, spec = (spec, *command), None
    if spec is not None and command:
        fail("a spec file names its own command; give the spec, or --grid with a command after --")
    return SweepSource(
        spec_file=str(Path(spec).resolve()) if spec is not None else None,
        name=name,
        grid=tuple(grid or ()),
        command=command,
    )


def _check_launcher(launcher: str, fresh: bool) -> None:
    """Refuse a launcher that is neither local nor a cloud, and --start-over on a cloud."""
    if launcher != "local" and launcher not in CLOUDS:
        fail(f"--launcher must be local or one of {', '.join(CLOUDS)}, got {launcher[:40]!r}")
    if fresh and launcher in CLOUDS:
        fail(
            f"--start-over deletes trials' checkpoints on this machine, but on {launcher} they "
            "are in the bucket, where a new trial would resume an old one's: give another --name"
        )


def _cloud_target(launcher: str, cloud: CloudOptions, pools: str | None) -> CloudTarget | None:
    """The cloud's target the trials launch on, complete (None for the local launcher)."""
    if launcher not in CLOUDS:
        return None
    workdir = str(Path(cloud.workdir).resolve())
    target = CLOUDS[launcher].target(replace(cloud, zones=_pool_names(pools), workdir=workdir))
    target.require_complete()
    return target


def _pool_names(pools: str | None) -> tuple[str, ...]:
    """The pools of a comma-separated --pools, blanks dropped."""
    return tuple(p.strip() for p in (pools or "").split(",") if p.strip())


def _fail_if_failed(report: dict[str, Any], folder: Path) -> None:
    """Exit 1 when a work queue has a task that failed (after its retries), or when every
    trial of a sweep did: the work was not done."""
    trials = report["trials"]
    failed = [t for t in trials if t["state"] == "fail"]
    what = "task" if report["queue"] else "trial"
    if not failed or (not report["queue"] and len(failed) < len(trials)):
        return
    first = failed[0]
    why = f"; {what} {first['trial']}: {first['why']}" if first.get("why") else ""
    count = (
        f"every {what} failed ({len(failed)})"
        if len(failed) == len(trials)
        else f"{len(failed)} of {len(trials)} {what}s failed"
    )
    fail(
        f"{'work queue' if report['queue'] else 'sweep'} {report['sweep']}: {count}{why} "
        f"(`spotwise sweep show {report['sweep']}` lists them; the workers' logs are in {folder})"
    )


@sweep_app.command("worker", hidden=True)
def sweep_worker(
    config_file: Annotated[Path, typer.Argument(help="The worker's config (sweep run's).")],
) -> None:
    """One worker of a sweep (started by sweep run)."""
    from spotwise.executor.errors import Cancelled
    from spotwise.executor.sweeps.sweep import SweepConfig, SweepWorker

    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    try:
        config = SweepConfig.from_json(config_file.read_text())
        worker = SweepWorker(config, lambda m: print(m, flush=True))
        ran = worker.run()
    except Cancelled as exc:
        print(f"{exc}", flush=True)
        raise typer.Exit(128 + exc.signum) from None
    except (ExecutorError, PricingError, OSError, ValueError, KeyError) as exc:
        fail(str(exc))
    print(
        f"worker done: {plural(ran, 'trial')}"
        + (f"; {worker.stop_reason}" if worker.stop_reason else ""),
        flush=True,
    )


@sweep_app.command("show")
def sweep_show(
    name: Annotated[str, typer.Argument(help="The sweep's name (its spec's name).")],
    storage: StorageOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    store: StoreOption = None,
) -> None:
    """A sweep's trials: params, state, value, attempts, hours per market, preemptions, steps
    lost, cost against on-demand; and the sweep's totals and best trial."""
    from spotwise.executor.sweeps.report import sweep_report
    from spotwise.executor.sweeps.spec import SWEEP_NAME
    from spotwise.executor.sweeps.sweep import STUDY_FILE, default_storage, sweep_folder

    if not SWEEP_NAME.fullmatch(name):
        fail(f"{name[:40]!r} is not a sweep name (letters, digits, '.', '_', '-')")
    path = settings.store_path(store)
    url = storage
    if url is None:
        folder = sweep_folder(path, name, make=False)
        if not (folder / STUDY_FILE).exists():
            fail(f"no sweep {name!r} next to the store {path} (give --storage for another)")
        url = default_storage(folder)
    try:
        report = sweep_report(url, name, path)
    except (ExecutorError, PricingError) as exc:
        fail(str(exc))
    _print_report(report.to_dict(), as_json)


@sweep_app.command("list")
def sweep_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print the sweeps as JSON.")] = False,
    store: StoreOption = None,
) -> None:
    """Every sweep in the ledger: trials, jobs, how they ended, cost against on-demand."""
    from spotwise.console import open_operational_store
    from spotwise.executor.sweeps.report import ledger_sweeps
    from spotwise.pricing.operational import operational_exists

    if not operational_exists(settings.store_path(store)):
        fail(f"no store at {settings.store_path(store)}: run a sweep first (spotwise sweep demo)")
    with open_operational_store(store, read_only=True) as market:
        rows = ledger_sweeps(market)
    if as_json:
        print(json.dumps([r.to_dict() for r in rows], default=str))
        return
    if not rows:
        out.print("no sweeps yet: run `spotwise sweep demo` or `spotwise sweep run SPEC`")
        return
    table = Table(
        "sweep",
        "trials",
        "jobs",
        "completed",
        "pruned",
        "failed",
        "running",
        "cost $",
        "on-demand $",
        "saved",
        "preemptions",
    )
    for r in rows:
        label = " (simulated)" if r.money == "simulated" else ""
        table.add_row(
            r.sweep,
            str(r.trials),
            str(r.jobs),
            str(r.completed),
            str(r.pruned),
            str(r.failed),
            str(r.running),
            f"{r.cost_usd:,.2f}{label}",
            f"{r.on_demand_cost_usd:,.2f}{label}",
            f"{r.saved_pct:.1f}%",
            str(r.preemptions),
        )
    out.print(table)


@sweep_app.command("demo")
def sweep_demo(
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    store: StoreOption = None,
) -> None:
    """8 trials of the example model (learning rate × width) on 2 workers over replayed real
    V100 traces, with preemptions; then the best trial run again uninterrupted, bit for bit."""
    from spotwise.executor.sweeps.demo import run_sweep_demo

    path = ready_store(store)
    try:
        result = run_sweep_demo(
            path,
            settings.bundled_traces(),
            lambda m: err.print(f"… {m}", markup=False, highlight=False),
        )
    except (ExecutorError, PricingError) as exc:
        fail(str(exc))
    if as_json:
        print(json.dumps(result.to_dict()))
        return
    _print_report(result.report.to_dict(), False)
    out.print(
        f"best trial's rerun, uninterrupted: "
        f"{'bit for bit the same' if result.best_rerun_identical else 'DIFFERENT'}"
    )


def _print_report(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(report))
        return
    label = " (simulated)" if report["simulated"] else ""
    table = Table(
        "trial",
        "params",
        "state",
        "value",
        "tries",
        "spot h",
        "on-demand h",
        "preemptions",
        "steps lost",
        f"cost ${label}",
        f"on-demand ${label}",
    )
    for t in report["trials"]:
        table.add_row(
            str(t["trial"]),
            ", ".join(f"{k}={v}" for k, v in t["params"].items()),
            t["state"],
            "" if t["value"] is None or report["queue"] else f"{t['value']:.6g}",
            str(t["attempts"]),
            f"{t['hours'].get('spot', 0.0):.2f}",
            f"{t['hours'].get('on-demand', 0.0):.2f}",
            str(t["preemptions"]),
            str(t["steps_lost"]),
            f"{t['cost_usd']:,.2f}",
            f"{t['on_demand_cost_usd']:,.2f}",
        )
    out.print(table)
    out.print(
        f"sweep {report['sweep']}: {report['completed']} completed, {report['pruned']} pruned, "
        f"{report['failed']} failed; ${report['cost_usd']:,.2f}{label} against "
        f"${report['on_demand_cost_usd']:,.2f}{label} on demand "
        f"({report['savings_pct']:.1f}% saved)",
        highlight=False,
    )
    for line in report["prices"]:
        out.print(f"  {line}", highlight=False)
    for t in report["trials"]:
        for why in t["on_demand_why"]:
            out.print(f"trial {t['trial']} ran on demand: {why}", highlight=False, soft_wrap=True)
    if report["best"]:
        best = report["best"]
        params = ", ".join(f"{k}={v}" for k, v in best["params"].items())
        out.print(f"best: trial {best['trial']} ({params}), value {best['value']:.6g}")

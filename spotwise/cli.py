"""The ``spotwise`` command line: the only place that wires the packages together.

Heavy libraries (pandas, torch, scikit-learn, ...) are imported inside the commands that use
them, so that every command starts in well under a second (``spotwise bench startup``).
"""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer

import spotwise.executor.ledger.schema  # noqa: F401  (every store the CLI opens holds the ledger too)
from spotwise import (
    bench_commands,
    cloud_commands,
    collect_commands,
    dashboard_command,
    data_commands,
    fleet_commands,
    forecast_commands,
    jobs_commands,
    plan_command,
    policy_commands,
    run_command,
    serve_command,
    sweep_commands,
    try_command,
)
from spotwise.console import (
    StoreOption,
    err,
    fail,
    open_store,
    out,
    say,
    styled,
)
from spotwise.core import settings
from spotwise.executor.errors import ExecutorError
from spotwise.policy.errors import PolicyError
from spotwise.pricing.errors import PricingError

if TYPE_CHECKING:
    from spotwise.pricing.store import MarketStore

app = typer.Typer(
    help="Spotwise: train ML models cheaply and safely on spot GPUs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's help: option names are never cut short at 80 columns
)


def _print_version(asked: bool) -> None:
    """``--version``: the installed package's version, read from its metadata (no import)."""
    if asked:
        from importlib.metadata import version

        print(f"spotwise {version('spotwise')}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_print_version,
            help="Print the installed Spotwise version and exit.",
        ),
    ] = False,
) -> None:
    """The options before any command: ``--version``."""


app.add_typer(data_commands.data_app, name="data")
app.add_typer(collect_commands.collect_app, name="collect")
app.add_typer(bench_commands.bench_app, name="bench")
app.command("plan")(plan_command.plan)
app.add_typer(forecast_commands.forecast_app, name="forecast")
app.add_typer(policy_commands.policy_app, name="policy")
app.command("serve")(serve_command.serve)
app.command("run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(
    run_command.run
)
app.add_typer(jobs_commands.jobs_app, name="jobs")
app.add_typer(sweep_commands.sweep_app, name="sweep")
app.add_typer(fleet_commands.fleet_app, name="fleet")
app.add_typer(cloud_commands.gc_app, name="gc")
app.add_typer(cloud_commands.check_app, name="check")
app.add_typer(cloud_commands.setup_app, name="setup")
app.command("dashboard")(dashboard_command.dashboard)
app.add_typer(try_command.try_app, name="try")


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
    report = data_commands.load_files(store, [settings.bundled_data_dir()], None)
    with open_store(store, read_only=True) as market:
        store_path = market.path
        if not as_json:
            data_commands.print_load_report(report)
            data_commands.print_summary(market.summary())
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

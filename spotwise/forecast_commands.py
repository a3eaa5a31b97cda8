"""Commands of forecasting: ``spotwise bench risk``."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from spotwise.console import (
    BarSteps,
    StoreOption,
    err,
    fail,
    out,
    progress_bar,
    ready_store,
    say,
    styled,
)
from spotwise.core import settings
from spotwise.pricing.errors import PricingError
from spotwise.pricing.forecast.risk import RISK_MODELS

if TYPE_CHECKING:
    from spotwise.pricing.forecast.risk_bench import RiskBench

HorizonHours = Annotated[
    int, typer.Option("--horizon-hours", min=1, help="Hours ahead to forecast prices.")
]


def bench_risk_command(
    traces: Annotated[
        Path | None,
        typer.Option(
            "--traces",
            help="Folder of 1-node CBL JSON traces (0 = available); default: the "
            "bundled 9-zone aws-02-15-2023 traces.",
            show_default=False,
        ),
    ] = None,
    test_from_hours: Annotated[
        float,
        typer.Option("--test-from-hours", min=0.0, help="Fit before this hour, score from it on."),
    ] = 480.0,
    horizon_minutes: Annotated[
        float,
        typer.Option(
            "--horizon-minutes", min=0.0, help="Risk of a preemption within this horizon."
        ),
    ] = 60.0,
    models: Annotated[
        str, typer.Option("--models", help="Comma-separated risk models.")
    ] = ",".join(RISK_MODELS),
    advisor: Annotated[
        list[Path] | None,
        typer.Option(
            "--advisor",
            exists=True,
            dir_okay=False,
            help="Spot Advisor snapshot(s) for the pools' bands (repeat); default: the bundled "
            "ones. The newest taken before the traces start is used.",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Backtest preemption-risk models: AUC and Brier against climatology and persistence."""
    from spotwise.pricing.forecast.risk_bench import bench_risk

    names = _risk_models(models)
    folder = traces or settings.bundled_traces()
    err.print(f"… fitting {', '.join(names)} on {folder.name} before hour {test_from_hours:g}")
    try:
        result = bench_risk(
            folder,
            test_from_hours=test_from_hours,
            horizon_minutes=horizon_minutes,
            models=names,
            advisor=advisor or settings.bundled_advisor_snapshots(),
        )
    except (ValueError, PricingError) as exc:
        fail(str(exc))
    if as_json:
        print(json.dumps(result.to_dict(), indent=2))
        return
    _print_risk_bench(result, horizon_minutes)


def _risk_models(models: str) -> list[str]:
    """The risk models of a comma-separated --models, each one known."""
    names = [m.strip() for m in models.split(",") if m.strip()]
    unknown = [m for m in names if m not in RISK_MODELS]
    if unknown:
        fail(f"unknown risk model(s) {unknown}; choose from {', '.join(RISK_MODELS)}")
    return names


def _print_risk_bench(result: RiskBench, horizon_minutes: float) -> None:
    """The backtest as a table: each model's and forecaster's AUC and Brier, and the baselines."""
    table = Table(
        "model",
        "AUC",
        "Brier",
        title=f"risk within {horizon_minutes:g} min, {result.n} test ticks",
    )
    for name, scores in result.models.items():
        table.add_row(name, f"{scores['auc']:.3f}", f"{scores['brier']:.3f}")
    for name, scores in result.forecasters.items():
        table.add_row(f"forecaster {name}", f"{scores['auc']:.3f}", f"{scores['brier']:.3f}")
    table.add_row("climatology", "-", f"{result.climatology_brier:.3f}")
    table.add_row("persistence", f"{result.persistence_auc:.3f}", "-")
    out.print(table)
    out.print(
        f"forecaster chosen on the training ticks: {result.forecaster_choice}; the decisions "
        f"act on: {result.shipped_forecaster}"
    )


def bench_price_command(
    prices: Annotated[
        Path | None,
        typer.Option(
            "--prices",
            help="CSV in the AWS describe-spot-price-history format (default: the "
            "bundled history).",
            show_default=False,
        ),
    ] = None,
    test_from: Annotated[
        str, typer.Option("--test-from", help="First origin (ISO date, UTC); then one per day.")
    ] = "2020-01-15",
    horizon_hours: HorizonHours = 24,
    refit_every_days: Annotated[
        int,
        typer.Option(
            "--refit-every-days", min=1, help="Refit the global GBM every this many origins."
        ),
    ] = 7,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Backtest price forecasters: MASE against the last value and 90 % interval coverage."""
    import pandas as pd

    from spotwise.pricing.errors import PricingError
    from spotwise.pricing.forecast.price_bench import bench_price

    try:
        start = pd.Timestamp(test_from)
    except ValueError:
        fail(f"--test-from {test_from!r} is not a date: give ISO 8601 like 2020-01-15")
    start = start.tz_localize("UTC") if start.tzinfo is None else start.tz_convert("UTC")
    csv = prices or settings.bundled_prices()
    try:
        result = bench_price(
            csv,
            test_from=start,
            horizon_hours=horizon_hours,
            refit_every_days=refit_every_days,
            progress=lambda m: say(f"… {m}"),
        )
    except (ValueError, PricingError) as exc:
        fail(str(exc))
    err.print(f"… {result.seconds} s")
    if as_json:
        print(json.dumps(result.to_dict(), indent=2))
        return
    table = Table(
        "model",
        "MASE",
        "coverage 90 %",
        title=f"{result.n_series} series, {result.n_origins} origins, {horizon_hours} h ahead",
    )
    for name, scores in result.models.items():
        table.add_row(name, f"{scores['mase']:.3f}", f"{scores['coverage_90']:.1%}")
    out.print(table)


forecast_app = typer.Typer(
    help="Price and preemption-risk forecasts in the store.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@forecast_app.command("run")
def forecast_run(
    horizon_hours: HorizonHours = 24,
    risk_horizon_minutes: Annotated[
        float,
        typer.Option(
            "--risk-horizon-minutes", min=1.0, help="P(preempted within this many minutes)."
        ),
    ] = 60.0,
    store: StoreOption = None,
) -> None:
    """Forecast every price series and the preemption risk of every traced pool."""
    from spotwise.pricing.forecast.run import run_forecasts

    path = ready_store(store)
    try:
        with progress_bar() as bar:
            report = run_forecasts(
                path,
                horizon_hours=horizon_hours,
                risk_horizon_minutes=risk_horizon_minutes,
                progress=lambda m: bar.console.print(f"… {m}"),
                steps=BarSteps(bar, "forecasting series"),
            )
    except PricingError as exc:
        fail(str(exc))
    err.print(
        styled(
            f"wrote {report.rows} forecast rows",
            "green",
            f" for {report.price_series} price series and {report.risk_pools} pools in "
            f"{report.seconds} s",
        )
    )
    if report.short_series:
        say(short_series_note(report.short_series))


def short_series_note(series: tuple[str, ...]) -> str:
    """One line naming the price series left out for too little history, and the way out."""
    shown = ", ".join(series[:5]) + (f" and {len(series) - 5} more" if len(series) > 5 else "")
    return (
        f"left out {len(series)} price series with fewer than 3 points of history: {shown} "
        "(collect more, or `spotwise data remove --source NAME` drops a source)"
    )


@forecast_app.command("schedule")
def forecast_schedule(
    every: Annotated[str, typer.Option("--every", help="Period: 30s, 10m, 1h.")] = "10m",
    collect: Annotated[
        list[str] | None,
        typer.Option(
            "--collect",
            metavar="CLOUD:REGION",
            help="Also collect this region of this cloud first, as `spotwise collect CLOUD` "
            "does (repeat).",
            show_default=False,
        ),
    ] = None,
    collect_region: Annotated[
        list[str] | None, typer.Option("--collect-region", hidden=True)
    ] = None,
    horizon_hours: HorizonHours = 24,
    store: StoreOption = None,
) -> None:
    """Collect and forecast on a schedule in the foreground; Ctrl-C or SIGTERM stops it."""
    import logging

    from spotwise.pricing.jobs import parse_every, run_schedule

    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr
    )
    try:
        period = parse_every(every)
    except (ValueError, KeyError):
        fail(f"--every {every!r} is not a period: use e.g. 30s, 10m or 1h")
    if collect_region:
        fail(
            f"--collect-region {collect_region[0]}: name its cloud too, --collect "
            f"CLOUD:{collect_region[0]} (CLOUD one of {', '.join(_collect_clouds())})"
        )
    try:
        lines = collect_lines(collect or [])
    except ValueError as exc:
        fail(str(exc))

    def job() -> str:
        from spotwise.pricing.forecast.run import run_forecasts
        from spotwise.pricing.store import MarketStore

        path = settings.store_path(store)
        MarketStore.open(path).close()  # made and brought up to date, held by neither
        for line in lines:
            run_collect(line, path)
        report = run_forecasts(path, horizon_hours=horizon_hours)
        summary = f"{report.rows} forecast rows for {report.price_series} series"
        return summary + (
            f"; {short_series_note(report.short_series)}" if report.short_series else ""
        )

    try:
        run_schedule(job, period)
    except PricingError as exc:
        fail(str(exc))


_REGION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def _collect_clouds() -> list[str]:
    """The clouds with a ``spotwise collect`` command (their profiles'), sorted."""
    from spotwise.pricing.collect_commands import COLLECTORS

    return sorted(COLLECTORS)


def collect_lines(values: Sequence[str]) -> list[str]:
    """The ``spotwise collect`` line of each ``--collect CLOUD:REGION``, in order.

    Raises:
        ValueError: one line naming the first value that is not a known cloud and a region.
    """
    from spotwise.pricing.collect_commands import COLLECTORS, collect_command

    clouds = ", ".join(_collect_clouds())
    lines = []
    for value in values:
        cloud, _, region = value.partition(":")
        if not cloud or not region:
            raise ValueError(f"--collect {value!r}: write CLOUD:REGION, CLOUD one of {clouds}")
        if cloud not in COLLECTORS:
            raise ValueError(f"--collect {value!r}: no cloud {cloud!r}; use one of {clouds}")
        if not _REGION.match(region):
            raise ValueError(f"--collect {value!r}: {region!r} is not a region name")
        lines.append(collect_command(cloud, regions=[region]))
    return lines


class CollectFailed(RuntimeError):
    """A scheduled ``spotwise collect`` ended in an error (the next run tries again)."""


def run_collect(line: str, store: Path) -> None:
    """Run the ``spotwise collect`` command ``line`` into ``store`` in a process of its own.

    Raises:
        CollectFailed: naming the command and the last line it printed.
    """
    import subprocess

    argv = [sys.executable, "-m", *line.split(), "--store", str(store)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        said = [x.strip() for x in done.stderr.splitlines() if x.strip()] or ["no output"]
        raise CollectFailed(f"`{line}` failed (exit {done.returncode}): {said[-1]}")

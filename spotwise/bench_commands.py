"""The ``spotwise bench`` group: benchmarks that print JSON. The policy lab's (``suite``,
``policy``, ``fleet``) and the executor's (``checkpoint``, ``resume``) are here; the others are
registered here from the module of what they measure."""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.table import Table

from spotwise import bids_command, forecast_commands, serve_command, startup_bench, store_bench
from spotwise.arguments import comma_list
from spotwise.console import (
    ChangeoverHours,
    ComputeHours,
    DeadlineHours,
    ModelsOption,
    OnDemandPrice,
    SpotPrice,
    err,
    fail,
    finite,
    out,
    progress_bar,
    say,
)
from spotwise.core import settings
from spotwise.policy.errors import PolicyError
from spotwise.policy.job import REFERENCE, JobSpec
from spotwise.policy.observe import OBSERVE_MODES, ObserveMode

if TYPE_CHECKING:
    from spotwise.policy.lab.bench import BenchRun, BenchSummary
    from spotwise.policy.lab.suite import PolicyStats, SuiteRun, SuiteSummary
    from spotwise.policy.rl.catalog import ModelCatalog
    from spotwise.policy.simulate import CheckpointMode, Provider, Visibility

bench_app = typer.Typer(
    help="Benchmarks that print JSON.", no_args_is_help=True, rich_markup_mode=None
)

ObserveOption = Annotated[
    str,
    typer.Option(
        "--observe",
        help="What a policy sees: all (every pool every tick), current (the pool it runs in) or "
        "probe (current plus what launch requests teach).",
    ),
]
ProbeSecondsOption = Annotated[
    float,
    typer.Option(
        "--probe-seconds", min=0.0, callback=finite, help="Time a failed launch request takes."
    ),
]
HistoryOption = Annotated[
    str,
    typer.Option(
        "--history-hours",
        help="Hours of each pool's past a job is given: a number (0 = a cold start) or all.",
    ),
]


def _catalog(models: Path | None) -> ModelCatalog | None:
    """The learned models of ``--models`` (None: the shipped ones)."""
    if models is None:
        return None
    from spotwise.policy.rl.catalog import ModelCatalog

    return ModelCatalog(models)


def _observe_mode(value: str) -> ObserveMode:
    for mode in OBSERVE_MODES:
        if value == mode:
            return mode
    fail(f"--observe must be one of {', '.join(OBSERVE_MODES)}, got {value!r}")


def _history_hours(value: str) -> float | None:
    if value.strip().lower() == "all":
        return None
    try:
        hours = float(value)
    except ValueError:
        hours = -1.0
    if not (hours >= 0 and math.isfinite(hours)):
        fail(f"--history-hours must be a number of hours >= 0 or all, got {value!r}")
    return hours


@bench_app.command("suite")
def bench_suite(
    quick: Annotated[
        bool,
        typer.Option("--quick", help="One tight job shape, one changeover, jobs every 24 h."),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot", help="Write a PNG of the gap share per class and policy.", show_default=False
        ),
    ] = None,
    policies: Annotated[
        str, typer.Option("--policies", help="Comma-separated policy names.")
    ] = "greedy,uniform_progress,risk_aware,core,core_flat,ppo,omniscient",
    window: Annotated[
        str,
        typer.Option(
            "--window",
            help="held_back: jobs after each trace set's two-thirds cut (the report); train: "
            "jobs that end before it (for tuning).",
        ),
    ] = "held_back",
    workers: Annotated[
        int, typer.Option("--workers", min=0, help="Processes (0: one per CPU).")
    ] = 0,
    models: ModelsOption = None,
) -> None:
    """Every bundled trace set × job shapes × changeovers × observation × history, pools together
    and one at a time: each policy's cost ratio and the share of the greedy → omniscient gap it
    closes, with the targets' verdict."""
    from spotwise.policy.lab import suite

    if window not in (suite.HELD_BACK, suite.TRAIN):
        fail(f"--window must be held_back or train, got {window!r}")
    names = _suite_policies(policies)
    run = _run_suite(names, quick=quick, window=window, workers=workers, models=models)
    summary = run.summary()
    summary = replace(summary, verdict=suite.verdict(summary))
    suite.save_suite(summary, settings.store_path(None))
    if plot:
        suite.plot_suite(summary, plot)
        err.print(f"plot written to {plot}")
    if as_json:
        print(json.dumps(summary.to_dict(), indent=2))
        return
    _print_suite(summary, names)


def _suite_policies(policies: str) -> list[str]:
    """The ``--policies`` named, then the baseline and the bound where they are not."""
    from spotwise.policy.lab import suite

    names = comma_list(policies)
    for required in (suite.BASELINE, suite.BOUND):
        if required not in names:
            names.append(required)
    return names


def _run_suite(
    names: list[str], *, quick: bool, window: str, workers: int, models: Path | None
) -> SuiteRun:
    """The suite's classes over the bundled trace sets, a progress bar advancing per class
    (a bad policy or model: one line and exit)."""
    from spotwise.policy.lab import suite
    from spotwise.policy.lab.trace_sets import suite_sets

    try:
        data = settings.bundled_data_dir()
        bundled = suite_sets(data)
        sets = {s.name: s.traces for s in bundled}
        markets = suite.suite_markets(sets, data, quick=quick)
        catalog = _catalog(models)
        total = len(suite.classes(sets, quick=quick, markets=markets))
        with progress_bar() as bar:
            task = bar.add_task("classes", total=total)
            return suite.run_suite(
                sets,
                policies=names,
                quick=quick,
                window=suite.HELD_BACK if window == suite.HELD_BACK else suite.TRAIN,
                workers=workers or os.cpu_count() or 1,
                on_class=lambda r: bar.update(task, advance=1, description=r.scenario.key),
                models=catalog,
                described=[s.describe() for s in bundled],
                markets=markets,
            )
    except (PolicyError, ValueError) as exc:
        fail(str(exc))


def _print_suite(summary: SuiteSummary, names: list[str]) -> None:
    """The suite as a table: per class the gap and each policy's cost ratio and gap share."""
    table = Table(
        "class",
        "gap",
        *names,
        title="mean cost ratio (share of the greedy → omniscient gap; a market class: above the "
        f"bound; gap < {summary.material_gap}: shown, left out of the averages)",
    )
    for row in summary.classes:
        gap = f"{row.gap:.3f}" + ("" if row.material else " (-)")
        market = bool(row.scenario.market)
        table.add_row(row.scenario.key, gap, *(_cell(row.policies[n], market) for n in names))
    table.add_section()
    overall = summary.overall
    table.add_row(
        "mean (gap share over material probe classes)",
        "",
        *(
            f"{overall[n].mean_cost_ratio:.3f} ({_share(overall[n].gap_share_probe)})"
            for n in names
        ),
    )
    if any(overall[n].market_gap_to_bound is not None for n in names):
        table.add_row(
            "market classes: mean above the bound (material ones)",
            "",
            *(_above(overall[n].market_gap_to_bound) for n in names),
        )
    out.print(table)
    verdict = None if summary.verdict is None else summary.verdict.to_dict()
    out.print(f"verdict: {json.dumps(verdict)}")


def _above(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1%}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:+.0%}"


def _cell(stats: PolicyStats, market: bool = False) -> str:
    """A policy's cost ratio in a class, with its share of the greedy gap (a market class: its
    gap to the bound)."""
    misses = f", {stats.misses} missed" if stats.misses else ""
    if market and stats.gap_to_bound is not None:
        return f"{stats.mean_cost_ratio:.3f} (bound {stats.gap_to_bound:+.0%}){misses}"
    return f"{stats.mean_cost_ratio:.3f} ({_share(stats.gap_share)}){misses}"


@bench_app.command("fleet")
def bench_fleet(
    capacity_traces: Annotated[
        Path | None,
        typer.Option(
            "--capacity-traces",
            help="Folder of N-node CBL traces: the fleet's jobs share each pool's nodes "
            "(default: the bundled 3-pool 16-node aws-08-27-2023 traces).",
            show_default=False,
        ),
    ] = None,
    traces: Annotated[
        Path | None,
        typer.Option(
            "--traces",
            help="Folder of 1-node CBL traces instead: a pool that is up has room for every "
            "job (e.g. the bundled 9-zone aws-02-15-2023 traces).",
            show_default=False,
        ),
    ] = None,
    budget: Annotated[
        float,
        typer.Option("--budget-usd-per-hour", min=0.0, help="The fleet's budget in $/h."),
    ] = 20.0,
    compute_hours: Annotated[
        float, typer.Option("--compute-hours", min=0.1, help="Hours of work of each job.")
    ] = 12.0,
    arrive_every_hours: Annotated[
        float,
        typer.Option("--arrive-every-hours", min=0.0, help="Hours between job submissions."),
    ] = 1.0,
    changeover_hours: ChangeoverHours = REFERENCE.changeover_hours,
    spot_price: SpotPrice = REFERENCE.spot_price,
    on_demand_price: OnDemandPrice = REFERENCE.on_demand_price,
    test_from_hours: Annotated[
        float | None,
        typer.Option(
            "--test-from-hours",
            min=0.0,
            help="The first fleet starts here (default: the held-back last third).",
            show_default=False,
        ),
    ] = None,
    start_every_hours: Annotated[
        float, typer.Option("--start-every-hours", min=1.0, help="Hours between fleet starts.")
    ] = 6.0,
    observe: ObserveOption = "probe",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="Write a PNG of the cost per tier and the spend per hour against the budget.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Twelve jobs in three tiers (high, normal, low) under one budget, simulated on real
    traces, against every job under `best` on its own on the same market (simulated $)."""
    from spotwise.policy.lab.fleet import (
        FleetMarket,
        default_fleet,
        fleet_starts,
        plot_fleet,
        run_fleet_bench,
    )
    from spotwise.policy.nodes.capacity import load_capacity_traces
    from spotwise.policy.simulate import Visibility
    from spotwise.policy.traces import load_traces

    mode = _observe_mode(observe)
    spend: dict[str, list[float]] = {}
    try:
        capacity = None
        if traces is not None:
            trace_set = load_traces(traces)
        else:
            counts = load_capacity_traces(capacity_traces or settings.bundled_node_traces())
            trace_set, capacity = counts.availability(), counts.capacity
        fleet = default_fleet(compute_hours, arrive_every_hours)
        first = test_from_hours
        if first is None:
            first = trace_set.n_ticks * trace_set.gap_seconds / 3600 * 2 / 3
        summary = run_fleet_bench(
            trace_set,
            fleet,
            fleet_starts(trace_set, fleet, first, start_every_hours),
            budget_usd_per_hour=budget,
            market=FleetMarket(
                spot_price=spot_price,
                on_demand_price=on_demand_price,
                changeover_hours=changeover_hours,
            ),
            visibility=Visibility(observe=mode),
            capacity=capacity,
            spend_out=spend,
        )
    except (PolicyError, ValueError) as exc:
        fail(str(exc))
    if plot:
        plot_fleet(summary, spend, plot)
        err.print(f"plot written to {plot}")
    if as_json:
        out.print_json(data=summary.to_dict())
        return
    table = Table(title=f"fleet under {budget:g} $/h, {summary.fleets} fleets (simulated $)")
    for column in ("tier", "jobs", "fleet $", "misses", "on its own $", "misses alone"):
        table.add_column(column)
    alone = summary.independent_tiers
    for tier, row in summary.tiers.items():
        table.add_row(
            tier,
            str(row.jobs),
            f"{row.cost_usd:.2f}",
            f"{row.deadline_miss_rate:.1%}",
            f"{alone[tier].cost_usd:.2f}",
            f"{alone[tier].deadline_miss_rate:.1%}",
        )
    out.print(table)
    out.print(
        f"fleet ${summary.fleet_cost_usd} vs every job on its own "
        f"${summary.independent_best_cost_usd}; within budget "
        f"{summary.share_of_hours_within_budget:.1%} of hours"
    )


@bench_app.command("policy")
def bench_policy(
    traces: Annotated[
        Path | None,
        typer.Option(
            "--traces",
            help="Folder of 1-node CBL JSON traces, one pool per file (default: the "
            "bundled 9-zone aws-02-15-2023 traces).",
            show_default=False,
        ),
    ] = None,
    zones: Annotated[
        str,
        typer.Option(
            "--zones", help="single: each pool on its own; multi: any pool at every tick."
        ),
    ] = "single",
    compute_hours: ComputeHours = REFERENCE.compute_hours,
    deadline_hours: DeadlineHours = REFERENCE.deadline_hours,
    changeover_hours: ChangeoverHours = REFERENCE.changeover_hours,
    spot_price: SpotPrice = REFERENCE.spot_price,
    on_demand_price: OnDemandPrice = REFERENCE.on_demand_price,
    test_from_hours: Annotated[
        float,
        typer.Option(
            "--test-from-hours",
            min=0.0,
            help="First job starts at the first tick at or after this.",
        ),
    ] = 0.0,
    start_every_hours: Annotated[
        float, typer.Option("--start-every-hours", min=0.0, help="Hours between job starts.")
    ] = 12.0,
    policies: Annotated[
        str | None,
        typer.Option(
            "--policies",
            help="Comma-separated policy names (default: on_demand,greedy,uniform_progress,"
            "omniscient; with --nodes: on_demand,spot_fallback,best,omniscient).",
            show_default=False,
        ),
    ] = None,
    pools: Annotated[
        Path | None,
        typer.Option(
            "--pools",
            help="JSON of per-pool spot_price, on_demand_price and speed.",
            show_default=False,
        ),
    ] = None,
    checkpoint_minutes: Annotated[
        float | None,
        typer.Option(
            "--checkpoint-minutes",
            min=0.0,
            help="Checkpoint mode: interval in minutes of work (0 = the policy chooses).",
            show_default=False,
        ),
    ] = None,
    checkpoint_stall_seconds: Annotated[
        float,
        typer.Option(
            "--checkpoint-stall-seconds", min=0.0, help="Checkpoint mode: stall per checkpoint."
        ),
    ] = 30.0,
    notice_seconds: Annotated[
        float, typer.Option("--notice-seconds", min=0.0, help="Checkpoint mode: preemption notice.")
    ] = 120.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot", help="Write a PNG of cost ratio per policy per pool.", show_default=False
        ),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", help="Print timings on stderr.")] = False,
    models: ModelsOption = None,
    observe: ObserveOption = "all",
    probe_seconds: ProbeSecondsOption = 60.0,
    history_hours: HistoryOption = "all",
    checkpoint_gb: Annotated[
        float,
        typer.Option(
            "--checkpoint-gb",
            min=0.0,
            help="The checkpoint a move carries: read from the region that wrote it, at the "
            "clouds' egress list prices (pools placed in regions by --pools FILE).",
        ),
    ] = 0.0,
    failed_request: Annotated[
        str,
        typer.Option(
            "--failed-request",
            help="keeps: a launch request that fails keeps what runs (EC2 Fleet); ends: it "
            "ends it (an orchestrator that tears down before it relaunches).",
        ),
    ] = "keeps",
    nodes: Annotated[
        int | None,
        typer.Option(
            "--nodes",
            min=1,
            help="N-node jobs on N-node capacity traces (default traces: the bundled 16-node "
            "aws-08-27-2023 set): an on-demand floor under spot workers, a regroup per change "
            "of the node count.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Simulate policies on real traces; cost ratio = cost / on-demand cost of the job."""
    from spotwise.policy.lab.bench import save_summary
    from spotwise.policy.simulate import FLEET, TEARDOWN, Visibility

    if failed_request not in ("keeps", "ends"):
        fail(f"--failed-request must be keeps or ends, got {failed_request[:40]!r}")
    spec = _bench_job(compute_hours, deadline_hours, changeover_hours, spot_price, on_demand_price)
    spec = replace(spec, checkpoint_gb=checkpoint_gb)
    if nodes is not None:
        _refuse_flags_of_one_node(
            {
                "--zones": zones != "single",
                "--pools": pools is not None,
                "--checkpoint-minutes": checkpoint_minutes is not None,
                "--observe": observe != "all",
                "--history-hours": history_hours != "all",
                "--models": models is not None,
            }
        )
        _bench_nodes(
            traces or settings.bundled_node_traces(),
            spec,
            nodes=nodes,
            policies=comma_list(policies or NODE_POLICIES),
            test_from_hours=test_from_hours,
            start_every_hours=start_every_hours,
            as_json=as_json,
            plot=plot,
        )
        return
    policies = policies or "on_demand,greedy,uniform_progress,omniscient"
    if zones not in ("single", "multi"):
        fail(f"--zones must be single or multi, got {zones!r}")
    visibility = Visibility(
        observe=_observe_mode(observe),
        probe_seconds=probe_seconds,
        history_hours=_history_hours(history_hours),
    )
    mode: Literal["single", "multi"] = "single" if zones == "single" else "multi"
    names = comma_list(policies)
    began, run = _run_policy_bench(
        traces or settings.bundled_traces(),
        pools,
        spec,
        mode=mode,
        policies=names,
        test_from_hours=test_from_hours,
        start_every_hours=start_every_hours,
        checkpoint_flags=(checkpoint_minutes, checkpoint_stall_seconds, notice_seconds),
        models=models,
        visibility=visibility,
        provider=TEARDOWN if failed_request == "ends" else FLEET,
    )
    summary = run.summary()
    save_summary(summary, settings.store_path(None))
    if verbose:
        _print_timings(run, names, began)
    _show_bench(summary, names, mode, plot=plot, as_json=as_json)


def _bench_job(
    compute_hours: float,
    deadline_hours: float,
    changeover_hours: float,
    spot_price: float,
    on_demand_price: float,
) -> JobSpec:
    """The benched job's terms from its flags (terms no job has: one line and exit)."""
    try:
        return JobSpec(
            compute_hours=compute_hours,
            deadline_hours=deadline_hours,
            changeover_hours=changeover_hours,
            spot_price=spot_price,
            on_demand_price=on_demand_price,
        )
    except PolicyError as exc:
        fail(str(exc))


def _run_policy_bench(
    folder: Path,
    pools: Path | None,
    spec: JobSpec,
    *,
    mode: Literal["single", "multi"],
    policies: list[str],
    test_from_hours: float,
    start_every_hours: float,
    checkpoint_flags: tuple[float | None, float, float],
    models: Path | None,
    visibility: Visibility,
    provider: Provider,
) -> tuple[float, BenchRun]:
    """When the simulation began (``time.perf_counter``) and the bench of ``policies`` on
    ``folder``'s traces, in the checkpoint mode of ``checkpoint_flags`` (minutes, stall, notice), a
    progress bar advancing per job (bad traces, pools or models: one line and exit)."""
    from spotwise.policy.lab.bench import count_jobs, run_bench
    from spotwise.policy.traces import load_traces

    try:
        trace_set = load_traces(folder, pools)
        catalog = _catalog(models)
        checkpoint = _checkpoint_mode(*checkpoint_flags)
        total = count_jobs(
            trace_set,
            spec,
            zones=mode,
            n_policies=len(policies),
            test_from_hours=test_from_hours,
            start_every_hours=start_every_hours,
        )
        began = time.perf_counter()
        with progress_bar() as bar:
            task = bar.add_task("simulating", total=total)
            run = run_bench(
                trace_set,
                spec,
                zones=mode,
                policies=policies,
                test_from_hours=test_from_hours,
                start_every_hours=start_every_hours,
                checkpoint=checkpoint,
                on_job=lambda key, name: bar.update(task, advance=1, description=f"{key} {name}"),
                models=catalog,
                visibility=visibility,
                provider=provider,
            )
    except (PolicyError, ValueError) as exc:
        fail(str(exc))
    return began, run


def _show_bench(
    summary: BenchSummary, names: list[str], mode: str, *, plot: Path | None, as_json: bool
) -> None:
    """The bench's plot where asked, then its JSON or its table."""
    from spotwise.policy.lab.bench import plot_bench

    if plot:
        plot_bench(summary, plot)
        err.print(f"plot written to {plot}")
    if as_json:
        print(json.dumps(summary.to_dict(), indent=2))
        return
    _print_bench_table(summary, names, mode)


def _refuse_flags_of_one_node(ignored: dict[str, bool]) -> None:
    """One line naming the 1-node flags given with --nodes, where they do not apply."""
    if any(ignored.values()):
        named = ", ".join(k for k, v in ignored.items() if v)
        fail(f"--nodes runs the N-node lab, where {named} does not apply; leave it out")


def _checkpoint_mode(
    minutes: float | None, stall_seconds: float, notice_seconds: float
) -> CheckpointMode | None:
    """Checkpoint mode from its flags (None without --checkpoint-minutes)."""
    from spotwise.policy.simulate import CheckpointMode

    if minutes is None:
        return None
    return CheckpointMode(
        interval_minutes=minutes or None,
        stall_seconds=stall_seconds,
        notice_seconds=notice_seconds,
    )


def _print_timings(run: BenchRun, names: list[str], began: float) -> None:
    """Each policy's seconds and ms per job, and the total, on stderr."""
    jobs = {name: sum(len(run.results[k][name]) for k in run.results) for name in names}
    for name in names:
        err.print(
            f"{name}: {run.seconds[name]:.2f} s for {jobs[name]} jobs "
            f"({1000 * run.seconds[name] / jobs[name]:.1f} ms per job)"
        )
    err.print(f"total {time.perf_counter() - began:.2f} s")


def _print_bench_table(summary: BenchSummary, names: list[str], mode: str) -> None:
    """The bench's mean cost ratio per pool and policy (p90, misses) as a table."""
    table = Table("pool", *names, title=f"mean cost ratio ({mode}-zone; p90, misses)")
    for key, per_policy in summary.results.items():
        table.add_row(
            key,
            *(
                f"{per_policy[n].mean_cost_ratio:.3f} "
                f"(p90 {per_policy[n].p90_cost_ratio:.3f}, "
                f"miss {per_policy[n].deadline_miss_rate:.0%})"
                for n in names
            ),
        )
    out.print(table)


NODE_POLICIES = "on_demand,spot_fallback,best,omniscient"


def _bench_nodes(
    folder: Path,
    spec: JobSpec,
    *,
    nodes: int,
    policies: list[str],
    test_from_hours: float,
    start_every_hours: float,
    as_json: bool,
    plot: Path | None,
) -> None:
    """``bench policy --nodes N``: the N-node lab's table or JSON."""
    from spotwise.policy.lab.bench import plot_bench
    from spotwise.policy.lab.node_bench import node_starts, run_node_bench
    from spotwise.policy.nodes.capacity import load_capacity_traces

    try:
        capacity = load_capacity_traces(folder)
        total = len(node_starts(capacity, spec, test_from_hours, start_every_hours))
        with progress_bar() as bar:
            task = bar.add_task("simulating", total=total * len(policies))
            summary = run_node_bench(
                capacity,
                spec,
                nodes=nodes,
                policies=policies,
                test_from_hours=test_from_hours,
                start_every_hours=start_every_hours,
                on_job=lambda name: bar.update(task, advance=1, description=name),
            )
    except PolicyError as exc:
        fail(str(exc))
    if plot:
        plot_bench(summary, plot)
        err.print(f"plot written to {plot}")
    if as_json:
        print(json.dumps(summary.to_dict(), indent=2))
        return
    results = summary.results["all"]
    table = Table(
        "policy",
        "mean",
        "p90",
        "misses",
        "regroups",
        "spot share",
        title=f"{nodes}-node jobs on {len(capacity.names)} pool"
        f"{'s' if len(capacity.names) > 1 else ''}: cost ratio (1 = on-demand)",
    )
    for name, row in results.items():
        bound = row.lower_bound
        table.add_row(
            f"{name} (lower bound, regroups free)" if bound else name,
            f"{row.mean_cost_ratio:.3f}",
            f"{row.p90_cost_ratio:.3f}",
            "" if bound else f"{row.deadline_miss_rate:.0%}",
            "" if bound else f"{row.mean_regroups:.1f}",
            "" if bound else f"{row.spot_share:.0%}",
        )
    out.print(table)


@bench_app.command("checkpoint")
def bench_checkpoint_command(
    sizes: Annotated[
        str, typer.Option("--sizes", help="State sizes in GB, comma-separated (e.g. 1,4,10).")
    ] = "1",
    load: Annotated[
        str,
        typer.Option(
            "--load",
            help="CPU-hog processes to run beside it, comma-separated (e.g. 0,2): each count "
            "is a run; the hogs are killed after it.",
        ),
    ] = "0",
    folder: Annotated[
        Path | None,
        typer.Option(
            "--dir", help="Where to write (default: the system temp folder).", show_default=False
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """torch.save, DCP save and async_save against Spotwise's checkpoints on the same state, per
    size and load: stall, durable, notice-to-durable, restore, incremental bytes."""
    from spotwise.executor.bench import bench_checkpoint, parse_list

    try:
        sizes_gb = parse_list(sizes, "--sizes", float)
        loads = parse_list(load, "--load", int)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    result = bench_checkpoint(sizes_gb, loads, folder, progress=lambda m: say(f"… {m}"))
    if as_json:
        print(json.dumps(result.to_dict(), indent=2))
        return
    cases = [case.to_dict() for case in result.cases]
    table = Table("measure", *(f"{c['size_gb']} GB, load {c['load']}" for c in cases))
    for key in list(cases[0])[2:]:
        table.add_row(key, *(str(case[key]) for case in cases))
    out.print(table)


@bench_app.command("resume")
def bench_resume_command(
    epochs: Annotated[
        int, typer.Option("--epochs", min=1, help="Epochs of the example training.")
    ] = 4,
    step_sleep_s: Annotated[
        float, typer.Option("--step-sleep-s", min=0.0, help="Slow each step to stretch the run.")
    ] = 0.02,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The example training uninterrupted and under a replayed real preemption trace."""
    from spotwise.executor.bench import bench_resume

    result = bench_resume(
        settings.bundled_data_dir(),
        epochs=epochs,
        step_sleep_s=step_sleep_s,
        progress=lambda m: say(f"… {m}"),
    )
    _print_result(result.to_dict(), as_json)


def _print_result(result: dict[str, object], as_json: bool) -> None:
    if as_json:
        print(json.dumps(result, indent=2))
        return
    table = Table("measure", "value")
    for key, value in result.items():
        table.add_row(key, str(value))
    out.print(table)


# The benchmarks of other groups' concepts, implemented beside them.
bench_app.command("risk")(forecast_commands.bench_risk_command)
bench_app.command("price")(forecast_commands.bench_price_command)
bench_app.command("api")(serve_command.bench_api)
bench_app.command("startup")(startup_bench.bench_startup)
bench_app.command("store")(store_bench.bench_store)
bench_app.command("bids")(bids_command.bench_bids)

"""``spotwise fleet``: many jobs in priority tiers under one budget, and where they stand."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from spotwise.arguments import comma_list
from spotwise.cloud_options import GIVEN, cloud_options
from spotwise.console import (
    StoreOption,
    fail,
    free_loopback_port,
    open_operational_store,
    open_store,
    out,
    say,
)
from spotwise.core import settings
from spotwise.executor.clouds.base import CloudOptions
from spotwise.executor.clouds.registry import CLOUDS
from spotwise.executor.errors import ExecutorError

if TYPE_CHECKING:
    from collections.abc import Callable

    from spotwise.executor.fleets.fleet import FleetJobSpec, FleetSpec
    from spotwise.executor.launchers.base import Launcher
    from spotwise.executor.ledger.ledger import JobLine
    from spotwise.executor.supervise.elastic import NodePlan

fleet_app = typer.Typer(
    help="Many jobs in priority tiers (high, normal, low) under one budget in $/h.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@fleet_app.command("run")
@cloud_options()
def fleet_run(
    spec_path: Annotated[Path, typer.Argument(help="The fleet file (YAML or TOML).")],
    launcher: Annotated[
        str,
        typer.Option(
            "--launcher", help=f"local (the replayed market) or a cloud: {', '.join(CLOUDS)}."
        ),
    ] = "local",
    traces: Annotated[
        Path | None,
        typer.Option(
            "--traces",
            help="local: traces to replay (default: the bundled ones).",
            show_default=False,
        ),
    ] = None,
    pools: Annotated[
        str | None,
        typer.Option(
            "--pools", help="Pools to use (local: trace names; a cloud: zones), comma-separated."
        ),
    ] = None,
    start_hours: Annotated[
        float, typer.Option("--start-hours", min=0.0, help="local: replay from this trace hour.")
    ] = 0.0,
    scale: Annotated[
        float, typer.Option("--scale", min=1.0, help="local: trace s per wall s.")
    ] = 360.0,
    spot_check_s: Annotated[
        float,
        typer.Option(
            "--spot-check-s",
            min=0.0,
            help="Wall seconds between asks, for a job on on-demand, whether to go back to "
            "spot (0 = never).",
        ),
    ] = 2.0,
    policy_name: Annotated[str, typer.Option("--policy-name", help="The policy.")] = "best",
    changeover_hours: Annotated[
        float, typer.Option("--changeover-hours", min=0.0, help="Hours a move costs.")
    ] = 0.05,
    as_json: Annotated[bool, typer.Option("--json", help="Print the outcome as JSON.")] = False,
    store: StoreOption = None,
    cloud: CloudOptions = GIVEN,
) -> None:
    """Run every job of the fleet file at once (on the replayed market, or on a cloud), each under
    its supervisor, granted what its tier allows within the budget; wait for all of them."""
    from spotwise.executor.fleets.fleet import load_fleet_spec, run_fleet
    from spotwise.executor.ledger.prices import price_book
    from spotwise.executor.supervise.supervisor import SupervisorConfig
    from spotwise.policy.errors import PolicyError
    from spotwise.policy.service.client import in_process_for
    from spotwise.policy.service.schemas import JobTerms
    from spotwise.pricing.errors import PricingError

    if launcher != "local" and launcher not in CLOUDS:
        fail(f"--launcher must be local or one of {', '.join(CLOUDS)}, got {launcher[:40]!r}")
    names = tuple(comma_list(pools))
    try:
        spec = load_fleet_spec(spec_path)
        if launcher in CLOUDS:
            where = _on_cloud(launcher, cloud, names, spec)
        else:
            where = _on_replay(traces, names, start_hours=start_hours, scale=scale)
        with open_store(store) as market:
            store_path = market.path
            prices = price_book(
                market,
                where.pools,
                instance_type=where.instance_type,
                home_region=where.home_region,
            )
    except (ExecutorError, PolicyError, PricingError, ValueError) as exc:
        fail(str(exc))

    def config_for(job: FleetJobSpec) -> SupervisorConfig:
        terms = JobTerms(
            compute_hours=job.compute_hours,
            deadline_hours=job.deadline_hours,
            changeover_hours=changeover_hours,
            spot_price=prices.typical_spot(),
            on_demand_price=prices.on_demand_quote().usd_per_hour,
        )
        return SupervisorConfig(
            job=terms,
            policy=policy_name,
            prices=prices,
            move_check_s=None,
            spot_check_s=spot_check_s or None,
            max_price=cloud.max_price,
        )

    outcomes = run_fleet(
        spec,
        store_path=store_path,
        launcher_for=where.launcher_for,
        config_for=config_for,
        client_for=in_process_for,
        progress=lambda m: say(f"… {m}"),
        plan_for=where.plan_for,
    )
    own = {o.job.report.job_id: o.job.to_dict() for o in outcomes if o.job is not None}
    with open_operational_store(store) as ledger:
        _print_status(_fleet_rows(ledger, spec.name), spec.name, as_json, supervised=own)
    failed = [o for o in outcomes if o.error is not None]
    for outcome in failed:
        say(f"{outcome.spec.name}: {outcome.error}")
    if failed:
        raise typer.Exit(1)


@dataclasses.dataclass(frozen=True, slots=True)
class _Market:
    """Where a fleet's jobs run: their pools as priced, and how each job's launcher and
    elastic nodes are made."""

    pools: tuple[str, ...]
    instance_type: str
    home_region: str | None
    launcher_for: Callable[[str], Launcher]
    """A launcher for the job of this id."""
    plan_for: Callable[[FleetJobSpec], NodePlan | None]


def _on_cloud(
    launcher: str, cloud: CloudOptions, zones: tuple[str, ...], spec: FleetSpec
) -> _Market:
    """The fleet on a cloud: its target in ``zones``, the code shipped once for every job
    (elastic jobs refused without a network their nodes meet on)."""
    elastic = [j.name for j in spec.jobs if j.nodes is not None]
    if elastic and not cloud.network:
        raise ExecutorError(
            f"the elastic jobs {elastic} need --network (--security-group) on "
            f"{launcher}: one that lets their nodes reach each other on every TCP port; "
            f"`spotwise setup {launcher}` makes it and prints its name"
        )
    provider = CLOUDS[launcher]
    target = provider.target(dataclasses.replace(cloud, zones=zones))
    code = provider.ship_code(target)  # once for every job

    def launcher_for(job_id: str) -> Launcher:
        return provider.launcher(target, code, job_id=job_id)

    return _Market(
        target.zones_or_default,
        target.instance_type,
        target.home_region,
        launcher_for,
        _as_written,
    )


def _on_replay(
    traces: Path | None, pools: tuple[str, ...], *, start_hours: float, scale: float
) -> _Market:
    """The fleet on the replayed market: ``traces`` (default: the bundled ones), only
    ``pools`` where named."""
    from spotwise.executor.launchers.local import Replay
    from spotwise.policy.traces import load_traces
    from spotwise.pricing.quotes import REFERENCE_INSTANCE_TYPE

    trace_set = load_traces(traces or settings.bundled_traces())
    if pools:
        trace_set = trace_set.subset(list(pools))

    def launcher_for(job_id: str) -> Launcher:
        return Replay(traces=trace_set, start_hours=start_hours, scale=scale).launcher()

    return _Market(trace_set.names, REFERENCE_INSTANCE_TYPE, None, launcher_for, _on_loopback)


def _as_written(job: FleetJobSpec) -> NodePlan | None:
    """An elastic job's nodes as its fleet file gives them (on a cloud, each job's host is a
    machine of its own)."""
    return job.nodes


def _on_loopback(job: FleetJobSpec) -> NodePlan | None:
    """An elastic job's nodes with a rendezvous port of its own on this machine."""
    if job.nodes is None:
        return None
    return dataclasses.replace(job.nodes, rdzv_endpoint=f"127.0.0.1:{free_loopback_port()}")


@fleet_app.command("status")
def fleet_status(
    name: Annotated[str, typer.Argument(help="The fleet's name (from its file).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    store: StoreOption = None,
) -> None:
    """The fleet's jobs by tier: status, cost so far, preemptions, moves (back to spot among
    them) and hours on on-demand."""
    with open_operational_store(store) as market:
        rows = _fleet_rows(market, name)
    if not rows:
        fail(f"no fleet {name[:64]!r} in the ledger; `spotwise jobs list` shows every job")
    _print_status(rows, name, as_json)


def _fleet_rows(market: Any, name: str) -> list[JobLine]:
    from spotwise.executor.fleets.fleet import TIERS
    from spotwise.executor.ledger.ledger import list_jobs

    def order(line: JobLine) -> tuple[int, str]:
        """By tier (high, normal, low, then any other), then by name."""
        tier = line.tier
        return (TIERS.index(tier) if tier is not None and tier in TIERS else 9, line.name)

    return sorted((r for r in list_jobs(market) if r.fleet == name), key=order)


def _print_status(
    rows: list[JobLine], name: str, as_json: bool, *, supervised: dict[str, Any] | None = None
) -> None:
    """The fleet's jobs by tier; its JSON has, after ``fleet run``, each supervisor's own
    account of its job (``supervised``, by job id: what it wrote, whether or not the store
    has it yet), to hold against the ledger's."""
    simulated = any(r.simulated for r in rows)
    total = round(sum(r.cost_usd for r in rows), 4)
    if as_json:
        jobs = [
            {
                k: line[k]
                for k in (
                    "job_id",
                    "name",
                    "tier",
                    "status",
                    "cost_usd",
                    "preemptions",
                    "migrations",
                    "on_demand_hours",
                )
            }
            for line in (r.to_dict() for r in rows)
        ]
        data = {"fleet": name, "simulated": simulated, "cost_usd": total, "jobs": jobs}
        if supervised is not None:
            data["supervised"] = supervised
        out.print_json(data=data, default=str)
        return
    label = " (simulated $: a replayed market)" if simulated else ""
    table = Table(
        "tier",
        "job",
        "status",
        "cost $",
        "preemptions",
        "moves",
        "on-demand h",
        "job id",
        title=f"fleet {name}{label}",
    )
    for r in rows:
        table.add_row(
            str(r.tier),
            r.name,
            r.status,
            f"{r.cost_usd:.2f}",
            str(r.preemptions),
            str(r.migrations),
            f"{r.on_demand_hours:.2f}",
            r.job_id,
        )
    out.print(table)
    out.print(f"total ${total:.2f}{label}")

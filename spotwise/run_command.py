"""``spotwise run``: one training command to completion across preemptions, on the replayed
market or a cloud."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from spotwise.arguments import comma_list
from spotwise.cloud_options import GIVEN, cloud_options
from spotwise.console import (
    ComputeHours,
    DeadlineHours,
    OnDemandPriceOption,
    PolicyNameOption,
    SpotPriceOption,
    StoreOption,
    fail,
    finite,
    open_operational_store,
    ready_store,
    say,
)
from spotwise.core import settings
from spotwise.executor.clouds.base import CloudOptions
from spotwise.executor.clouds.registry import CLOUDS
from spotwise.executor.errors import Cancelled, ExecutorError
from spotwise.policy.errors import PolicyError
from spotwise.pricing.errors import PricingError
from spotwise.reports import print_report

if TYPE_CHECKING:
    from spotwise.executor.launchers.registry import LaunchSettings
    from spotwise.executor.supervise.elastic import NodePlan


@cloud_options()
def run(
    command: Annotated[list[str], typer.Argument(help="The training command, after --.")],
    ckpt: Annotated[
        list[str] | None,
        typer.Option(
            "--ckpt",
            help="Where the command checkpoints, sized for the ledger's storage cost when the job "
            "ends (repeat): a folder here, or with --launcher CLOUD a URL in its bucket.",
            show_default=False,
        ),
    ] = None,
    launcher: Annotated[
        str,
        typer.Option(
            "--launcher",
            help=f"local or torchrun (the replayed market), or a cloud: {', '.join(CLOUDS)}.",
        ),
    ] = "local",
    policy_url: Annotated[
        str,
        typer.Option("--policy", help="inproc, or the URL of `spotwise serve`."),
    ] = "inproc",
    policy_name: PolicyNameOption = "best",
    compute_hours: ComputeHours = 1.0,
    deadline_hours: DeadlineHours = 2.0,
    spot_price: SpotPriceOption = None,
    on_demand_price: OnDemandPriceOption = None,
    name: Annotated[
        str | None,
        typer.Option("--name", help="The job's name (default: the script).", show_default=False),
    ] = None,
    traces: Annotated[
        Path | None,
        typer.Option("--traces", help="local/torchrun: traces to replay.", show_default=False),
    ] = None,
    start_hours: Annotated[
        float, typer.Option("--start-hours", min=0.0, help="local/torchrun: replay from here.")
    ] = 0.0,
    scale: Annotated[
        float, typer.Option("--scale", min=1.0, help="local/torchrun: trace s per wall s.")
    ] = 1.0,
    pools: Annotated[
        str | None,
        typer.Option(
            "--pools",
            help="Pools to use, comma-separated (local/torchrun: trace names; a cloud: its "
            "zones, e.g. us-east-1a on aws, us-central1-a on gcp, 1 on azure, ap-southeast-1a "
            "on huawei, a node zone on kubernetes).",
        ),
    ] = None,
    nnodes: Annotated[
        str,
        typer.Option(
            "--nnodes", help="torchrun: MIN:MAX nodes of a job whose other nodes you start."
        ),
    ] = "1:2",
    nodes: Annotated[
        str | None,
        typer.Option(
            "--nodes",
            help="torchrun or a cloud: MIN:MAX nodes that Spotwise launches and keeps: the "
            "rendezvous host and the on-demand floor, the rest on spot; a node taken back is "
            "replaced alone.",
            show_default=False,
        ),
    ] = None,
    on_demand_floor: Annotated[
        str,
        typer.Option(
            "--on-demand-floor",
            help="With --nodes: K on-demand nodes (the rendezvous host among them, MIN <= K <= "
            "MAX), or auto: MIN while the deadline leaves slack, then the job filled around the "
            "spot nodes held, every node near the deadline (the lab's best rule).",
        ),
    ] = "auto",
    nproc_per_node: Annotated[
        int, typer.Option("--nproc-per-node", min=1, help="torchrun: processes per node.")
    ] = 1,
    rdzv_endpoint: Annotated[
        str,
        typer.Option(
            "--rdzv-endpoint",
            help="torchrun: the c10d rendezvous host:port (with --nodes on a cloud, its port: the "
            "other nodes reach the host at its private address).",
        ),
    ] = "127.0.0.1:29400",
    secret_env: Annotated[
        list[str] | None,
        typer.Option(
            "--secret-env",
            help="A cloud: pass this environment variable to the job through the cloud's secret "
            "store (never its boot script; repeat for more).",
            show_default=False,
        ),
    ] = None,
    ignore_file: Annotated[
        Path | None,
        typer.Option(
            "--ignore-file",
            help="A cloud: gitignore-style rules for --workdir instead of its .gitignore files.",
            show_default=False,
        ),
    ] = None,
    wheel: Annotated[
        Path | None,
        typer.Option(
            "--wheel",
            help="A cloud: the Spotwise wheel to install on instances (default: built from "
            "this install's source).",
            show_default=False,
        ),
    ] = None,
    on_demand_after: Annotated[
        int,
        typer.Option(
            "--on-demand-after", min=0, help="Preemptions after which it stays on demand."
        ),
    ] = 3,
    no_moves: Annotated[
        bool,
        typer.Option(
            "--no-moves",
            help="Move the job only when it is preempted (by default it moves when the policy "
            "prices a move as paying: a cheaper pool that came back).",
        ),
    ] = False,
    max_failures: Annotated[
        int,
        typer.Option(
            "--max-failures", min=1, help="Failed exits (not preemptions) before it gives up."
        ),
    ] = 2,
    lead_s: Annotated[
        float,
        typer.Option(
            "--notice-lead-s", min=0.0, help="Seconds between a notice and the stop it warns of."
        ),
    ] = 2.0,
    spot_check_s: Annotated[
        float,
        typer.Option(
            "--spot-check-s",
            min=0.0,
            help="On on-demand: seconds between asks whether the policy would run on spot "
            "now; when it would, the job checkpoints and the on-demand instance is released "
            "(0 = stay on on-demand).",
        ),
    ] = 60.0,
    stall_timeout: Annotated[
        float,
        typer.Option(
            "--stall-timeout",
            min=0.0,
            help="Seconds without a training step (the guard's heartbeat) before the job is "
            "taken for hung, killed and relaunched from its checkpoint (0 = never).",
        ),
    ] = 600.0,
    cancel_grace: Annotated[
        float,
        typer.Option(
            "--cancel-grace",
            min=0.0,
            help="On SIGTERM/Ctrl-C: seconds the job gets to checkpoint before it is killed.",
        ),
    ] = 30.0,
    preempt_after: Annotated[
        str | None,
        typer.Option(
            "--preempt-after",
            help="A drill: send the job a preemption notice (the path a cloud's takes) this "
            "long after its first instance starts, e.g. 5m; it checkpoints, is relaunched and "
            "resumes.",
            show_default=False,
        ),
    ] = None,
    preempt_every: Annotated[
        str | None,
        typer.Option(
            "--preempt-every",
            help="The same drill for every instance, this long after each starts.",
            show_default=False,
        ),
    ] = None,
    checkpoint_minutes: Annotated[
        float | None,
        typer.Option(
            "--checkpoint-minutes",
            min=0.01,
            callback=finite,
            help="Minutes between the guard's checkpoints (default: Young/Daly from the "
            "measured stall and the pool's MTBF).",
            show_default=False,
        ),
    ] = None,
    waiting_report_s: Annotated[
        float, typer.Option("--waiting-report-s", min=0.0, hidden=True)
    ] = 60.0,
    step_report_s: Annotated[
        float,
        typer.Option(
            "--step-report-s",
            min=0.0,
            help="Seconds between lines saying the training's step, of how many, and the time "
            "left (from the guard; 0 = never).",
        ),
    ] = 30.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    store: StoreOption = None,
    cloud: CloudOptions = GIVEN,
) -> None:
    """Run COMMAND to completion across preemptions: ask the policy where, launch, forward
    notices, relaunch, move early on high risk, fall back to on-demand; log it to the ledger."""
    from spotwise.executor.clouds.registry import checkpoint_places
    from spotwise.executor.ledger.ledger import job_report
    from spotwise.executor.supervise.run import RunRequest, job_name, job_terms, run_job
    from spotwise.executor.supervise.supervisor import SupervisorConfig

    drill_s = _drill_seconds(preempt_after, preempt_every)
    if checkpoint_minutes is not None:
        # the job's guard reads it (its instances inherit the supervisor's environment)
        os.environ["SPOTWISE_CHECKPOINT_S"] = f"{checkpoint_minutes * 60:g}"
    names = tuple(comma_list(pools))
    plan = None
    if nodes is not None:
        plan = _node_plan(nodes, on_demand_floor, rdzv_endpoint, nproc_per_node, launcher, cloud)
    try:
        launch = _launch_settings(
            launcher,
            cloud,
            names,
            traces=traces,
            start_hours=start_hours,
            scale=scale,
            nnodes=nnodes,
            nproc_per_node=nproc_per_node,
            rdzv_endpoint=rdzv_endpoint,
            secret_env=secret_env,
            ignore_file=ignore_file,
            wheel=wheel,
        )
        request = RunRequest(
            command=tuple(command),
            name=name or job_name(command),
            launcher=launcher,
            launch=launch,
            config=SupervisorConfig(
                job=job_terms(compute_hours, deadline_hours),
                policy=policy_name,
                lead_s=lead_s,
                on_demand_after=on_demand_after,
                move_check_s=None if no_moves else _move_check_s(launcher),
                max_failures=max_failures,
                checkpoints=checkpoint_places(ckpt or [], launch.cloud),
                stall_timeout_s=stall_timeout or None,
                spot_check_s=spot_check_s or None,
                cancel_grace_s=cancel_grace,
                drill_after_s=drill_s,
                drill_every=preempt_every is not None,
                waiting_report_s=waiting_report_s or None,
                step_report_s=step_report_s or None,
                max_price=cloud.max_price,
            ),
            spot_price=spot_price,
            on_demand_price=on_demand_price,
            nodes=plan,
            policy_url=policy_url,
            api_token=settings.current().api_token,
        )
        supervised = run_job(
            request, lambda: ready_store(store), progress=lambda m: say(f"… {m}"), warn=say
        )
    except Cancelled as exc:
        say(str(exc))
        with open_operational_store(store) as market:
            print_report(job_report(market, exc.job_id), as_json)
        raise typer.Exit(128 + exc.signum) from None
    except (ExecutorError, PolicyError, PricingError, ValueError) as exc:
        fail(str(exc))
    print_report(supervised, as_json)


def _launch_settings(
    launcher: str,
    cloud: CloudOptions,
    pools: tuple[str, ...],
    *,
    traces: Path | None,
    start_hours: float,
    scale: float,
    nnodes: str,
    nproc_per_node: int,
    rdzv_endpoint: str,
    secret_env: list[str] | None,
    ignore_file: Path | None,
    wheel: Path | None,
) -> LaunchSettings:
    """The launcher's settings from run's flags: the replay's, torchrun's ``--nnodes`` and,
    for a cloud, its target (its zones the pools) and the secrets passed through it."""
    from spotwise.executor.launchers.registry import LaunchSettings
    from spotwise.executor.launchers.torchrun import Elastic

    low, _, high = nnodes.partition(":")
    target = None
    if launcher in CLOUDS:
        target = CLOUDS[launcher].target(replace(cloud, zones=pools))
    return LaunchSettings(
        pools=pools,
        traces=traces or settings.bundled_traces(),
        start_hours=start_hours,
        scale=scale,
        elastic=Elastic(
            min_nodes=int(low),
            max_nodes=int(high or low),
            nproc_per_node=nproc_per_node,
            rdzv_endpoint=rdzv_endpoint,
        ),
        cloud=target,
        secrets=_secrets(secret_env or []) if target else {},
        ignore_file=ignore_file,
        wheel=wheel,
    )


def _node_plan(
    nodes: str,
    floor: str,
    rdzv_endpoint: str,
    nproc_per_node: int,
    launcher: str,
    cloud: CloudOptions,
) -> NodePlan:
    """``--nodes MIN:MAX`` and ``--on-demand-floor K|auto`` as a plan, or a clear exit."""
    from spotwise.executor.supervise.elastic import NodePlan

    if launcher != "torchrun" and launcher not in CLOUDS:
        fail(
            f"--nodes needs --launcher torchrun (nodes on the replayed market) or a cloud "
            f"({', '.join(CLOUDS)}; got {launcher}): each node runs as a torchrun elastic agent"
        )
    if launcher in CLOUDS and not cloud.network:
        fail(
            f"--launcher {launcher} --nodes needs --network (--security-group): one that lets "
            "the nodes reach each other on every TCP port (the rendezvous, the workers' store, "
            f"gloo/NCCL); `spotwise setup {launcher}` makes it and prints its name"
        )
    try:
        return NodePlan.parse(
            nodes, floor, nproc_per_node=nproc_per_node, rdzv_endpoint=rdzv_endpoint
        )
    except ValueError as exc:
        fail(f"--nodes {nodes[:40]} --on-demand-floor {floor[:40]}: {exc}")


def _drill_seconds(after: str | None, every: str | None) -> float | None:
    """Seconds of the preemption drill (``--preempt-after`` or ``--preempt-every``), or None."""
    if after is not None and every is not None:
        fail("give --preempt-after or --preempt-every, not both")
    text, flag = (after, "--preempt-after") if after is not None else (every, "--preempt-every")
    if text is None:
        return None
    from spotwise.pricing.jobs import parse_every  # (brings in the scheduler: only for a drill)

    try:
        return parse_every(text)
    except (ValueError, KeyError):
        fail(f"{flag} {text[:40]!r} is not a duration: use e.g. 30s, 5m or 1h")


def _secrets(names: list[str]) -> dict[str, str]:
    missing = [n for n in names if n not in os.environ]
    if missing:
        fail(f"--secret-env {', '.join(missing)}: not set in this environment")
    return {n: os.environ[n] for n in names}


def _move_check_s(launcher: str) -> float:
    """Wall seconds between asks whether a spot instance should move: every poll on a replayed
    market (its hours pass fast), once a minute on a cloud."""
    return 0.2 if launcher in ("local", "torchrun") else 60.0

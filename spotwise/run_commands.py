"""Commands of the executor's supervisor: ``spotwise run``, ``spotwise jobs`` and the
end-to-end ``spotwise demo``."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from spotwise.console import (
    AwsBucket,
    AwsEndpointUrl,
    AwsImageId,
    AwsInstanceProfile,
    AwsInstanceType,
    AwsRegion,
    AwsSecurityGroup,
    AwsSetup,
    AwsWorkdir,
    ComputeHours,
    DeadlineHours,
    OnDemandPriceOption,
    PolicyNameOption,
    SpotPriceOption,
    StoreOption,
    fail,
    finite,
    open_operational_store,
    open_store,
    out,
    plural,
    ready_store,
    say,
    styled,
)
from spotwise.core import settings
from spotwise.executor.errors import Cancelled, ExecutorError
from spotwise.policy.errors import PolicyError
from spotwise.pricing.errors import PricingError

if TYPE_CHECKING:
    from spotwise.executor.supervise.elastic import NodePlan
    from spotwise.pricing.operational import OperationalStore

jobs_app = typer.Typer(
    help="The executor's cost ledger.", no_args_is_help=True, rich_markup_mode=None
)
gc_app = typer.Typer(
    help="End cloud resources no job supervises.", no_args_is_help=True, rich_markup_mode=None
)
check_app = typer.Typer(
    help="Is an account ready for spotwise run?", no_args_is_help=True, rich_markup_mode=None
)


setup_app = typer.Typer(
    help="Prepare a cloud account for spotwise run.", no_args_is_help=True, rich_markup_mode=None
)


@setup_app.command("aws")
def setup_aws(
    bucket: Annotated[str, typer.Option("--bucket", help="The bucket to make (or reuse).")],
    region: Annotated[str, typer.Option("--region", help="AWS region.")] = "us-east-1",
    role: Annotated[
        str, typer.Option("--role", help="The instances' role and instance profile.")
    ] = "spotwise-instance",
    endpoint_url: Annotated[
        str | None,
        typer.Option("--endpoint-url", help="Another endpoint (e.g. moto).", show_default=False),
    ] = None,
) -> None:
    """Once per account: a private bucket, and the instances' role and instance profile with
    the least policy of docs/aws.md. Running it again changes nothing."""
    from spotwise.executor.clouds.aws.launcher import aws_session
    from spotwise.executor.clouds.aws.setup import set_up

    try:
        session = aws_session(region, "setup aws")
        group = set_up(
            session,
            region,
            bucket,
            role,
            endpoint_url=endpoint_url,
            say=lambda line: out.print(line, highlight=False),
        )
    except ExecutorError as exc:
        fail(str(exc))
    out.print(
        "next: give the credentials spotwise runs with the policy for that machine "
        "(docs/aws.md), then\n"
        f"  spotwise check aws --region {region} --bucket {bucket} --instance-profile {role} "
        "--image-id AMI\n"
        f"(an elastic job's nodes: spotwise run --launcher aws --nodes MIN:MAX "
        f"--security-group {group} ...)",
        highlight=False,
    )


@check_app.command("aws")
def check_aws(
    region: Annotated[str, typer.Option("--region", help="AWS region.")] = "us-east-1",
    bucket: Annotated[
        str | None, typer.Option("--bucket", help="The S3 bucket to check.", show_default=False)
    ] = None,
    image_id: Annotated[
        str | None, typer.Option("--image-id", help="The AMI to check.", show_default=False)
    ] = None,
    instance_profile: Annotated[
        str | None,
        typer.Option(
            "--instance-profile", help="The instance profile to check.", show_default=False
        ),
    ] = None,
    instance_type: Annotated[
        str, typer.Option("--instance-type", help="Whose spot vCPU quota to check.")
    ] = "p3.2xlarge",
    endpoint_url: Annotated[
        str | None,
        typer.Option("--endpoint-url", help="Another endpoint (e.g. moto).", show_default=False),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the checks as JSON.")] = False,
) -> None:
    """Credentials, bucket, AMI, instance profile, spot quota and every permission spotwise
    run needs, each with its fix; exit code 1 when something is missing."""
    from dataclasses import asdict

    from spotwise.executor.clouds.aws.check import AwsCheck
    from spotwise.executor.clouds.aws.launcher import aws_session

    try:
        session = aws_session(region, "check aws")
    except ExecutorError as exc:
        fail(str(exc))
    checks = AwsCheck(
        session,
        region,
        bucket=bucket,
        image_id=image_id,
        instance_profile=instance_profile,
        instance_type=instance_type,
        endpoint_url=endpoint_url,
    ).run()
    if as_json:
        print(json.dumps([asdict(c) for c in checks]))
    else:
        for check in checks:
            out.print(check.line(), markup=False, highlight=False, soft_wrap=True)
        out.print(_check_verdict(checks), markup=False, highlight=False, soft_wrap=True)
    if any(c.status in ("missing", "skipped") for c in checks):
        raise typer.Exit(1)


CHECK_FLAGS = {
    "bucket": "--bucket",
    "image": "--image-id",
    "instance profile": "--instance-profile",
}
"""The settings ``check aws`` cannot check unless given, and the flag of each."""


def _check_verdict(checks: list[Any]) -> str:
    """The checklist's last line: what to fix, what was not checked, or ready."""
    missing = sum(c.status == "missing" for c in checks)
    if missing:
        return f"{missing} to fix"
    skipped = [c.what for c in checks if c.status == "skipped"]
    if skipped:
        flags = [flag for what, flag in CHECK_FLAGS.items() if what in skipped]
        given = f": pass {', '.join(flags)} to check them" if flags else ""
        return f"not ready to say: {len(skipped)} not checked ({', '.join(skipped)}){given}"
    unknown = sum(c.status == "unknown" for c in checks)
    return f"ready ({unknown} not known from here: the ? lines)" if unknown else "ready"


@gc_app.command("aws")
def gc_aws(
    region: Annotated[str, typer.Option("--region", help="AWS region.")] = "us-east-1",
    endpoint_url: Annotated[
        str | None,
        typer.Option("--endpoint-url", help="Another endpoint (e.g. moto).", show_default=False),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List the orphans, end nothing.")
    ] = False,
    any_host: Annotated[
        bool,
        typer.Option(
            "--any-host",
            help="Also look at what other machines started (ended only when this ledger "
            "proves it orphaned, or --job names it).",
        ),
    ] = False,
    job: Annotated[
        list[str] | None,
        typer.Option(
            "--job",
            help="End this job's instances and secrets although the ledger does not know it "
            "(never a job it shows running under a live supervisor; repeat for more).",
            show_default=False,
        ),
    ] = None,
    store: StoreOption = None,
) -> None:
    """End the instances, and delete the secrets, that the ledger proves orphaned: their job
    has ended, or its supervisor is gone. Those of a job the ledger has never seen are listed,
    and ended only when --job names them."""
    import socket

    from botocore.exceptions import BotoCoreError, ClientError

    from spotwise.executor.clouds.aws.launcher import aws_session
    from spotwise.executor.clouds.orphans import (
        delete_secrets,
        end_instances,
        judge_instances,
        judge_secrets,
        ledger_verdicts,
    )

    try:
        session = aws_session(region, "gc aws")
        path = settings.store_path(store)
        verdicts = ledger_verdicts(path)
    except (ExecutorError, PricingError, ValueError) as exc:
        fail(str(exc))
    ec2 = session.client("ec2", region_name=region, endpoint_url=endpoint_url)
    ssm = session.client("ssm", region_name=region, endpoint_url=endpoint_url)
    host = None if any_host else socket.gethostname()
    named = frozenset(job or ())
    try:
        instances = judge_instances(ec2, verdicts, host, named=named, store_path=path)
        secrets = judge_secrets(ssm, verdicts, host, named=named, store_path=path)
        if not dry_run:
            end_instances(ec2, instances)
            delete_secrets(ssm, [s.resource for s in secrets if s.end])
    except (BotoCoreError, ClientError) as exc:
        fail(f"AWS {region}: {exc}")
    if verdicts is None:
        say(
            f"no ledger at {path}: no job can be proven orphaned, so nothing is ended that "
            "--job does not name (is this the --store the jobs ran with?)"
        )
    verb = "would end" if dry_run else "ended"
    for item in instances:
        done = verb if item.end else "left"
        out.print(
            f"{done} {item.resource} (job {item.job_id or '?'}): {item.why}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    for item in secrets:
        done = ("would delete" if dry_run else "deleted") if item.end else "left"
        out.print(
            f"{done} secret {item.resource}: {item.why}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    if not any(i.end for i in (*instances, *secrets)):
        where = "" if any_host else f" started from {host}"
        out.print(f"no orphaned Spotwise instance or secret in {region}{where}", highlight=False)


def run(
    command: Annotated[list[str], typer.Argument(help="The training command, after --.")],
    ckpt: Annotated[
        list[str] | None,
        typer.Option(
            "--ckpt",
            help="Checkpoint folder(s) of the command, sized for the ledger (repeat).",
            show_default=False,
        ),
    ] = None,
    launcher: Annotated[str, typer.Option("--launcher", help="local, aws or torchrun.")] = "local",
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
        typer.Option("--pools", help="Pools to use (local: trace names; aws: zones)."),
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
            help="torchrun, aws: MIN:MAX nodes that Spotwise launches and keeps: the rendezvous "
            "host and the on-demand floor, the rest on spot; a node taken back is replaced "
            "alone.",
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
            help="torchrun: the c10d rendezvous host:port (with --nodes on aws, its port: the "
            "other nodes reach the host at its private address).",
        ),
    ] = "127.0.0.1:29400",
    region: AwsRegion = "us-east-1",
    instance_type: AwsInstanceType = "p3.2xlarge",
    image_id: AwsImageId = None,
    bucket: AwsBucket = None,
    instance_profile: AwsInstanceProfile = None,
    secret_env: Annotated[
        list[str] | None,
        typer.Option(
            "--secret-env",
            help="aws: pass this environment variable to the job through SSM Parameter Store "
            "(never user data; repeat for more).",
            show_default=False,
        ),
    ] = None,
    security_group: AwsSecurityGroup = None,
    endpoint_url: AwsEndpointUrl = None,
    workdir: AwsWorkdir = Path("."),
    ignore_file: Annotated[
        Path | None,
        typer.Option(
            "--ignore-file",
            help="aws: gitignore-style rules for --workdir instead of its .gitignore files.",
            show_default=False,
        ),
    ] = None,
    setup: AwsSetup = None,
    wheel: Annotated[
        Path | None,
        typer.Option(
            "--wheel",
            help="aws: the Spotwise wheel to install on instances (default: built from this "
            "install's source).",
            show_default=False,
        ),
    ] = None,
    on_demand_after: Annotated[
        int,
        typer.Option(
            "--on-demand-after", min=0, help="Preemptions after which it stays on demand."
        ),
    ] = 3,
    migrate_risk: Annotated[
        float, typer.Option("--migrate-risk", min=0.0, max=1.0, help="1 = never move early.")
    ] = 0.5,
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
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    store: StoreOption = None,
) -> None:
    """Run COMMAND to completion across preemptions: ask the policy where, launch, forward
    notices, relaunch, move early on high risk, fall back to on-demand; log it to the ledger."""
    from spotwise.executor.launchers.registry import LAUNCHERS, AwsTarget, LaunchSettings
    from spotwise.executor.launchers.torchrun import Elastic
    from spotwise.executor.ledger.ledger import job_report, new_job_id
    from spotwise.executor.ledger.prices import price_book
    from spotwise.executor.supervise.supervised import client_factory, supervise
    from spotwise.executor.supervise.supervisor import SupervisorConfig
    from spotwise.policy.schemas import JobTerms

    drill_s = _drill_seconds(preempt_after, preempt_every)
    if checkpoint_minutes is not None:
        # the job's guard reads it (its instances inherit the supervisor's environment)
        os.environ["SPOTWISE_CHECKPOINT_S"] = f"{checkpoint_minutes * 60:g}"
    kind = LAUNCHERS.get(launcher)
    if kind is None:
        fail(f"--launcher must be one of {', '.join(LAUNCHERS)}, got {launcher[:40]!r}")
    plan = None
    if nodes is not None:
        plan = _node_plan(
            nodes, on_demand_floor, rdzv_endpoint, nproc_per_node, launcher, security_group
        )
    names = tuple(p.strip() for p in pools.split(",") if p.strip()) if pools else ()
    job_id = new_job_id()  # the ledger's, the instances' tags', the S3 prefix's, the secrets'
    try:
        low, _, high = nnodes.partition(":")
        launch = LaunchSettings(
            pools=names,
            traces=traces or settings.bundled_traces(),
            start_hours=start_hours,
            scale=scale,
            elastic=Elastic(
                min_nodes=int(low),
                max_nodes=int(high or low),
                nproc_per_node=nproc_per_node,
                rdzv_endpoint=rdzv_endpoint,
            ),
            aws=AwsTarget(
                region=region,
                instance_type=instance_type,
                image_id=image_id,
                bucket=bucket,
                instance_profile=instance_profile,
                zones=names,
                endpoint_url=endpoint_url,
                security_groups=tuple(security_group or ()),
                workdir=str(workdir),
                setup=tuple(setup or ()),
            ),
            secrets=_secrets(secret_env or []) if launcher == "aws" else {},
            ignore_file=ignore_file,
            wheel=wheel,
            job_id=job_id,
        )
        chosen = kind.build(launch)
        if plan is None:  # with --nodes every node's command is wrapped as it is launched
            command = kind.wrap(command, launch)
        with open_store(store) as market:
            store_path = market.path
            prices = price_book(
                market,
                chosen.pools,
                instance_type=instance_type,
                home_region=region if launcher == "aws" else None,
                spot_price=spot_price,
                on_demand_price=on_demand_price,
            )
        if not chosen.simulated:  # real money: what it is quoted on, as plan flags it
            for line in prices.stale_lines():
                say(f"warning: {line}")
        job = JobTerms(
            compute_hours=compute_hours,
            deadline_hours=deadline_hours,
            spot_price=prices.typical_spot(),
            on_demand_price=prices.on_demand_quote().usd_per_hour,
        )
        if not job.feasible:
            fail(
                f"--deadline-hours {deadline_hours} is shorter than --compute-hours "
                f"{compute_hours} plus one changeover ({job.changeover_hours} h): no schedule fits"
            )
    except (PolicyError, ValueError, ExecutorError) as exc:
        fail(str(exc))
    config = SupervisorConfig(
        job=job,
        policy=policy_name,
        lead_s=lead_s,
        on_demand_after=on_demand_after,
        migrate_risk=migrate_risk,
        max_failures=max_failures,
        ckpt_dirs=tuple(Path(c) for c in ckpt or [] if "://" not in c),
        stall_timeout_s=stall_timeout or None,
        spot_check_s=spot_check_s or None,
        cancel_grace_s=cancel_grace,
        prices=prices,
        drill_after_s=drill_s,
        drill_every=preempt_every is not None,
        waiting_report_s=waiting_report_s or None,
    )
    try:
        supervised = supervise(
            command,
            store_path=store_path,
            launcher=chosen,
            config=config,
            client_for=client_factory(policy_url, settings.current().api_token),
            name=name or job_name(command),
            progress=lambda m: say(f"… {m}"),
            job_id=job_id,
            nodes=plan,
        )
    except Cancelled as exc:
        say(str(exc))
        with open_operational_store(store) as market:
            _print_report(job_report(market, exc.job_id).to_dict(), as_json)
        raise typer.Exit(128 + exc.signum) from None
    except (ExecutorError, PolicyError, PricingError) as exc:
        fail(str(exc))
    _print_report(supervised.to_dict(), as_json)


def _node_plan(
    nodes: str,
    floor: str,
    rdzv_endpoint: str,
    nproc_per_node: int,
    launcher: str,
    security_groups: list[str] | None,
) -> NodePlan:
    """``--nodes MIN:MAX`` and ``--on-demand-floor K|auto`` as a plan, or a clear exit."""
    from spotwise.executor.supervise.elastic import NodePlan

    if launcher not in ("torchrun", "aws"):
        fail(
            f"--nodes needs --launcher torchrun (nodes on the replayed market) or aws (got "
            f"{launcher}): each node runs as a torchrun elastic agent"
        )
    if launcher == "aws" and not security_groups:
        fail(
            "--launcher aws --nodes needs --security-group: one that lets the nodes reach each "
            "other on every TCP port (the rendezvous, the workers' store, gloo/NCCL); "
            "`spotwise setup aws` makes spotwise-nodes and prints its id"
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


def job_name(command: list[str]) -> str:
    """The script a command runs: ``python train.py`` → ``train.py``, ``python -m pkg.mod`` →
    ``pkg.mod``, ``torchrun ... train.py`` → ``train.py``; else the program."""
    for i, arg in enumerate(command):
        if arg == "-m" and i + 1 < len(command):
            return command[i + 1]
        if arg.endswith(".py") or arg.endswith(".sh"):
            return Path(arg).name
    return Path(command[0]).name if command else "job"


def _secrets(names: list[str]) -> dict[str, str]:
    missing = [n for n in names if n not in os.environ]
    if missing:
        fail(f"--secret-env {', '.join(missing)}: not set in this environment")
    return {n: os.environ[n] for n in names}


def _print_report(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(report, default=str))
        return
    out.print(
        f"job {report['job_id']} ({report['status']}"
        f"{_simulated(report)}): "
        f"${report['cost_usd']:,.2f} against "
        f"${report['on_demand_cost_usd']:,.2f} on demand ({report['savings_pct']:.1f}% saved)"
    )
    if report.get("prices"):
        out.print(
            f"  on demand = {report['hours_needed']:.2f} h needed (instance hours less work "
            f"redone) × the on-demand price of {report['prices']['instance_type']} in the "
            "region each ran in"
        )
        for line in _price_lines(report["prices"]):
            out.print(f"  {line}")
    b = report["breakdown"]
    out.print(
        f"  compute ${b['compute']:,.2f} + storage ${b['storage']:,.4f} + recovery "
        f"${b['recovery']:,.2f}"
    )
    for market, m in report["markets"].items():
        out.print(f"  {market}: {m['hours']:.2f} h, ${m['cost_usd']:,.2f}")
    out.print(
        f"  {plural(report['instances'], 'instance')}, "
        f"{plural(report['preemptions'], 'preemption')} "
        f"({plural(report['notices'], 'notice')}), {plural(report['migrations'], 'migration')}, "
        f"{report['lost_work_hours']:.2f} h of work lost, "
        f"{report['checkpoint_bytes'] / 1e6:.1f} MB of checkpoints"
    )
    if report.get("pending_writes"):
        out.print(
            styled(
                f"  {report['pending_writes']} ledger writes pending",
                "yellow",
                ": counted here, and in the store once its supervisor (or the next "
                "`spotwise jobs` command) finds it free",
            )
        )


def _simulated(report: dict[str, Any]) -> str:
    if not report["simulated"]:
        return ""
    return f", simulated on a {report.get('simulation') or 'replayed market'}"


def _price_lines(prices: dict[str, Any]) -> list[str]:
    """One line per distinct quote: the pools (or regions) it prices, the price, its source
    and time."""
    from dataclasses import asdict

    from spotwise.executor.ledger.prices import stale_mark
    from spotwise.pricing.quotes import Quote

    lines = []
    for market, by_place in (("spot", prices["spot"]), ("on-demand", prices["on_demand"])):
        groups: dict[Quote, list[str]] = {}
        for place, quote in by_place.items():
            groups.setdefault(Quote(**quote), []).append(place or "every pool")
        for quote, places in groups.items():
            stale = stale_mark(asdict(quote), prices.get("priced_at"))
            lines.append(f"{market} {', '.join(places)}: {quote.describe()}{stale}")
    return lines


@contextmanager
def _ledger_store(store: Path | None) -> Iterator[OperationalStore]:
    """The store for reading the ledger: opened for writing when it exists (to migrate an older
    store and write the ledger writes a gone supervisor left pending), else read-only."""
    from spotwise.executor.ledger.journal import replay_orphans
    from spotwise.pricing.operational import operational_exists

    missing = not operational_exists(settings.store_path(store))
    with open_operational_store(store, read_only=missing) as market:
        if not missing:
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
        print(json.dumps(rows, default=lambda v: v.isoformat() if hasattr(v, "isoformat") else v))
        return
    if not rows:
        out.print("no jobs yet: run `spotwise demo` or `spotwise run -- COMMAND`")
        return
    table = Table("job", "name", "status", "started", "cost $", "preemptions", "migrations")
    for row in rows:
        table.add_row(
            str(row["job_id"]),
            str(row["name"]),
            str(row["status"]) + (f" ({row['pending']} pending)" if row["pending"] else ""),
            str(row["started"])[:19],
            f"{row['cost_usd']:,.2f}" + (" (simulated)" if row["simulated"] else ""),
            str(row["preemptions"]),
            str(row["migrations"]),
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
    import time

    from spotwise.executor.ledger.ledger import job_report
    from spotwise.executor.supervise.job_log import instance_logs, log_folder

    path = settings.store_path(store)
    printed: dict[int, int] = {}
    """Lines printed of each instance (by its number)."""
    told: set[int] = set()
    while True:
        with open_operational_store(store, read_only=True) as market:
            try:
                status = job_report(market, job_id).status
            except PricingError as exc:
                fail(str(exc))
        logs = instance_logs(log_folder(path, job_id))
        for log in logs:
            if log.number not in printed:
                out.print(log.marker(), markup=False, highlight=False, soft_wrap=True)
                printed[log.number] = 0
            for line in log.lines[printed[log.number] :]:
                out.print(f"[{log.where}] {line}", markup=False, highlight=False, soft_wrap=True)
            printed[log.number] = len(log.lines)
        last = logs[-1] if logs else None
        if status == "running" and (last is None or not last.lines):
            key = last.number if last is not None else 0
            if key not in told:
                told.add(key)
                say(_no_output_yet(job_id, last))
        elif status != "running" and not any(log.lines for log in logs):
            say(f"job {job_id} ({status}) printed nothing")
        if not follow or status != "running":
            return
        time.sleep(poll_s)


def _no_output_yet(job_id: str, log: Any) -> str:
    """What a running job that has printed nothing (yet) waits for."""
    import time

    if log is None:
        return f"job {job_id}: no instance has started yet (the supervisor is choosing where)"
    since = ""
    if log.launched_at is not None:
        minutes = max(0.0, time.time() - log.launched_at) / 60
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
    """One job's cost so far, savings against on-demand and cost breakdown."""
    from spotwise.executor.ledger.ledger import job_report

    with _ledger_store(store) as market:
        try:
            report = job_report(market, job_id)
        except PricingError as exc:
            fail(str(exc))
    _print_report(report.to_dict(), as_json)

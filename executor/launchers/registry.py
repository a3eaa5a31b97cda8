"""The launchers by name (``spotwise run --launcher NAME``): each builds a
:class:`~executor.launchers.base.Launcher` from one set of run settings, and may wrap the
command (``torchrun``). A name only ever selects an entry of :data:`LAUNCHERS`."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from spotwise.executor.code_bundle import ShippedCode
from spotwise.executor.errors import ExecutorError
from spotwise.executor.launchers.base import Launcher
from spotwise.executor.launchers.torchrun import Elastic, torchrun_command


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchSettings:
    """Everything a launcher may need from the command line."""

    pools: tuple[str, ...] = ()
    """The pools to use (local: trace names; aws: zones); empty = all of them."""
    traces: Path | None = None
    """local/torchrun: the folder of traces to replay."""
    start_hours: float = 0.0
    scale: float = 1.0
    elastic: Elastic = field(default_factory=Elastic)
    region: str = "us-east-1"
    instance_type: str = "p3.2xlarge"
    image_id: str | None = None
    bucket: str | None = None
    endpoint_url: str | None = None
    instance_profile: str | None = None
    security_groups: tuple[str, ...] = ()
    """aws: security groups for every instance (an elastic job's nodes reach each other
    through one; ``spotwise setup aws`` makes ``spotwise-nodes``)."""
    secrets: dict[str, str] = field(default_factory=dict)
    workdir: Path = Path(".")
    """aws: the folder shipped to each instance (its .gitignore honoured); the command runs
    there."""
    ignore_file: Path | None = None
    wheel: Path | None = None
    """aws: the Spotwise wheel to install there (default: built from the installed source)."""
    setup: tuple[str, ...] = ()
    """aws: commands run in the workdir before the command (e.g. pip install -r ...)."""


@dataclass(frozen=True, slots=True)
class LauncherKind:
    """How to build one kind of launcher, and what it does to the command."""

    build: Callable[[LaunchSettings], Launcher]
    wrap: Callable[[Sequence[str], LaunchSettings], list[str]] = lambda command, _: list(command)


def _replay(settings: LaunchSettings) -> Launcher:
    from spotwise.executor.launchers.local import Replay
    from spotwise.policy.traces import load_traces

    if settings.traces is None:
        raise ExecutorError("the local launcher needs traces to replay (--traces)")
    traces = load_traces(settings.traces)
    if settings.pools:
        traces = traces.subset(list(settings.pools))
    replay = Replay(traces=traces, start_hours=settings.start_hours, scale=settings.scale)
    return replay.launcher()


def ship_code(settings: LaunchSettings) -> ShippedCode:
    """Ship ``settings``' workdir and a Spotwise wheel to its bucket, once for any number of
    jobs (:func:`aws_launcher`).

    Raises:
        ExecutorError: when the AWS settings are incomplete, or the code cannot be shipped.
    """
    import sys

    from spotwise.executor.code_bundle import ship
    from spotwise.executor.launchers.aws import aws_session

    if not settings.image_id or not settings.bucket or not settings.instance_profile:
        raise ExecutorError(
            "--launcher aws needs --image-id (an AMI with Python 3.11+ and torch), --bucket "
            "(for the code, the logs and the exit codes) and --instance-profile (the role its "
            "instances use to reach them): see docs/aws.md"
        )
    session = aws_session(settings.region, "--launcher aws")
    s3 = session.client("s3", region_name=settings.region, endpoint_url=settings.endpoint_url)
    return ship(
        s3,
        settings.bucket,
        settings.workdir,
        ignore_file=settings.ignore_file,
        wheel=settings.wheel,
        say=lambda line: print(f"shipping {line}", file=sys.stderr),
    )


def aws_launcher(settings: LaunchSettings, code: ShippedCode) -> Launcher:
    """A launcher of one job's instances on AWS, running ``code`` (:func:`ship_code`'s)."""
    from spotwise.executor.launchers.aws import AwsLauncher, aws_session

    region = settings.region
    return AwsLauncher(
        session=aws_session(region, "--launcher aws"),
        region=region,
        zones=list(aws_zones(settings)),
        instance_type=settings.instance_type,
        image_id=str(settings.image_id),
        bucket=str(settings.bucket),
        job_id=uuid.uuid4().hex[:12],
        code=code,
        setup=settings.setup,
        endpoint_url=settings.endpoint_url,
        instance_profile=settings.instance_profile,
        secrets=settings.secrets,
        security_groups=settings.security_groups,
    )


def aws_zones(settings: LaunchSettings) -> tuple[str, ...]:
    """The zones ``settings`` name, or the region's first three."""
    region = settings.region
    return settings.pools or (f"{region}a", f"{region}b", f"{region}c")


def _aws(settings: LaunchSettings) -> Launcher:
    return aws_launcher(settings, ship_code(settings))


LAUNCHERS: dict[str, LauncherKind] = {
    "local": LauncherKind(_replay),
    "aws": LauncherKind(_aws),
    "torchrun": LauncherKind(_replay, lambda command, s: torchrun_command(command, s.elastic)),
}

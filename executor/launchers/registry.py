"""The launchers by name (``spotwise run --launcher NAME``): each builds a
:class:`~executor.launchers.base.Launcher` from one set of run settings, and may wrap the
command (``torchrun``). A name only ever selects an entry of :data:`LAUNCHERS`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from spotwise.executor.clouds.code_bundle import ShippedCode
from spotwise.executor.errors import ExecutorError
from spotwise.executor.launchers.base import Launcher
from spotwise.executor.launchers.torchrun import Elastic, torchrun_command


@dataclass(frozen=True, slots=True, kw_only=True)
class AwsTarget:
    """Where and as what a job's instances run on AWS: the account settings ``run``, ``fleet
    run`` and ``sweep run`` share (``--region``, ``--instance-type``, ...). Plain values, so a
    sweep's workers read it back from JSON."""

    region: str = "us-east-1"
    instance_type: str = "p3.2xlarge"
    image_id: str | None = None
    bucket: str | None = None
    instance_profile: str | None = None
    zones: tuple[str, ...] = ()
    """The zones to use; empty = the region's first three."""
    endpoint_url: str | None = None
    security_groups: tuple[str, ...] = ()
    """Security groups for every instance (an elastic job's nodes reach each other through
    one; ``spotwise setup aws`` makes ``spotwise-nodes``)."""
    workdir: str = "."
    """The folder shipped to each instance (its .gitignore honoured); the command runs there."""
    setup: tuple[str, ...] = ()
    """Commands run in the workdir before the command (e.g. pip install -r ...)."""

    def require_complete(self) -> None:
        """Refuse settings no instance can be launched with.

        Raises:
            ExecutorError: without an image, a bucket or an instance profile.
        """
        if not self.image_id or not self.bucket or not self.instance_profile:
            raise ExecutorError(
                "--launcher aws needs --image-id (an AMI with Python 3.11+ and torch), --bucket "
                "(for the code, the logs and the exit codes) and --instance-profile (the role "
                "its instances use to reach them): see docs/aws.md"
            )

    @property
    def zones_or_default(self) -> tuple[str, ...]:
        """The zones named, or the region's first three."""
        region = self.region
        return self.zones or (f"{region}a", f"{region}b", f"{region}c")


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchSettings:
    """Everything a launcher may need from the command line."""

    pools: tuple[str, ...] = ()
    """local/torchrun: the traces to replay; empty = all of them."""
    traces: Path | None = None
    """local/torchrun: the folder of traces to replay."""
    start_hours: float = 0.0
    scale: float = 1.0
    elastic: Elastic = field(default_factory=Elastic)
    aws: AwsTarget = field(default_factory=AwsTarget)
    secrets: dict[str, str] = field(default_factory=dict)
    """aws: environment variables the command gets on its instances, kept out of user data."""
    ignore_file: Path | None = None
    wheel: Path | None = None
    """aws: the Spotwise wheel to install there (default: built from the installed source)."""
    job_id: str = ""
    """aws: the ledger's id of the job (:func:`~executor.ledger.ledger.new_job_id`), on its
    instances' tags, its S3 prefix and its secrets' path."""


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


def ship_code(
    aws: AwsTarget, *, ignore_file: Path | None = None, wheel: Path | None = None
) -> ShippedCode:
    """Ship ``aws``' workdir and a Spotwise wheel to its bucket, once for any number of jobs
    (:func:`aws_launcher`).

    Raises:
        ExecutorError: when the AWS settings are incomplete (:meth:`AwsTarget.require_complete`),
            or the code cannot be shipped.
    """
    import sys

    from spotwise.executor.clouds.aws.launcher import aws_session
    from spotwise.executor.clouds.code_bundle import ship

    aws.require_complete()
    session = aws_session(aws.region, "--launcher aws")
    s3 = session.client("s3", region_name=aws.region, endpoint_url=aws.endpoint_url)
    return ship(
        s3,
        str(aws.bucket),
        Path(aws.workdir),
        ignore_file=ignore_file,
        wheel=wheel,
        say=lambda line: print(f"shipping {line}", file=sys.stderr),
    )


def aws_launcher(
    aws: AwsTarget, code: ShippedCode, secrets: dict[str, str] | None = None, *, job_id: str
) -> Launcher:
    """A launcher of job ``job_id``'s instances on AWS, running ``code`` (:func:`ship_code`'s).
    ``job_id`` is the ledger's (:func:`~executor.ledger.ledger.new_job_id`, given to
    :func:`~executor.supervise.supervised.supervise` too): ``spotwise gc aws`` judges an instance
    by it.

    Raises:
        ExecutorError: without a job id.
    """
    from spotwise.executor.clouds.aws.launcher import AwsLauncher, aws_session

    if not job_id:
        raise ExecutorError("an AWS launcher needs the ledger's job id (new_job_id())")
    return AwsLauncher(
        session=aws_session(aws.region, "--launcher aws"),
        region=aws.region,
        zones=list(aws.zones_or_default),
        instance_type=aws.instance_type,
        image_id=str(aws.image_id),
        bucket=str(aws.bucket),
        job_id=job_id,
        code=code,
        setup=aws.setup,
        endpoint_url=aws.endpoint_url,
        instance_profile=aws.instance_profile,
        secrets=secrets or {},
        security_groups=aws.security_groups,
    )


def _aws(settings: LaunchSettings) -> Launcher:
    code = ship_code(settings.aws, ignore_file=settings.ignore_file, wheel=settings.wheel)
    return aws_launcher(settings.aws, code, settings.secrets, job_id=settings.job_id)


LAUNCHERS: dict[str, LauncherKind] = {
    "local": LauncherKind(_replay),
    "aws": LauncherKind(_aws),
    "torchrun": LauncherKind(_replay, lambda command, s: torchrun_command(command, s.elastic)),
}

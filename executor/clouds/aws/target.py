"""Where and as what a job's instances run on AWS: the account settings ``run``, ``fleet run``
and ``sweep run`` share, read from the options every cloud takes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from spotwise.executor.clouds.base import CloudOptions
from spotwise.executor.clouds.boot_script import python_path
from spotwise.executor.errors import ExecutorError

DEFAULT_REGION = "us-east-1"
DEFAULT_INSTANCE_TYPE = "p3.2xlarge"


@dataclass(frozen=True, slots=True, kw_only=True)
class AwsTarget:
    """An AWS account's settings for a job: plain values, so a sweep's workers read it back
    from JSON."""

    cloud: str = field(default="aws", init=False)
    region: str = DEFAULT_REGION
    instance_type: str = DEFAULT_INSTANCE_TYPE
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
    python: str | None = None
    """The user's ``--python``: the image's interpreter the boot tries first."""
    max_price: float | None = None
    """The spot request's MaxPrice in USD/h (None: up to the on-demand price)."""

    @classmethod
    def from_options(cls, options: CloudOptions) -> AwsTarget:
        """The target the shared cloud options name.

        Raises:
            ExecutorError: for ``--project``, which AWS does not take, and a ``--python`` that
                is not an absolute path.
        """
        if options.project:
            raise ExecutorError(
                "--project names a GCP project or an Azure subscription; AWS takes the account "
                "from its credentials (AWS_PROFILE): leave --project out"
            )
        return cls(
            region=options.region or DEFAULT_REGION,
            instance_type=options.instance_type or DEFAULT_INSTANCE_TYPE,
            image_id=options.image,
            bucket=options.bucket,
            instance_profile=options.identity,
            zones=options.zones,
            endpoint_url=options.endpoint_url,
            security_groups=options.network,
            workdir=options.workdir,
            setup=options.setup,
            python=python_path(options.python),
            max_price=options.max_price,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AwsTarget:
        """The target back from :meth:`to_dict` (lists become tuples)."""
        values = {k: v for k, v in data.items() if k != "cloud"}
        for name in ("zones", "setup", "security_groups"):
            values[name] = tuple(values.get(name, ()))
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """Plain values (JSON)."""
        return asdict(self)

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

    @property
    def home_region(self) -> str:
        """The region whose on-demand price a job is compared with."""
        return self.region

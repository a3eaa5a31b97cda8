"""Where and as what a job's servers run on Huawei Cloud: the project's settings ``run``, ``fleet
run`` and ``sweep run`` share, read from the options every cloud takes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from spotwise.executor.clouds.base import CloudOptions
from spotwise.executor.clouds.boot_script import python_path
from spotwise.executor.errors import ExecutorError

DEFAULT_REGION = "ap-southeast-1"
DEFAULT_FLAVOR = "p3.2xlarge.8"
REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-\d{1,2}")
"""How Huawei writes a region (``ap-southeast-1``, ``cn-north-4``): it lands in host names."""
PROJECT_ID = re.compile(r"[0-9a-f]{32}")
"""A project id as IAM gives it: 32 hexadecimal digits."""
RESOURCE_ID = re.compile(r"[A-Za-z0-9-]{1,64}")
"""A VPC, subnet or image id (a UUID), and an agency's name."""
BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
"""An OBS bucket name (3-63 lower-case letters, digits, '.' and '-')."""


def _named(value: str | None, pattern: re.Pattern[str], flag: str, what: str) -> str | None:
    if value is not None and not pattern.fullmatch(value):
        raise ExecutorError(f"{flag} {value[:70]!r} is not {what}")
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class HuaweiTarget:
    """A Huawei Cloud project's settings for a job: plain values, so a sweep's workers read it
    back from JSON."""

    cloud: str = field(default="huawei", init=False)
    region: str = DEFAULT_REGION
    project_id: str | None = None
    instance_type: str = DEFAULT_FLAVOR
    """The ECS flavor."""
    image_id: str | None = None
    bucket: str | None = None
    """The OBS bucket of the code, the logs, the exit codes and the checkpoints."""
    agency: str | None = None
    """The ECS agency the servers run as (their OBS and secrets access)."""
    vpc_id: str | None = None
    subnet_id: str | None = None
    zones: tuple[str, ...] = ()
    """The zones to use; empty = the region's a, b and c."""
    endpoint_url: str | None = None
    """Another endpoint for ECS and CSMS (a local fake); OBS's is ``SPOTWISE_HUAWEI_OBS_URL``."""
    workdir: str = "."
    setup: tuple[str, ...] = ()
    python: str | None = None
    max_price: float | None = None
    """The most USD/h to bid (``spotPrice``; None: up to the on-demand price)."""

    @classmethod
    def from_options(cls, options: CloudOptions) -> HuaweiTarget:
        """The target the shared cloud options name.

        Raises:
            ExecutorError: naming the option that is not what Huawei takes there.
        """
        network = options.network
        if len(network) > 1 or (network and network[0].count("/") != 1):
            raise ExecutorError(
                f"--network {','.join(network)[:80]!r}: give the servers' VPC_ID/SUBNET_ID"
            )
        vpc, subnet = network[0].split("/") if network else (None, None)
        return cls(
            region=_named(
                options.region, REGION, "--region", "a Huawei Cloud region (ap-southeast-1)"
            )
            or DEFAULT_REGION,
            project_id=_named(
                options.project, PROJECT_ID, "--project", "a project id (32 hexadecimal digits)"
            ),
            instance_type=_named(
                options.instance_type,
                re.compile(r"[a-z0-9][a-z0-9.]{1,40}"),
                "--instance-type",
                "an ECS flavor (p3.2xlarge.8)",
            )
            or DEFAULT_FLAVOR,
            image_id=_named(options.image, RESOURCE_ID, "--image", "an image id"),
            bucket=_named(options.bucket, BUCKET, "--bucket", "an OBS bucket name"),
            agency=_named(options.identity, RESOURCE_ID, "--identity", "an agency name"),
            vpc_id=_named(vpc, RESOURCE_ID, "--network", "a VPC id"),
            subnet_id=_named(subnet, RESOURCE_ID, "--network", "a subnet id"),
            zones=options.zones,
            endpoint_url=options.endpoint_url,
            workdir=options.workdir,
            setup=options.setup,
            python=python_path(options.python),
            max_price=options.max_price,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HuaweiTarget:
        """The target back from :meth:`to_dict` (lists become tuples)."""
        values = {k: v for k, v in data.items() if k != "cloud"}
        for name in ("zones", "setup"):
            values[name] = tuple(values.get(name, ()))
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """Plain values (JSON)."""
        return asdict(self)

    def require_account(self, who: str) -> str:
        """The project id.

        Raises:
            ExecutorError: without ``--project``, saying who needs it.
        """
        if not self.project_id:
            raise ExecutorError(
                f"{who} needs --project PROJECT_ID (the region's project, on the console's "
                "My Credentials page): see docs/huawei.md"
            )
        return self.project_id

    def require_complete(self) -> None:
        """Refuse settings no server can be launched with.

        Raises:
            ExecutorError: naming every missing flag.
        """
        missing = [
            flag
            for flag, value in (
                ("--project", self.project_id),
                ("--image", self.image_id),
                ("--bucket", self.bucket),
                ("--identity (an ECS agency)", self.agency),
                ("--network VPC_ID/SUBNET_ID", self.vpc_id),
            )
            if not value
        ]
        if missing:
            raise ExecutorError(
                f"--launcher huawei needs {', '.join(missing)}: see docs/huawei.md "
                "(spotwise setup huawei makes the bucket)"
            )

    @property
    def zones_or_default(self) -> tuple[str, ...]:
        """The zones named, or the region's a, b and c."""
        return self.zones or tuple(f"{self.region}{letter}" for letter in "abc")

    @property
    def home_region(self) -> str:
        """The region whose on-demand price a job is compared with."""
        return self.region

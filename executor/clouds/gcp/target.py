"""Where and as what a job's VMs run on Google Cloud: the project settings ``run``, ``fleet
run`` and ``sweep run`` share, read from the options every cloud takes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from spotwise.executor.clouds.base import CloudOptions
from spotwise.executor.errors import ExecutorError

DEFAULT_REGION = "us-central1"
DEFAULT_INSTANCE_TYPE = "n1-standard-8+1xnvidia-tesla-v100"
SHAPE = re.compile(
    r"^(?P<machine>[a-z][a-z0-9]*-[a-z0-9-]+?)(?:\+(?P<count>[1-9]\d?)x(?P<gpu>[a-z][a-z0-9-]+))?$"
)
"""A GCE machine type, with ``+NxACCELERATOR`` for GPUs attached to an N1 machine (the names
of ``data/gpu_shapes.csv`` and :mod:`pricing.gpus`)."""
REGION = re.compile(r"^[a-z]+-[a-z]+\d+$")
ZONE = re.compile(r"^(?P<region>[a-z]+-[a-z]+\d+)-[a-z]$")
PROJECT = re.compile(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$|^[a-z][-a-z0-9.:]{4,60}[a-z0-9]$")
BUCKET = re.compile(r"^[a-z0-9][-a-z0-9_.]{1,220}[a-z0-9]$")
SERVICE_ACCOUNT = re.compile(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]@[-a-z0-9.:]+\.gserviceaccount\.com$")
ACCOUNT_ID = re.compile(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$")
NETWORK_TAG = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
IMAGE = re.compile(
    r"^(?:https://(?:www|compute)\.googleapis\.com/compute/v1/)?"
    r"(?:projects/(?P<project>[-a-z0-9.:]+)/global/images/)?(?P<family>family/)?"
    r"(?P<name>[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)$"
)
"""A GCE image: ``NAME``, ``projects/P/global/images/NAME`` or ``.../images/family/F``."""


@dataclass(frozen=True, slots=True)
class Shape:
    """A machine type and the GPUs it carries (attached, for N1; built in, for A2/A3/G2)."""

    machine_type: str
    accelerator: str
    """GCE's accelerator type (``nvidia-tesla-v100``); '' for a shape without GPUs."""
    count: int
    attached: bool
    """Whether the GPUs are attached to the machine (``guestAccelerators``), as on N1."""


def parse_shape(instance_type: str) -> Shape:
    """The machine type and GPUs of ``--instance-type`` (``n1-standard-8+1xnvidia-tesla-v100``,
    ``a2-highgpu-1g``: its GPUs from the GPU table).

    Raises:
        ExecutorError: for a name that is no machine type.
    """
    found = SHAPE.match(instance_type)
    if found is None:
        raise ExecutorError(
            f"--instance-type {instance_type[:60]!r} is not a GCE machine type: give one like "
            "a2-highgpu-1g, or an N1 type with GPUs attached, like "
            "n1-standard-8+1xnvidia-tesla-v100"
        )
    if found["gpu"]:
        return Shape(found["machine"], found["gpu"], int(found["count"]), attached=True)
    from spotwise.pricing.gpus import shape_of

    row = shape_of("gcp", instance_type)
    if row is not None and row.accelerator:
        return Shape(instance_type, row.accelerator, row.gpu_count, attached=False)
    return Shape(instance_type, "", 0, attached=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class GcpTarget:
    """A GCP project's settings for a job: plain values, so a sweep's workers read it back
    from JSON."""

    cloud: str = field(default="gcp", init=False)
    project: str | None = None
    region: str = DEFAULT_REGION
    instance_type: str = DEFAULT_INSTANCE_TYPE
    image: str | None = None
    bucket: str | None = None
    service_account: str | None = None
    """The email of the service account the VMs run as (``setup gcp`` makes
    ``spotwise-instance@PROJECT.iam.gserviceaccount.com``)."""
    zones: tuple[str, ...] = ()
    """The zones to use; empty = the region's -a, -b and -c."""
    endpoint_url: str | None = None
    """Another endpoint for Compute Engine, Secret Manager and IAM (a local server); storage
    goes where ``STORAGE_EMULATOR_HOST`` says."""
    network_tags: tuple[str, ...] = ()
    """Network tags on every VM (``setup gcp``'s firewall rule lets VMs tagged
    ``spotwise-nodes`` reach each other: an elastic job's nodes)."""
    workdir: str = "."
    """The folder shipped to each VM (its .gitignore honoured); the command runs there."""
    setup: tuple[str, ...] = ()
    """Commands run in the workdir before the command (e.g. pip install -r ...)."""

    @classmethod
    def from_options(cls, options: CloudOptions) -> GcpTarget:
        """The target the shared cloud options name.

        Raises:
            ExecutorError: for a bid (GCP has none), and for a value GCP cannot name.
        """
        if options.max_price is not None:
            raise ExecutorError(
                "--max-price: GCP Spot VMs take no bid (their price is Google's, and they are "
                "taken back for capacity, never for price): leave --max-price out"
            )
        target = cls(
            project=options.project,
            region=options.region or DEFAULT_REGION,
            instance_type=options.instance_type or DEFAULT_INSTANCE_TYPE,
            image=options.image,
            bucket=options.bucket,
            service_account=options.identity,
            zones=options.zones,
            endpoint_url=options.endpoint_url,
            network_tags=options.network,
            workdir=options.workdir,
            setup=options.setup,
        )
        target.validate()
        return target

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GcpTarget:
        """The target back from :meth:`to_dict` (lists become tuples)."""
        values = {k: v for k, v in data.items() if k != "cloud"}
        for name in ("zones", "setup", "network_tags"):
            values[name] = tuple(values.get(name, ()))
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """Plain values (JSON)."""
        return asdict(self)

    def validate(self) -> None:
        """Refuse a value no GCP resource can have, in one line naming the flag.

        Raises:
            ExecutorError: naming the flag and the form it takes.
        """
        self._validate_where()
        self._validate_resources()
        self._validate_network_tags()

    def _validate_where(self) -> None:
        """Refuse a project id, region or instance type no GCP project or VM can have."""
        if self.project is not None and not PROJECT.match(self.project):
            raise ExecutorError(
                f"--project {self.project[:60]!r} is not a GCP project id (6-30 lowercase "
                "letters, digits and dashes): `gcloud projects list` shows yours"
            )
        if not REGION.match(self.region):
            raise ExecutorError(f"--region {self.region[:40]!r} is not a GCP region (us-central1)")
        parse_shape(self.instance_type)

    def _validate_resources(self) -> None:
        """Refuse an image, bucket or service account no GCP resource can be named."""
        if self.image is not None and not IMAGE.match(self.image):
            raise ExecutorError(
                f"--image {self.image[:80]!r} is not a GCE image: NAME, "
                "projects/PROJECT/global/images/NAME or projects/PROJECT/global/images/family/F"
            )
        if self.bucket is not None and not BUCKET.match(self.bucket.removeprefix("gs://")):
            raise ExecutorError(f"--bucket {self.bucket[:80]!r} is not a GCS bucket name")
        if self.service_account is not None and not (
            SERVICE_ACCOUNT.match(self.service_account) or ACCOUNT_ID.match(self.service_account)
        ):
            raise ExecutorError(
                f"--service-account {self.service_account[:80]!r} is not a service account: "
                "give its email (NAME@PROJECT.iam.gserviceaccount.com)"
            )

    def _validate_network_tags(self) -> None:
        """Refuse a network tag GCE does not take."""
        for tag in self.network_tags:
            if not NETWORK_TAG.match(tag):
                raise ExecutorError(
                    f"--network {tag[:70]!r} is not a GCE network tag (lowercase letters, "
                    "digits and dashes, up to 63)"
                )

    def check_zones(self) -> None:
        """Refuse a zone outside the region.

        Raises:
            ExecutorError: naming the zone and the form it takes.
        """
        for zone in self.zones:
            found = ZONE.match(zone)
            if found is None or found["region"] != self.region:
                raise ExecutorError(
                    f"--pools {zone[:40]!r} is not a zone of {self.region} (like "
                    f"{self.region}-a); pass --region for another region's zones"
                )

    def require_complete(self) -> None:
        """Refuse settings no VM can be launched with.

        Raises:
            ExecutorError: without a project, an image, a bucket or a service account.
        """
        if not self.project or not self.image or not self.bucket or not self.service_account:
            raise ExecutorError(
                "--launcher gcp needs --project, --image (a GCE image with Python 3.11+ and "
                "torch), --bucket (a GCS bucket for the code, logs and exit codes) and "
                "--service-account (the VMs' service account, to reach them): see docs/gcp.md"
            )

    @property
    def bucket_name(self) -> str:
        """The bucket without a ``gs://``."""
        return (self.bucket or "").removeprefix("gs://").rstrip("/")

    @property
    def account_email(self) -> str:
        """The service account's email (an account id alone is the project's)."""
        account = self.service_account or ""
        if not account or "@" in account or not self.project:
            return account
        return f"{account}@{self.project}.iam.gserviceaccount.com"

    @property
    def shape(self) -> Shape:
        """The machine type and its GPUs."""
        return parse_shape(self.instance_type)

    @property
    def zones_or_default(self) -> tuple[str, ...]:
        """The zones named, or the region's -a, -b and -c."""
        region = self.region
        return self.zones or (f"{region}-a", f"{region}-b", f"{region}-c")

    @property
    def home_region(self) -> str:
        """The region whose on-demand price a job is compared with."""
        return self.region

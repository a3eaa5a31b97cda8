"""Where and as what a job's Pods run on a Kubernetes cluster: the kubeconfig and its context
(as ``kubectl`` reads them), the namespace, the platform whose spot nodes it selects, the
image, the GPUs per Pod, the PersistentVolumeClaim its checkpoints go to, read from the options
every cloud takes:

- ``--project [CONTEXT/]NAMESPACE`` (no context: the kubeconfig's current one),
- ``--region PLATFORM`` (``gke``, ``eks``, ``aks``, ``cce`` or ``generic``),
- ``--instance-type [SHAPE][+Ngpu]`` (a node's ``node.kubernetes.io/instance-type``, and the
  GPUs each Pod asks for; a shape of the GPU table gives its GPU count),
- ``--image``, ``--bucket CLAIM`` (a PersistentVolumeClaim that outlives the node, mounted at
  :data:`CHECKPOINT_MOUNT`), ``--identity SERVICE_ACCOUNT``, ``--pools`` (zones; on CCE the
  spot node pools), ``--endpoint-url`` (another apiserver, a local fake).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from spotwise.executor.clouds.base import CloudOptions
from spotwise.executor.clouds.kubernetes.platforms import PLATFORMS, Platform
from spotwise.executor.errors import ExecutorError

CHECKPOINT_MOUNT = "/spotwise"
"""Where each Pod mounts the claim (its checkpoints under ``checkpoints/RUN``)."""
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
CONTEXT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,252}$")
SHAPE = re.compile(r"^(?P<shape>[A-Za-z0-9][A-Za-z0-9._-]{0,62})?(?:\+(?P<gpus>[0-9]{1,2})gpu)?$")
IMAGE = re.compile(r"^[a-z0-9][a-z0-9._/:@-]{0,254}$")
WORKDIR = re.compile(r"^/[A-Za-z0-9._/+@=-]{0,1023}$")
"""A folder inside the image: absolute, plain characters (it becomes the Pod's workingDir)."""


def _refuse(flag: str, value: str, want: str) -> ExecutorError:
    return ExecutorError(f"{flag} {value[:80]!r}: {want}")


def gpus_of(shape: str) -> int:
    """The GPUs of a machine shape the GPU table knows, on any cloud (0 for one it does not)."""
    from spotwise.pricing.gpus import read_shapes

    return next((int(s.gpu_count) for s in read_shapes() if s.shape == shape), 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class KubernetesTarget:
    """A cluster's settings for a job: plain values, so a sweep's workers read them back from
    JSON."""

    cloud: str = field(default="kubernetes", init=False)
    context: str | None = None
    """The kubeconfig's context (None: its current one)."""
    namespace: str = "default"
    platform: str = "generic"
    shape: str | None = None
    """The nodes' ``node.kubernetes.io/instance-type`` (None: any spot node)."""
    gpus: int = 0
    image: str | None = None
    claim: str | None = None
    """The PersistentVolumeClaim of checkpoints (ReadWriteMany, or one node at a time)."""
    service_account: str | None = None
    zones: tuple[str, ...] = ()
    server: str | None = None
    """Another apiserver than the kubeconfig's (``--endpoint-url``)."""
    workdir: str = "."
    """The folder inside the image the command runs in (``.``: the image's WORKDIR)."""
    grace_s: int | None = None
    """``terminationGracePeriodSeconds`` (None: the platform's grace)."""

    @classmethod
    def from_options(cls, options: CloudOptions) -> KubernetesTarget:
        """The settings the shared options name.

        Raises:
            ExecutorError: for a value Kubernetes would refuse, or a flag it has no use for.
        """
        for flag, value in (
            ("--network", options.network),
            ("--setup", options.setup),
            ("--python", options.python),
            ("--max-price", options.max_price),
        ):
            if value:
                raise ExecutorError(
                    f"--launcher kubernetes takes no {flag}: the image holds the Python and its "
                    "setup, a spot node pool has no bid (docs/kubernetes.md)"
                )
        context, _, namespace = (options.project or "").rpartition("/")
        shape, gpus = cls._shape(options.instance_type or "")
        target = cls(
            context=context or None,
            namespace=namespace or "default",
            platform=options.region or "generic",
            shape=shape,
            gpus=gpus,
            image=options.image,
            claim=options.bucket,
            service_account=options.identity,
            zones=tuple(options.zones),
            server=options.endpoint_url,
            workdir=options.workdir,
        )
        target.check()
        return target

    @staticmethod
    def _shape(text: str) -> tuple[str | None, int]:
        found = SHAPE.match(text)
        if found is None:
            raise _refuse(
                "--instance-type",
                text,
                "a node's instance type and/or +Ngpu (a2-highgpu-1g, g5.xlarge+1gpu, +8gpu)",
            )
        shape = found["shape"]
        gpus = int(found["gpus"]) if found["gpus"] else gpus_of(shape) if shape else 0
        return shape, gpus

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> KubernetesTarget:
        """The settings back from :meth:`to_dict`."""
        values = {k: v for k, v in data.items() if k != "cloud"}
        values["zones"] = tuple(values.get("zones") or ())
        target = cls(**values)
        target.check()
        return target

    def to_dict(self) -> dict[str, Any]:
        """Plain values (JSON)."""
        data = asdict(self)
        data["zones"] = list(self.zones)
        return data

    def check(self) -> None:
        """Refuse a value Kubernetes would refuse, naming its flag.

        Raises:
            ExecutorError: in one line.
        """
        if self.platform not in PLATFORMS:
            raise _refuse("--region", self.platform, f"a platform: {', '.join(PLATFORMS)}")
        if self.context is not None and not CONTEXT.match(self.context):
            raise _refuse("--project", self.context, "CONTEXT/NAMESPACE, a kubeconfig context")
        for flag, value in (
            ("--project", self.namespace),
            ("--bucket", self.claim),
            ("--identity", self.service_account),
        ):
            if value is not None and not DNS_LABEL.match(value):
                raise _refuse(flag, value, "a Kubernetes name (lower-case letters, digits, -)")
        if self.image is not None and not IMAGE.match(self.image):
            raise _refuse("--image", self.image, "an image reference (registry/name:tag)")
        for zone in self.zones:
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}", zone):
                raise _refuse("--pools", zone, "a label value (letters, digits, . _ -)")
        if self.workdir != "." and not WORKDIR.match(self.workdir):
            raise _refuse(
                "--workdir",
                self.workdir,
                "a folder inside the image (an absolute path), or . for its WORKDIR: the image "
                "carries the code",
            )
        if self.platform == "cce" and not self.zones:
            raise ExecutorError(
                "--region cce needs --pools: the spot node pools' names (CCE marks no node as "
                "spot by a label; its pools carry cce.cloud.com/cce-nodepool)"
            )
        window = self.platform_rules.window_s
        if self.grace_s is not None and self.grace_s < 1:
            raise ExecutorError(f"a grace of {self.grace_s} s: give 1 s or more")
        if self.grace_s is not None and window is not None and self.grace_s > window:
            raise ExecutorError(
                f"a grace of {self.grace_s} s is outside {self.platform}'s window (1 to "
                f"{window} s): the node ends first, so the checkpoint must fit inside it"
            )

    def require_complete(self) -> None:
        """Refuse settings no Pod can be launched with.

        Raises:
            ExecutorError: naming the flags to give.
        """
        missing = [f for f, v in (("--image", self.image), ("--bucket", self.claim)) if not v]
        if missing:
            raise ExecutorError(
                f"--launcher kubernetes needs {' and '.join(missing)}: an image with Python "
                "3.11+, torch and spotwise, and the PersistentVolumeClaim its checkpoints go to"
            )

    @property
    def endpoint_url(self) -> str | None:
        """``--endpoint-url``: the apiserver that replaces the kubeconfig's (None: its own)."""
        return self.server

    @property
    def platform_rules(self) -> Platform:
        """The platform's spot rules."""
        return PLATFORMS[self.platform]

    @property
    def grace(self) -> int:
        """``terminationGracePeriodSeconds`` and the guard's window: the given one, else the
        platform's (:attr:`~.platforms.Platform.grace_s`)."""
        return self.grace_s or self.platform_rules.grace_s

    @property
    def instance_type(self) -> str:
        """The machine shape (``any`` when no shape is asked)."""
        return self.shape or "any"

    @property
    def zones_or_default(self) -> tuple[str, ...]:
        """The pools a job may run in (``any``: wherever the scheduler puts it)."""
        return self.zones or ("any",)

    @property
    def home_region(self) -> str:
        """The platform: its cloud's on-demand price is the comparison."""
        return self.platform

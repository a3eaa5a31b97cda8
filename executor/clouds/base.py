"""The cloud seam: what a cloud implements so that Spotwise can run a job there.

A cloud is one folder under ``executor/clouds/`` and one line in
:data:`~executor.clouds.registry.CLOUDS`. It turns the options every cloud shares
(:class:`CloudOptions`, the same flags for ``run``, ``fleet run`` and ``sweep run``) into its own
:class:`CloudTarget`, ships the code, launches and lists and ends instances by the ledger's job
id, holds the job's secrets, names where checkpoints go (its storage URL scheme) and which
notice source its instances watch, and sets up, checks and garbage-collects an account. The
contract suite (``tests/contracts/test_cloud_contract.py``) runs every registered cloud against
its local emulator.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from spotwise.core.echo import echo
from spotwise.executor.errors import ExecutorError

if TYPE_CHECKING:
    from spotwise.executor.clouds.code_bundle import Code
    from spotwise.executor.clouds.orphans import Judged, Verdict
    from spotwise.executor.launchers.base import Launcher
    from spotwise.executor.notices import MetadataSource

Say = Callable[[str], None]
CheckStatus = Literal["ok", "missing", "unknown", "skipped"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CloudOptions:
    """The cloud settings ``run``, ``fleet run`` and ``sweep run`` take, by one name for every
    cloud; each cloud reads them into its own :class:`CloudTarget` and refuses what it cannot
    use."""

    region: str | None = None
    """AWS region, GCP region, Azure location (None: the cloud's default)."""
    zones: tuple[str, ...] = ()
    """The pools to use (zones; empty: the cloud's default for the region)."""
    instance_type: str | None = None
    """EC2 instance type, GCE machine type (``+NxGPU`` for an N1 shape), Azure VM size."""
    image: str | None = None
    """AMI id, GCE image, Azure image URN: with Python 3.11 and torch."""
    bucket: str | None = None
    """Where the code, logs, exit codes and checkpoints go: an S3 or GCS bucket, an Azure
    storage account's container (``ACCOUNT/CONTAINER``)."""
    identity: str | None = None
    """What the instances run as: an instance profile, a service account, a managed identity."""
    network: tuple[str, ...] = ()
    """Security groups, network tags, a subnet: what lets an elastic job's nodes meet."""
    project: str | None = None
    """GCP project; Azure ``SUBSCRIPTION/RESOURCE_GROUP`` (AWS: none, the credentials' account)."""
    endpoint_url: str | None = None
    """Another endpoint for every API (a local emulator)."""
    workdir: str = "."
    """The folder shipped to each instance (its .gitignore honoured); the command runs there."""
    setup: tuple[str, ...] = ()
    """Commands run in the workdir before the command (no shell)."""
    python: str | None = None
    """The image's interpreter to run the job with (an absolute path; None: the boot script
    finds one, :data:`~executor.clouds.boot_script.IMAGE_PYTHONS`)."""
    max_price: float | None = None
    """The most USD/h to pay for spot (a bid; None: up to the on-demand price). Where the
    cloud honours it (AWS ``MaxPrice``, Azure ``max_price``) the instance is taken back when
    the price rises above it; GCP has no bid and refuses one."""

    def __post_init__(self) -> None:
        check_pools(self.zones)


POOL_NAME = re.compile(r"[A-Za-z0-9-]{1,40}")
"""What a pool's name holds on every cloud (an AWS or GCP zone, an Azure zone or location):
each cloud's own rule narrows it, none widens it."""


def check_pools(zones: Sequence[str]) -> None:
    """Refuse a ``--pools`` name no cloud has, before anything is built or shipped: the one
    rule every cloud's options pass (:class:`CloudOptions`).

    Raises:
        ExecutorError: naming the first such name, cut short.
    """
    for zone in zones:
        if not POOL_NAME.fullmatch(zone):
            raise ExecutorError(
                f"--pools {echo(zone)} is not a zone name (1-40 letters, digits and -): give "
                "the cloud's zones, comma-separated"
            )


class CloudTarget(Protocol):
    """Where and as what a job's instances run on one cloud: plain values, so a sweep's
    workers and a fleet read them back from JSON (:meth:`to_dict`)."""

    @property
    def cloud(self) -> str:
        """The cloud's name (its key in :data:`~executor.clouds.registry.CLOUDS`)."""
        ...

    @property
    def workdir(self) -> str:
        """The folder shipped to each instance."""
        ...

    @property
    def instance_type(self) -> str:
        """The machine shape its instances have."""
        ...

    @property
    def zones_or_default(self) -> tuple[str, ...]:
        """The pools a job may run in."""
        ...

    @property
    def home_region(self) -> str:
        """The region whose on-demand price a job is compared with."""
        ...

    def require_complete(self) -> None:
        """Refuse settings no instance can be launched with (an ExecutorError naming the
        flags to give)."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """Plain values (JSON), read back by :meth:`Cloud.target_from_dict`."""
        ...


@dataclass(frozen=True, slots=True)
class Check:
    """One line of a ``spotwise check CLOUD`` checklist, with its fix."""

    what: str
    status: CheckStatus
    detail: str
    fix: str = ""
    flag: str = ""
    """For a check that was skipped for want of a setting: the flag that gives it."""

    def line(self) -> str:
        """The line as printed: a mark, what, the detail, and the fix under it."""
        mark = {"ok": "✓", "missing": "✗", "unknown": "?", "skipped": "-"}[self.status]
        text = f"{mark} {self.what}: {self.detail}"
        return f"{text}\n    fix: {self.fix}" if self.fix else text


@dataclass(frozen=True, slots=True, kw_only=True)
class SetUp:
    """What ``spotwise setup CLOUD`` made or found, and the command to run next."""

    made: tuple[str, ...]
    """One line per resource: made, or found as it should be."""
    next_steps: tuple[str, ...]
    """What to do next, the ``check`` command first."""


class Cloud(Protocol):
    """One cloud Spotwise launches on (AWS, GCP, Azure): registered by name in
    :data:`~executor.clouds.registry.CLOUDS`, never loaded from a name a user gives."""

    @property
    def name(self) -> str:
        """``aws``, ``gcp``, ``azure``: the ``--launcher`` and ``setup``/``check``/``gc`` name."""
        ...

    @property
    def storage_scheme(self) -> str:
        """The URL scheme of its object store (``s3``, ``gs``, ``az``), for ``--ckpt``; empty
        for a cloud whose checkpoints go to a volume every instance mounts at one path
        (Kubernetes' claim): :meth:`checkpoint_url` is then a path under that mount, which
        this machine cannot read (:meth:`checkpoint_bytes` says why it is not sized)."""
        ...

    @property
    def notice_kind(self) -> type[MetadataSource] | None:
        """The notice source its instances watch (``SPOTWISE_NOTICES`` names it by the cloud's
        name): its ``notice.py``, with its metadata endpoint (``endpoint``, a ``CloudEndpoint``
        whose ``SPOTWISE_*`` variable overrides it). None for a cloud whose notice is the
        SIGTERM its instances get (Kubernetes' kubelet), which the guard always watches."""
        ...

    @property
    def notice_s(self) -> float:
        """Seconds between its preemption notice and the take-back: the guard's deadline (its
        notice source's ``notice_s``, the one definition)."""
        ...

    @property
    def docs(self) -> str:
        """The page of its account setup and permissions."""
        ...

    def target(self, options: CloudOptions) -> CloudTarget:
        """Its settings from the shared options (an ExecutorError for one it cannot use)."""
        ...

    def target_from_dict(self, data: Mapping[str, Any]) -> CloudTarget:
        """Its settings back from :meth:`CloudTarget.to_dict`."""
        ...

    def ship_code(
        self, target: CloudTarget, *, ignore_file: Path | None = None, wheel: Path | None = None
    ) -> Code:
        """Ship the workdir and a Spotwise wheel to its object store, once for any number of
        jobs; or, where the image carries the code (Kubernetes), ship nothing and say what the
        instances run (a :class:`~executor.clouds.code_bundle.CodeInImage`)."""
        ...

    def launcher(
        self,
        target: CloudTarget,
        code: Code,
        secrets: dict[str, str] | None = None,
        *,
        job_id: str,
    ) -> Launcher:
        """A launcher of job ``job_id``'s instances (the ledger's id, on every instance's tags
        or labels, its storage prefix and its secrets' names), running ``code``; ``secrets`` go
        to its secret store and reach the command's environment only."""
        ...

    def job_instances(self, target: CloudTarget, job_id: str) -> list[str]:
        """The ids of job ``job_id``'s instances that have not ended, by its tag or label."""
        ...

    def checkpoint_url(self, target: CloudTarget, run: str) -> str:
        """Where a run named ``run`` checkpoints: a prefix its instances' identity may write."""
        ...

    def checkpoint_bytes(self, target: CloudTarget, url: str) -> int:
        """The bytes stored under ``url``, a folder of the target's bucket (a job's
        checkpoints, sized for the ledger's storage cost); an ExecutorError for a URL of
        another store or bucket, and for checkpoints this machine cannot read (a volume in
        the cluster: the ledger leaves them not sized, with the error's reason)."""
        ...

    def set_up(self, target: CloudTarget, say: Say) -> SetUp:
        """Once per account: a private bucket, the instances' identity with the least
        permissions, the nodes' network rule. Running it again changes nothing."""
        ...

    def check(self, target: CloudTarget) -> Iterator[Check]:
        """Is the account ready for ``spotwise run``: one :class:`Check` per requirement, each
        as soon as it is decided."""
        ...

    def sweep(self, target: CloudTarget) -> Sweep:
        """``gc``'s pass over the account: its credentials taken (an ExecutorError in one line
        without them), nothing listed yet."""
        ...


class Sweep(Protocol):
    """One ``gc`` pass over a cloud account, with its credentials in hand: what it lists, each
    tagged resource judged as its listing comes, each ended as it is judged."""

    @property
    def looking(self) -> str:
        """What it lists, and where: the first line ``gc`` prints, before any listing."""
        ...

    def judged(
        self,
        verdicts: dict[str, Verdict] | None,
        host: str | None,
        *,
        named: frozenset[str],
        store_path: Path,
    ) -> Iterator[Judged]:
        """Its tagged instances, then its secrets, each judged by the ledger
        (:func:`~executor.clouds.orphans.judge`) as soon as its page of the listing comes:
        only what the ledger proves orphaned is to end."""
        ...

    def ended(self, judged: Iterable[Judged]) -> Iterator[Judged]:
        """Each of ``judged`` again: one to end once the cloud has taken its ending (an
        instance ended or its deletion under way, a secret deleted), one left at once. It
        returns only when every ending is done, so a failed one is said before gc's summary."""
        ...


@dataclass(frozen=True, slots=True)
class BucketFolder:
    """A folder of a cloud's bucket that a job checkpoints to (a
    :class:`~executor.checkpoint.places.CheckpointPlace`), sized through the cloud; for a
    cloud with no object store, a folder of the volume its instances mount."""

    cloud: Cloud
    target: CloudTarget
    url: str

    @property
    def where(self) -> str:
        """The folder's URL."""
        return self.url

    def nbytes(self) -> int:
        """The bytes of its objects (:meth:`Cloud.checkpoint_bytes`)."""
        return self.cloud.checkpoint_bytes(self.target, self.url)


def bucket_folder(url: str, scheme: str, bucket: str) -> str:
    """The key prefix (ending in ``/``) that ``url`` names in ``bucket`` of a ``scheme`` store.

    Raises:
        ExecutorError: for a URL of another store or another bucket.
    """
    head, sep, rest = url.partition("://")
    name, _, key = rest.partition("/")
    if not sep or head != scheme or name != bucket:
        raise ExecutorError(
            f"{echo(url, 120)} is not in {scheme}://{bucket}: checkpoints are sized where the "
            f"job's cloud keeps them (give a URL under {scheme}://{bucket}/)"
        )
    key = key.strip("/")
    if any(part in (".", "..") for part in key.split("/")) or not key.isprintable():
        raise ExecutorError(
            f"{echo(url, 120)}: a checkpoint folder is a plain path under {scheme}://{bucket}/ "
            "(no . or .. part, no control character)"
        )
    return f"{key}/" if key else ""

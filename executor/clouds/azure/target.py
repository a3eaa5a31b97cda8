"""Where and as what a job's VMs run on Azure: the subscription and resource group, the
location and its zones, the VM size, the image, the storage account's container, the managed
identity and the subnet, read from the options every cloud takes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from spotwise.executor.clouds.base import CloudOptions
from spotwise.executor.clouds.boot_script import python_path
from spotwise.executor.errors import ExecutorError

DEFAULT_LOCATION = "eastus"
DEFAULT_VM_SIZE = "Standard_NC6s_v3"
DEFAULT_ZONES = ("1", "2", "3")
IDENTITY_NAME = "spotwise-instance"
"""The managed identity ``setup azure`` makes when ``--identity`` names none."""
VNET_NAME = "spotwise-vnet"
SUBNET_NAME = "spotwise-nodes"
"""The subnet ``setup azure`` makes (with its network security group) when ``--network``
names none."""

SUBSCRIPTION = re.compile(r"^[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")
RESOURCE_GROUP = re.compile(r"^[-\w.()]{0,89}[-\w()]$")
LOCATION = re.compile(r"^[a-z][a-z0-9]{1,39}$")
ZONE = re.compile(r"^[1-9]$")
VM_SIZE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{1,63}$")
ACCOUNT = re.compile(r"^[a-z0-9]{3,24}$")
CONTAINER = re.compile(r"^(?=.{3,63}$)[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9]))*$")
URN_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{1,127}$")
IDENTITY_ID = re.compile(
    r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.ManagedIdentity/"
    r"userAssignedIdentities/[^/]+$",
    re.IGNORECASE,
)
SUBNET_ID = re.compile(
    r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Network/virtualNetworks/"
    r"[^/]+/subnets/[^/]+$",
    re.IGNORECASE,
)
IMAGE_ID = re.compile(
    r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Compute/.+$"
)


def _one_line(flag: str, value: str, want: str) -> ExecutorError:
    return ExecutorError(f"{flag} {value[:80]!r}: {want}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageRef:
    """An image as Azure takes it: a marketplace URN, or a resource id (a gallery or managed
    image)."""

    publisher: str = ""
    offer: str = ""
    sku: str = ""
    version: str = ""
    resource_id: str = ""

    @classmethod
    def parse(cls, text: str) -> ImageRef:
        """``publisher:offer:sku:version``, or an image's resource id.

        Raises:
            ExecutorError: anything else, in one line.
        """
        if IMAGE_ID.match(text):
            return cls(resource_id=text)
        parts = text.split(":")
        if len(parts) != 4 or not all(URN_PART.match(p) for p in parts):
            raise _one_line(
                "--image",
                text,
                "an image URN PUBLISHER:OFFER:SKU:VERSION (e.g. "
                "microsoft-dsvm:ubuntu-hpc:2404:latest) or an image's resource id",
            )
        publisher, offer, sku, version = parts
        return cls(publisher=publisher, offer=offer, sku=sku, version=version)

    def wire(self) -> dict[str, str]:
        """The VM's ``imageReference``."""
        if self.resource_id:
            return {"id": self.resource_id}
        return {
            "publisher": self.publisher,
            "offer": self.offer,
            "sku": self.sku,
            "version": self.version,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class AzureTarget:
    """An Azure subscription's settings for a job: plain values, so a sweep's workers read it
    back from JSON."""

    cloud: str = field(default="azure", init=False)
    subscription: str | None = None
    resource_group: str | None = None
    region: str = DEFAULT_LOCATION
    """The location (``eastus``)."""
    instance_type: str = DEFAULT_VM_SIZE
    """The VM size."""
    image: str | None = None
    """An image URN (``publisher:offer:sku:version``) or an image's resource id."""
    storage_account: str | None = None
    container: str | None = None
    identity: str | None = None
    """A user-assigned managed identity: its resource id, or its name in the resource group."""
    subnet: str | None = None
    """A subnet's resource id (None: the one ``setup azure`` makes)."""
    zones: tuple[str, ...] = ()
    """The pools: availability zones ("1", "2", "3") or the location itself where it has
    none; empty = zones 1 to 3."""
    endpoint_url: str | None = None
    """Another Resource Manager endpoint (a local emulator)."""
    workdir: str = "."
    setup: tuple[str, ...] = ()
    python: str | None = None
    """The user's ``--python``: the image's interpreter the boot tries first."""
    max_price: float | None = None
    """The most USD/h a Spot VM may cost (its ``billingProfile.maxPrice``; None: -1, up to the
    on-demand price)."""

    @classmethod
    def from_options(cls, options: CloudOptions) -> AzureTarget:
        """The target the shared cloud options name.

        Raises:
            ExecutorError: in one line, for a value Azure cannot take.
        """
        subscription, resource_group = _account(options.project)
        account, container = _storage(options.bucket)
        region = _location(options.region or DEFAULT_LOCATION)
        size = options.instance_type or DEFAULT_VM_SIZE
        if not VM_SIZE.match(size):
            raise _one_line("--instance-type", size, "an Azure VM size such as Standard_NC6s_v3")
        if options.image:
            ImageRef.parse(options.image)
        _check_identity(options.identity)
        return cls(
            subscription=subscription,
            resource_group=resource_group,
            region=region,
            instance_type=size,
            image=options.image,
            storage_account=account,
            container=container,
            identity=options.identity,
            subnet=_subnet(options.network),
            zones=options.zones,
            endpoint_url=options.endpoint_url,
            workdir=options.workdir,
            setup=options.setup,
            python=python_path(options.python),
            max_price=options.max_price,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AzureTarget:
        """The target back from :meth:`to_dict` (lists become tuples)."""
        values = {k: v for k, v in data.items() if k != "cloud"}
        for name in ("zones", "setup"):
            values[name] = tuple(values.get(name, ()))
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """Plain values (JSON)."""
        return asdict(self)

    def require_account(self, who: str) -> tuple[str, str]:
        """The subscription and resource group.

        Raises:
            ExecutorError: without ``--project``.
        """
        if not self.subscription or not self.resource_group:
            raise ExecutorError(
                f"{who} needs --project SUBSCRIPTION/RESOURCE_GROUP (`az account show --query "
                "id` gives the subscription): see docs/azure.md"
            )
        return self.subscription, self.resource_group

    def require_complete(self) -> None:
        """Refuse settings no VM can be launched with.

        Raises:
            ExecutorError: without a subscription, an image, a container or an identity.
        """
        if not (
            self.subscription
            and self.resource_group
            and self.image
            and self.storage_account
            and self.identity
        ):
            raise ExecutorError(
                "--launcher azure needs --project SUBSCRIPTION/RESOURCE_GROUP, --image (an image "
                "URN with Python 3.11+ and torch), --bucket STORAGE_ACCOUNT/CONTAINER (for the "
                "code, the logs and the exit codes) and --identity (the managed identity its "
                "VMs use to reach them): see docs/azure.md"
            )

    @property
    def zones_or_default(self) -> tuple[str, ...]:
        """The zones named, or zones 1 to 3."""
        return self.zones or DEFAULT_ZONES

    @property
    def home_region(self) -> str:
        """The location whose on-demand price a job is compared with."""
        return self.region

    @property
    def group_id(self) -> str:
        """The resource group's id."""
        subscription, group = self.require_account("azure")
        return f"/subscriptions/{subscription}/resourceGroups/{group}"

    @property
    def identity_id(self) -> str:
        """The managed identity's resource id (a bare name is the resource group's)."""
        name = self.identity or IDENTITY_NAME
        if name.startswith("/"):
            return name
        return f"{self.group_id}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/{name}"

    @property
    def subnet_id(self) -> str:
        """The subnet's resource id (``setup azure``'s when ``--network`` names none)."""
        return self.subnet or (
            f"{self.group_id}/providers/Microsoft.Network/virtualNetworks/{VNET_NAME}"
            f"/subnets/{SUBNET_NAME}"
        )

    @property
    def image_ref(self) -> ImageRef:
        """The image, parsed."""
        return ImageRef.parse(str(self.image))

    @property
    def vault_name(self) -> str:
        """The Key Vault ``setup azure`` makes for the job's secrets: one per resource group, a
        globally unique name of 3-24 characters derived from the subscription and group."""
        import hashlib

        subscription, group = self.require_account("azure")
        digest = hashlib.sha256(f"{subscription}/{group.lower()}".encode()).hexdigest()
        return f"spotwise-{digest[:12]}"


def _account(project: str | None) -> tuple[str | None, str | None]:
    """``--project SUBSCRIPTION/RESOURCE_GROUP`` split (None, None without one)."""
    if not project:
        return None, None
    subscription, _, group = project.partition("/")
    if not SUBSCRIPTION.match(subscription) or not RESOURCE_GROUP.match(group):
        raise _one_line(
            "--project",
            project,
            "give SUBSCRIPTION/RESOURCE_GROUP, a subscription id (a GUID: `az account show "
            "--query id`) and a resource group name",
        )
    return subscription, group


def _storage(bucket: str | None) -> tuple[str | None, str | None]:
    """``--bucket STORAGE_ACCOUNT/CONTAINER`` split (None, None without one)."""
    if not bucket:
        return None, None
    account, _, container = bucket.partition("/")
    if not ACCOUNT.match(account) or not CONTAINER.match(container):
        raise _one_line(
            "--bucket",
            bucket,
            "give STORAGE_ACCOUNT/CONTAINER (an account of 3-24 lowercase letters and digits, a "
            "container of 3-63 lowercase letters, digits and single hyphens)",
        )
    return account, container


def _location(region: str) -> str:
    """``--region``, an Azure location's name."""
    if not LOCATION.match(region):
        raise _one_line(
            "--region", region, "an Azure location as `az account list-locations` names it"
        )
    return region


def _check_identity(identity: str | None) -> None:
    """``--identity``: a managed identity's resource id or name."""
    if identity and not (IDENTITY_ID.match(identity) or NAME.match(identity)):
        raise _one_line(
            "--identity",
            identity,
            "a user-assigned managed identity's resource id, or its name in the resource group",
        )


def _subnet(network: tuple[str, ...]) -> str | None:
    """``--network``: at most one subnet's resource id."""
    if len(network) > 1 or (network and not SUBNET_ID.match(network[0])):
        raise _one_line(
            "--network",
            ", ".join(network),
            "one subnet's resource id (/subscriptions/.../virtualNetworks/VNET/subnets/NAME)",
        )
    return network[0] if network else None

"""``spotwise check azure``: is this subscription ready for ``spotwise run --launcher azure``?

Each check is one line with its fix: credentials, the subscription and its resource providers,
the resource group, the storage account and container (a probe blob written and deleted), the
image, the managed identity, the VM size in the location and its zones, the Spot vCPU quota,
the Key Vault (its secrets listed), and the subnet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from spotwise.executor.clouds.azure.clients import (
    NO_CREDENTIALS,
    arm,
    blob_service,
    error_code,
    first_line,
    secrets_client,
)
from spotwise.executor.clouds.azure.target import ZONE, AzureTarget, ImageRef
from spotwise.executor.clouds.base import Check
from spotwise.executor.clouds.image_python import python_note
from spotwise.executor.errors import ExecutorError

DOCS = "docs/azure.md"
PROBE_BLOB = "spotwise/check/probe"
PROVIDERS = (
    "Microsoft.Compute",
    "Microsoft.Network",
    "Microsoft.Storage",
    "Microsoft.KeyVault",
    "Microsoft.ManagedIdentity",
)
SUGGESTED_IMAGE = "microsoft-dsvm:ubuntu-hpc:2404:latest"
"""An image with NVIDIA's driver and a Python 3.11+ (Ubuntu 24.04's python3, 3.12)."""
SPOT_QUOTA = "lowPriorityCores"
"""Azure's regional Spot vCPU quota (every VM family's Spot VMs count against it)."""


class AzureCheck:
    """The checks for one subscription and one set of ``spotwise run`` settings."""

    def __init__(self, target: AzureTarget, credential: Callable[[], Any]) -> None:
        self.target = target
        self._credential = credential
        self.cred: Any = None
        self.group = target.resource_group or ""
        self._group_ok = False

    def run(self) -> Iterator[Check]:
        """Every check, in the order a user would fix them, each as soon as it is decided."""
        first = self.credentials()
        yield first
        if first.status != "ok":
            return
        subscription = self.subscription()
        yield subscription
        if subscription.status != "ok":
            return
        yield self.resource_group()
        yield self.storage()
        yield self.image()
        yield self.identity()
        yield self.size()
        yield self.quota()
        yield self.vault()
        yield self.subnet()

    def _arm(self, name: str) -> Any:
        return arm(self.target, name, self.cred)

    def credentials(self) -> Check:
        """The credentials check: whose they are, or the sign-in to run."""
        try:
            self.cred = self._credential()
        except ExecutorError:
            return Check("credentials", "missing", NO_CREDENTIALS.split(";")[0], "az login")
        return Check("credentials", "ok", "a Resource Manager token was issued")

    def subscription(self) -> Check:
        """The subscription check: these credentials see it, its providers are registered."""
        from azure.core.exceptions import AzureError

        what = "subscription and providers"
        subscription = self.target.subscription
        resources = self._arm("resource")
        missing = []
        try:
            for namespace in PROVIDERS:
                state = resources.providers.get(namespace).registration_state
                if state != "Registered":
                    missing.append(namespace)
        except AzureError as exc:
            if error_code(exc) in ("SubscriptionNotFound", "InvalidSubscriptionId"):
                return Check(
                    what,
                    "missing",
                    f"{subscription} is not a subscription these credentials can see",
                    "az account list --output table (and pass --project SUBSCRIPTION/GROUP)",
                )
            return Check(what, "unknown", first_line(exc))
        if missing:
            return Check(
                what,
                "missing",
                f"{subscription}: {', '.join(missing)} not registered",
                "; ".join(f"az provider register --namespace {n}" for n in missing),
            )
        return Check(what, "ok", f"{subscription}: {', '.join(PROVIDERS)} registered")

    def resource_group(self) -> Check:
        """The resource group check: it exists."""
        exists = self._arm("resource").resource_groups.check_existence(self.group)
        self._group_ok = bool(exists)
        if not exists:
            return Check(
                "resource group",
                "missing",
                f"{self.group} does not exist",
                f"spotwise setup azure --project {self.target.subscription}/{self.group} ...",
            )
        return Check("resource group", "ok", self.group)

    def _need_group(self, what: str) -> Check | None:
        return None if self._group_ok else Check(what, "skipped", "needs the resource group")

    def storage(self) -> Check:
        """The storage check: the account and container exist, private, writable."""
        from azure.core.exceptions import AzureError, ResourceNotFoundError

        what = "storage"
        account, name = self.target.storage_account, self.target.container
        if not account or not name:
            return Check(
                what,
                "skipped",
                "no --bucket given",
                "pass --bucket STORAGE_ACCOUNT/CONTAINER",
                "--bucket",
            )
        if skipped := self._need_group(what):
            return skipped
        storage = self._arm("storage")
        setup = f"spotwise setup azure --bucket {account}/{name} ..."
        try:
            found = storage.storage_accounts.get_properties(self.group, account)
            storage.blob_containers.get(self.group, account, name)
        except ResourceNotFoundError:
            return Check(what, "missing", f"{account}/{name} is not in {self.group}", setup)
        if found.properties.allow_blob_public_access:
            return Check(
                what,
                "missing",
                f"{account} allows public blob access",
                f"az storage account update -n {account} -g {self.group} "
                "--allow-blob-public-access false",
            )
        container = blob_service(self.target, self.cred).get_container_client(name)
        try:
            container.upload_blob(PROBE_BLOB, b"1", overwrite=True)
            container.delete_blob(PROBE_BLOB)
        except AzureError as exc:
            return Check(
                what,
                "missing",
                f"cannot write az://{name}/{PROBE_BLOB} ({first_line(exc)})",
                f"assign yourself Storage Blob Data Contributor on the container ({DOCS})",
            )
        return Check(what, "ok", f"az://{name} in {account}, private, writable")

    def image(self) -> Check:
        """The image check: it exists where the instances run."""
        from azure.core.exceptions import ResourceNotFoundError

        what = "image"
        if not self.target.image:
            return Check(what, "skipped", "no --image given", "pass --image URN", "--image")
        image = self.target.image_ref
        fix = (
            f"use an image with Python 3.11+ in this location, e.g. {SUGGESTED_IMAGE} (Ubuntu "
            "24.04: python3 3.12 and NVIDIA's driver; each boot installs torch from PyPI) or one "
            "of yours with torch (--image its resource id; az vm image list --all --publisher "
            "microsoft-dsvm --offer ubuntu-hpc), or pass spotwise run --python PATH of a Python "
            "3.11+ on this one"
        )
        if image.resource_id:
            return Check(what, "unknown", f"{image.resource_id}: a custom image, not looked up")
        images = self._arm("compute").virtual_machine_images
        location = self.target.region
        urn = f"{image.publisher}:{image.offer}:{image.sku}:{image.version}"
        try:
            if image.version == "latest":
                found = images.list(location, image.publisher, image.offer, image.sku, top=1)
                if not found:
                    return Check(what, "missing", f"{urn} has no version in {location}", fix)
            else:
                images.get(location, image.publisher, image.offer, image.sku, image.version)
        except ResourceNotFoundError:
            return Check(what, "missing", f"{urn} is not in {location}", fix)
        return _image_python(image, f"{urn} in {location}", fix)

    def identity(self) -> Check:
        """The managed identity check: it exists in the resource group."""
        from azure.core.exceptions import ResourceNotFoundError

        what = "managed identity"
        if not self.target.identity:
            return Check(
                what,
                "skipped",
                "no --identity given",
                f"pass --identity NAME (the VMs' identity, {DOCS})",
                "--identity",
            )
        parts = self.target.identity_id.split("/")
        try:
            found = self._arm("msi").user_assigned_identities.get(parts[4], parts[-1])
        except ResourceNotFoundError:
            return Check(
                what,
                "missing",
                f"{parts[-1]} is not in {parts[4]}",
                f"spotwise setup azure --identity {parts[-1]} ... (it assigns its roles)",
            )
        return Check(what, "ok", f"{parts[-1]} (client id {found.client_id})")

    def size(self) -> Check:
        """The VM size offered in the location and in each zone wanted, for this subscription."""
        what = "VM size"
        size, location = self.target.instance_type, self.target.region
        sku = _find_sku(self._arm("compute").resource_skus, location, size)
        fix = f"az vm list-skus --location {location} --size {size} --output table"
        if sku is None:
            return Check(what, "missing", f"{size} is not offered in {location}", fix)
        self.vcpus = _vcpus(sku)
        usable = _usable_zones(sku)
        wanted = [z for z in self.target.zones_or_default if ZONE.match(z)]
        lacking = [z for z in wanted if z not in usable]
        if lacking:
            return Check(
                what,
                "missing",
                f"{size} is not available in zone {', '.join(lacking)} of {location} for this "
                f"subscription (zones: {', '.join(sorted(usable)) or 'none'})",
                f"pass --pools with zones that have it, or {location} alone ({fix})",
            )
        return Check(what, "ok", f"{size} ({sku.family}) in {location}, zones {', '.join(wanted)}")

    def quota(self) -> Check:
        """The Spot quota check: enough is left for one instance of the shape."""
        what = "spot vCPU quota"
        location = self.target.region
        usages = list(self._arm("compute").usage.list(location))
        spot = next((u for u in usages if u.name.value == SPOT_QUOTA), None)
        if spot is None:
            return Check(what, "unknown", f"no {SPOT_QUOTA} usage in {location}")
        vcpus = getattr(self, "vcpus", None) or 1
        left = spot.limit - spot.current_value
        detail = (
            f"'{spot.name.localized_value}' in {location}: {spot.current_value} of "
            f"{spot.limit} used; one {self.target.instance_type} takes {vcpus}"
        )
        if left < vcpus:
            return Check(
                what,
                "missing",
                detail,
                "request more Spot vCPUs: portal → Quotas → Compute → "
                f"'{spot.name.localized_value}' in {location} (at least {vcpus})",
            )
        return Check(what, "ok", detail)

    def vault(self) -> Check:
        """The Key Vault check: it exists and its secrets can be listed."""
        from azure.core.exceptions import AzureError, ResourceNotFoundError

        what = "Key Vault"
        if skipped := self._need_group(what):
            return skipped
        name = self.target.vault_name
        try:
            vault = self._arm("keyvault").vaults.get(self.group, name)
        except ResourceNotFoundError:
            return Check(
                what,
                "missing",
                f"{name} (the jobs' secrets) is not in {self.group}",
                "spotwise setup azure ...",
            )
        client = secrets_client(
            str(vault.properties.vault_uri), self.cred, emulated=bool(self.target.endpoint_url)
        )
        try:
            next(iter(client.list_properties_of_secrets()), None)
        except AzureError as exc:
            return Check(
                what,
                "missing",
                f"cannot list the secrets of {name} ({first_line(exc)})",
                f"assign yourself Key Vault Secrets Officer on the vault ({DOCS})",
            )
        return Check(what, "ok", f"{name} ({vault.properties.vault_uri})")

    def subnet(self) -> Check:
        """The subnet check: it exists."""
        from azure.core.exceptions import ResourceNotFoundError

        what = "subnet"
        parts = self.target.subnet_id.split("/")
        try:
            self._arm("network").subnets.get(parts[4], parts[8], parts[10])
        except ResourceNotFoundError:
            return Check(
                what,
                "missing",
                f"{parts[8]}/{parts[10]} is not in {parts[4]}",
                "spotwise setup azure ... (it makes one), or pass --network SUBNET_ID",
            )
        return Check(what, "ok", f"{parts[8]}/{parts[10]}")


def _image_python(image: ImageRef, detail: str, fix: str) -> Check:
    """The image check of a marketplace image that exists: what its offer and SKU say of its
    Python. A Data Science VM's conda environments (``/anaconda/envs``, which the boot tries)
    are not named there: an old ``python3`` then leaves it unknown."""
    note = python_note(f"{image.offer}:{image.sku}")
    if note is None:
        return Check(
            "image",
            "unknown",
            f"{detail}; its Python is not known from its name (the boot needs 3.11+)",
            fix,
        )
    old, why = note
    conda = image.publisher.lower() == "microsoft-dsvm" and not image.offer.startswith("ubuntu-hpc")
    if old and conda:
        return Check("image", "unknown", f"{detail}: {why}; its conda environments may not", fix)
    if old:
        return Check(
            "image", "missing", f"{detail}: {why}, and no other Python is known on it", fix
        )
    torch = "; torch is not on it: each boot installs it from PyPI (minutes)"
    return Check("image", "ok", f"{detail}: {why}{torch if not conda else ''}")


def _find_sku(skus: Any, location: str, size: str) -> Any:
    """Resource SKUs' entry of the VM size ``size`` in ``location`` (None: not offered)."""
    listed = skus.list(filter=f"location eq '{location}'")
    return next(
        (
            s
            for s in listed
            if s.resource_type == "virtualMachines" and str(s.name).lower() == size.lower()
        ),
        None,
    )


def _vcpus(sku: Any) -> int | None:
    """The size's vCPUs, from its capabilities."""
    return next((int(c.value) for c in sku.capabilities or [] if c.name == "vCPUs"), None)


def _usable_zones(sku: Any) -> set[str]:
    """The zones that offer the size, less those restricted for this subscription."""
    offered = {z for info in sku.location_info or [] for z in info.zones or []}
    barred = {
        z
        for restriction in sku.restrictions or []
        if restriction.restriction_info
        for z in restriction.restriction_info.zones or []
    }
    return offered - barred

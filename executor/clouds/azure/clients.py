"""Azure's client libraries, reached the one way every Azure command uses: a credential
(azure-identity's DefaultAzureCredential: ``az login``, a service principal's variables, a
managed identity), Resource Manager clients at ``--endpoint-url`` or Azure's own, the storage
account's Blob container, and the resource group's Key Vault. Each library is imported here,
inside a function, so that ``spotwise --help`` and the other clouds never load it; without the
``azure`` extra one line says what to install.

Blob storage is reached with the credential at ``https://ACCOUNT.blob.core.windows.net``, or
with ``AZURE_STORAGE_CONNECTION_STRING`` when it is set (the variable the Azure CLI and adlfs
read; a local emulator such as Azurite is reached that way).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

from spotwise.executor.clouds.azure.target import AzureTarget
from spotwise.executor.errors import ExecutorError

T = TypeVar("T")
EXTRA = "pip install 'spotwise[azure]'"
CONNECTION_STRING = "AZURE_STORAGE_CONNECTION_STRING"
NO_CREDENTIALS = (
    "no Azure credentials found; run `az login`, or set AZURE_CLIENT_ID, AZURE_TENANT_ID and "
    "AZURE_CLIENT_SECRET, then run again"
)
CAPACITY_CODES = {
    "AllocationFailed",
    "ZonalAllocationFailed",
    "OverconstrainedAllocationRequest",
    "OverconstrainedZonalAllocationRequest",
    "SkuNotAvailable",
    "SpotPriceGreaterThanProvidedMaxPrice",
    "OperationNotAllowed",  # a quota the request would pass (Spot vCPUs)
}
"""Resource Manager's answers to a Spot VM that mean: not here, not now (capacity, the size
in that zone, the price cap, the quota), so the supervisor may choose again."""


def need_library(who: str) -> None:
    """Raise one line naming the extra when the Azure libraries are not installed.

    Raises:
        ExecutorError: without azure-identity, azure-mgmt-compute or azure-storage-blob.
    """
    try:
        import azure.identity
        import azure.mgmt.compute
        import azure.storage.blob  # noqa: F401
    except ImportError:
        raise ExecutorError(
            f"{who}: the Azure libraries are not installed; {EXTRA}, then run again"
        ) from None


def credential(who: str) -> Any:
    """DefaultAzureCredential, once it has shown it can get a Resource Manager token.

    Raises:
        ExecutorError: in one line, without credentials (``who`` says what needed them).
    """
    need_library(who)
    import logging

    from azure.core.exceptions import ClientAuthenticationError
    from azure.identity import DefaultAzureCredential

    # it logs every credential it tried as a warning: the one line below says it all
    logging.getLogger("azure.identity").setLevel(logging.ERROR)
    found = DefaultAzureCredential()
    try:
        found.get_token("https://management.azure.com/.default")
    except ClientAuthenticationError:
        raise ExecutorError(f"{who}: {NO_CREDENTIALS}") from None
    return found


CLIENTS: dict[str, tuple[str, str]] = {
    "compute": ("azure.mgmt.compute", "ComputeManagementClient"),
    "network": ("azure.mgmt.network", "NetworkManagementClient"),
    "resource": ("azure.mgmt.resource.resources", "ResourceManagementClient"),
    "storage": ("azure.mgmt.storage", "StorageManagementClient"),
    "msi": ("azure.mgmt.msi", "ManagedServiceIdentityClient"),
    "keyvault": ("azure.mgmt.keyvault", "KeyVaultManagementClient"),
    "authorization": ("azure.mgmt.authorization", "AuthorizationManagementClient"),
}
"""The Resource Manager clients by short name: a name here only ever selects an entry."""


def arm(target: AzureTarget, name: str, cred: Any) -> Any:
    """The Resource Manager client ``name`` of :data:`CLIENTS` for the target's subscription.

    Raises:
        ExecutorError: when its library is not installed.
    """
    import importlib

    module, cls = CLIENTS[name]
    try:
        client = getattr(importlib.import_module(module), cls)
    except ImportError:
        raise ExecutorError(f"azure: {module} is not installed; {EXTRA}") from None
    subscription, _ = target.require_account("azure")
    extra = {"base_url": target.endpoint_url} if target.endpoint_url else {}
    return client(cred, subscription, **extra)


def error_code(exc: BaseException) -> str:
    """Resource Manager's error code of ``exc`` ('' when it carries none)."""
    error = getattr(exc, "error", None)
    return str(getattr(error, "code", "") or "")


def first_line(exc: BaseException) -> str:
    """An Azure error in one line: its code and message, without the raw body."""
    error = getattr(exc, "error", None)
    code, message = getattr(error, "code", None), getattr(error, "message", None)
    if code:
        return f"{code}: {str(message or '').splitlines()[0] if message else ''}".rstrip(": ")
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def azure_call(what: str, call: Callable[[], T]) -> T:
    """``call()``; an Azure error becomes one line naming ``what``.

    Raises:
        ExecutorError: for any Azure error.
    """
    from azure.core.exceptions import AzureError, ClientAuthenticationError

    try:
        return call()
    except ClientAuthenticationError:
        raise ExecutorError(f"{what}: {NO_CREDENTIALS}") from None
    except AzureError as exc:
        raise ExecutorError(f"{what}: {first_line(exc)}") from exc


def blob_service(target: AzureTarget, cred: Any) -> Any:
    """A BlobServiceClient of the target's storage account (the connection string's account
    when ``AZURE_STORAGE_CONNECTION_STRING`` is set)."""
    from azure.storage.blob import BlobServiceClient

    connection = os.environ.get(CONNECTION_STRING)
    if connection:
        return BlobServiceClient.from_connection_string(connection)
    return BlobServiceClient(f"https://{target.storage_account}.blob.core.windows.net", cred)


def container(target: AzureTarget, cred: Any) -> Any:
    """The target's Blob container client."""
    return blob_service(target, cred).get_container_client(str(target.container))


def vault_uri(target: AzureTarget, cred: Any) -> str:
    """The resource group's Key Vault URI, as Resource Manager reports it.

    Raises:
        ExecutorError: when the vault is not there (``setup azure`` makes it).
    """
    _, group = target.require_account("azure")
    vaults = arm(target, "keyvault", cred).vaults
    vault = azure_call(
        f"Key Vault {target.vault_name}",
        lambda: get_or_none(lambda: vaults.get(group, target.vault_name)),
    )
    if vault is None:
        raise ExecutorError(
            f"Key Vault {target.vault_name} (the job's secrets) is not in {group}: run "
            f"`spotwise setup azure --project {target.subscription}/{group}` first"
        )
    return str(vault.properties.vault_uri)


def secrets_client(uri: str, cred: Any, *, emulated: bool) -> Any:
    """A Key Vault SecretClient at ``uri``. An emulator's vault is not at a
    ``*.vault.azure.net`` host, so its challenge's resource is not matched to the host."""
    from azure.keyvault.secrets import SecretClient

    return SecretClient(uri, cred, verify_challenge_resource=not emulated)


def get_or_none(call: Callable[[], T]) -> T | None:
    """``call()``, or None when Azure answers 404."""
    from azure.core.exceptions import ResourceNotFoundError

    try:
        return call()
    except ResourceNotFoundError:
        return None

"""A loopback fake of Azure Resource Manager (Compute, Network, Storage, Key Vault, Managed
Identity, Authorization, resource groups and providers), of Key Vault's secrets data plane, and
of the managed identity endpoint that azure-identity gets tokens from: enough of Azure for
``spotwise setup|check|run|gc azure``, served over HTTPS on 127.0.0.1 (Key Vault's client
refuses plain HTTP; a self-signed certificate, trusted through ``REQUESTS_CA_BUNDLE``).

Every request is checked against a published description of Azure's API:

- its operation: the method, path and ``api-version`` come from the SDK's own request builders
  (``build_virtual_machines_create_or_update_request`` and the others of :data:`OPERATIONS`,
  called once with placeholders): a path no builder makes, another method, or another
  api-version is refused;
- its body: a VM's against Azure's REST API specification itself (Compute's OpenAPI document,
  vendored: :mod:`.openapi`), where a VM size is any string and a size list only the known
  ones; the others against the SDK's request model of that operation
  (:func:`.models.check_body`: ``NetworkInterface`` of azure-mgmt-network, ...): an unknown
  or read-only field, a mistyped value, a value outside a closed enum, a
  missing required field is refused;
- its token: a Bearer token the identity endpoint issued for that API's audience (Resource
  Manager's, Key Vault's).

Answers are shaped as the REST reference's examples: resources with ``id``, ``name``, ``type``
and ``properties.provisioningState``; ARM error bodies; long-running operations answered 201
or 202 with ``Azure-AsyncOperation`` (or ``Location``) to poll, ``retry-after-ms`` (which
azure-core reads) so tests poll in milliseconds; a failed allocation is the operation's
``Failed`` status with the error code Compute documents, and the failed VM stays (as Azure
leaves it). Key Vault answers an unauthenticated request with its 401 challenge.

What Azure decides is the test's to set: the spot price per size (a VM whose ``maxPrice`` is
below it is evicted: its Preempt notice, then its deletion), zones without capacity, sizes a
zone does not offer, the Spot vCPU quota, providers not registered. Refused requests answer
400 and are kept in ``refused`` (tests assert it stays empty).
"""

from __future__ import annotations

import base64
import importlib
import inspect
import json
import re
import secrets
import ssl
import tempfile
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from spotwise.core.clock import SYSTEM_CLOCK
from spotwise.executor.clouds.azure.fake.models import Invalid, check_body
from spotwise.executor.clouds.azure.fake.openapi import VIRTUAL_MACHINE, check_definition
from spotwise.executor.local_clouds.http import Answer, LoopbackServer, Request
from spotwise.executor.local_clouds.tls import self_signed

ARM = "https://management.azure.com"
VAULT = "https://vault.azure.net"
MSI_PATH = "/msi/token"
TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
ROLES = {
    "ba92f5b4-2d11-453d-a403-e96b0029c9fe": "Storage Blob Data Contributor",
    "4633458b-17de-408a-b874-0445c86b69e6": "Key Vault Secrets User",
    "b86a8fe4-44ce-4948-aee5-eccb2c155cd7": "Key Vault Secrets Officer",
}
"""Azure's built-in role definitions (their fixed GUIDs) the fake knows."""

COMPUTE = "azure.mgmt.compute.operations._operations"
NETWORK = "azure.mgmt.network.operations._operations"
STORAGE = "azure.mgmt.storage.operations._operations"
KEYVAULT = "azure.mgmt.keyvault.operations._operations"
RESOURCE = "azure.mgmt.resource.resources.operations._operations"
MSI = "azure.mgmt.msi.v2024_11_30.operations._user_assigned_identities_operations"
AUTHZ = "azure.mgmt.authorization.v2022_04_01.operations._role_assignments_operations"
SECRETS = "azure.keyvault.secrets._generated._operations._operations"

OPERATIONS: list[tuple[str, str, str | None, str]] = [
    # (builder module, builder, body model "package:Model" or None, handler)
    (RESOURCE, "build_resource_groups_check_existence_request", None, "group_exists"),
    (RESOURCE, "build_resource_groups_get_request", None, "group_get"),
    (
        RESOURCE,
        "build_resource_groups_create_or_update_request",
        "azure.mgmt.resource.resources.models:ResourceGroup",
        "group_put",
    ),
    (RESOURCE, "build_providers_get_request", None, "provider_get"),
    (STORAGE, "build_storage_accounts_get_properties_request", None, "plain_get"),
    (
        STORAGE,
        "build_storage_accounts_create_request",
        "azure.mgmt.storage.models:StorageAccountCreateParameters",
        "account_put",
    ),
    (STORAGE, "build_blob_containers_get_request", None, "plain_get"),
    (
        STORAGE,
        "build_blob_containers_create_request",
        "azure.mgmt.storage.models:BlobContainer",
        "container_put",
    ),
    (MSI, "build_get_request", None, "plain_get"),
    (
        MSI,
        "build_create_or_update_request",
        "azure.mgmt.msi.v2024_11_30.models:Identity",
        "identity_put",
    ),
    (KEYVAULT, "build_vaults_get_request", None, "plain_get"),
    (
        KEYVAULT,
        "build_vaults_create_or_update_request",
        "azure.mgmt.keyvault.models:VaultCreateOrUpdateParameters",
        "vault_put",
    ),
    (AUTHZ, "build_get_request", None, "plain_get"),
    (
        AUTHZ,
        "build_create_request",
        "azure.mgmt.authorization.v2022_04_01.models:RoleAssignmentCreateParameters",
        "role_put",
    ),
    (AUTHZ, "build_list_for_scope_request", None, "role_list"),
    (NETWORK, "build_network_security_groups_get_request", None, "plain_get"),
    (
        NETWORK,
        "build_network_security_groups_create_or_update_request",
        "azure.mgmt.network.models:NetworkSecurityGroup",
        "nsg_put",
    ),
    (NETWORK, "build_security_rules_get_request", None, "plain_get"),
    (
        NETWORK,
        "build_security_rules_create_or_update_request",
        "azure.mgmt.network.models:SecurityRule",
        "rule_put",
    ),
    (NETWORK, "build_virtual_networks_get_request", None, "plain_get"),
    (
        NETWORK,
        "build_virtual_networks_create_or_update_request",
        "azure.mgmt.network.models:VirtualNetwork",
        "vnet_put",
    ),
    (NETWORK, "build_subnets_get_request", None, "plain_get"),
    (NETWORK, "build_network_interfaces_get_request", None, "plain_get"),
    (
        NETWORK,
        "build_network_interfaces_create_or_update_request",
        "azure.mgmt.network.models:NetworkInterface",
        "nic_put",
    ),
    (NETWORK, "build_network_interfaces_delete_request", None, "nic_delete"),
    (NETWORK, "build_network_interfaces_list_request", None, "plain_list"),
    (COMPUTE, "build_virtual_machines_get_request", None, "vm_get"),
    (
        COMPUTE,
        "build_virtual_machines_create_or_update_request",
        f"spec:{VIRTUAL_MACHINE}#VirtualMachine",
        "vm_put",
    ),
    (COMPUTE, "build_virtual_machines_delete_request", None, "vm_delete"),
    (COMPUTE, "build_virtual_machines_list_request", None, "plain_list"),
    (COMPUTE, "build_virtual_machines_power_off_request", None, "vm_power_off"),
    (COMPUTE, "build_virtual_machines_simulate_eviction_request", None, "vm_simulate_eviction"),
    (COMPUTE, "build_virtual_machine_images_get_request", None, "image_get"),
    (COMPUTE, "build_virtual_machine_images_list_request", None, "image_list"),
    (COMPUTE, "build_resource_skus_list_request", None, "skus_list"),
    (COMPUTE, "build_usage_list_request", None, "usage_list"),
    (
        SECRETS,
        "build_key_vault_set_secret_request",
        "azure.keyvault.secrets._generated.models:SecretSetParameters",
        "secret_put",
    ),
    (SECRETS, "build_key_vault_get_secret_request", None, "secret_get"),
    (SECRETS, "build_key_vault_get_secrets_request", None, "secret_list"),
    (SECRETS, "build_key_vault_delete_secret_request", None, "secret_delete"),
    (SECRETS, "build_key_vault_get_deleted_secret_request", None, "deleted_secret_get"),
]
"""The operations the fake serves, each as the SDK builds its request."""


@dataclass(frozen=True, slots=True)
class Route:
    """One operation: its method, its path as a pattern, its api-versions and its body model."""

    method: str
    pattern: re.Pattern[str]
    api_versions: frozenset[str]
    model: str | None
    handler: str
    builder: str
    vault: bool


def _placeholder(name: str) -> str:
    return f"PH{name.replace('_', 'X')}PH"


def _route(module: str, builder: str, model: str | None, handler: str) -> Route:
    """The route the SDK's request builder ``builder`` describes."""
    build = getattr(importlib.import_module(module), builder)
    args: dict[str, Any] = {}
    for name, parameter in inspect.signature(build).parameters.items():
        if parameter.kind in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL):
            continue
        if parameter.default is inspect.Parameter.empty:
            args[name] = _placeholder(name)
    if model:
        args.setdefault("content_type", "application/json")
    request = build(**args)
    parts = urlsplit(request.url)
    versions = {v for k, v in parse_qsl(parts.query) if k == "api-version"}
    vault = module == SECRETS
    if vault:
        from azure.keyvault.secrets._shared.client_base import DEFAULT_VERSION

        versions.add(str(getattr(DEFAULT_VERSION, "value", DEFAULT_VERSION)))
    path = unquote(parts.path)
    pattern = re.escape(path)
    for name in args:
        token = re.escape(_placeholder(name))
        group = r"(?P<%s>.+?)" if name == "scope" else r"(?P<%s>[^/]*)"
        pattern = pattern.replace(token, group % name)
    if vault:
        pattern = pattern.rstrip("/") + "/?"
    return Route(
        method=request.method,
        pattern=re.compile(f"^{pattern}$", re.IGNORECASE),
        api_versions=frozenset(versions),
        model=model,
        handler=handler,
        builder=builder,
        vault=vault,
    )


def _check_request(model: str, body: Any) -> None:
    """A request body checked against its description: a definition of Azure's REST API
    specification (``spec:DOCUMENT#NAME``, :mod:`.openapi`), else the SDK's
    request model (``package:Model``, :mod:`.models`).

    Raises:
        Invalid: naming the first field that is not.
    """
    if model.startswith("spec:"):
        document, _, name = model.removeprefix("spec:").partition("#")
        check_definition(document, name, body)
    else:
        check_body(_model(model), body)


def _model(spec: str) -> type:
    module, name = spec.split(":")
    found: type = getattr(importlib.import_module(module), name)
    return found


class Refused(Exception):
    """An ARM error answer."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass
class Operation:
    """A long-running operation: InProgress for ``polls`` polls, then its outcome."""

    polls: int
    error: dict[str, str] | None = None
    done: Callable[[], None] | None = None
    result: Callable[[], dict[str, Any] | None] | None = None
    finished: bool = False


@dataclass
class Booted:
    """A VM as the hypervisor sees it: what it was given to run."""

    name: str
    resource_id: str
    custom_data: str
    tags: dict[str, str]
    spot: bool
    zone: str | None


@dataclass
class Sku:
    """A VM size as Resource SKUs lists it."""

    name: str
    family: str
    vcpus: int
    zones: tuple[str, ...] = ("1", "2", "3")
    restricted_zones: tuple[str, ...] = ()
    spot_price: float = 0.9
    on_demand_price: float = 3.06


class AzureArmFake:
    """Serve one subscription until :meth:`close`."""

    def __init__(
        self,
        *,
        subscription: str = "00000000-0000-0000-0000-0000000000aa",
        blob_endpoint: str = "",
        on_container: Callable[[str, str], None] | None = None,
    ) -> None:
        self.subscription = subscription
        self.blob_endpoint = blob_endpoint
        """What a storage account reports as its blob endpoint (the emulator's URL)."""
        self.on_container = on_container
        """Called with (account, container) when a container is made: the emulator makes it."""
        self.on_notice: Callable[[Booted], None] = lambda _vm: None
        """Called when a Spot VM is to be evicted: its Preempt scheduled event."""
        self.on_power_off: Callable[[Booted], None] = lambda _vm: None
        """Called when a VM is powered off: the guest's shutdown (SIGTERM to its processes)."""
        self.eviction_delay_s = 30.0
        """Seconds from a Preempt event to the VM's deletion (Azure: at least 30)."""
        self.skus = [
            Sku(name="Standard_NC6s_v3", family="standardNCSv3Family", vcpus=6),
            Sku(name="Standard_NC24ads_A100_v4", family="StandardNCADSA100v4Family", vcpus=24),
        ]
        self.images: dict[tuple[str, str, str, str], list[str]] = {
            ("eastus", "microsoft-dsvm", "ubuntu-hpc", "2204"): ["22.04.2025010101"],
            ("eastus", "microsoft-dsvm", "ubuntu-hpc", "2404"): ["24.04.2025120101"],
        }
        self.unregistered: set[str] = set()
        """Resource providers the subscription has not registered."""
        self.no_capacity: dict[str, str] = {}
        """zone ("" for a location without zones) -> the allocation failure's code."""
        self.spot_quota = 100
        self.identity_secret = secrets.token_hex(16)
        self.tokens: dict[str, str] = {}
        self.resources: dict[str, dict[str, Any]] = {}
        self.custom_data: dict[str, Booted] = {}
        self.booted: list[Booted] = []
        self.groups: dict[str, dict[str, Any]] = {}
        self.vaults: dict[str, dict[str, dict[str, Any]]] = {}
        self.deleted_secrets: dict[str, dict[str, dict[str, Any]]] = {}
        self.operations: dict[str, Operation] = {}
        self.requests: list[Request] = []
        self.refused: list[str] = []
        self.lock = threading.RLock()
        self._timers: list[threading.Timer] = []
        self.routes = [_route(*operation) for operation in OPERATIONS]
        self._folder = tempfile.TemporaryDirectory(prefix="azure-fake-")
        self.ca_file, key_file = self_signed(
            Path(self._folder.name), "fake-azure", subject="spotwise azure fake"
        )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.ca_file, key_file)
        self.tls = context
        """The servers' TLS context (its certificate is ``ca_file``): another loopback server
        that fronts this one (a test's slow proxy) serves with it."""
        self._servers: list[LoopbackServer] = []
        self.url = self._serve(None)
        self.vault_urls: dict[str, str] = {}
        """Each vault's data plane, on a port of its own (a vault is a host of its own)."""

    # the test's side

    def close(self) -> None:
        for timer in self._timers:
            timer.cancel()
        for server in self._servers:
            server.close()
        self._folder.cleanup()

    def _serve(self, vault: str | None) -> str:
        """A TLS server on a free port answering for Resource Manager (None) or a vault."""
        server = LoopbackServer(
            lambda request: self.answer(request, vault),
            tls=self.tls,
            content_type="application/json; charset=utf-8",
        )
        self._servers.append(server)
        return server.url

    def env(self) -> dict[str, str]:
        """What a process sets to reach this fake: the managed identity endpoint that
        DefaultAzureCredential reads (App Service's), and the certificate to trust."""
        return {
            "IDENTITY_ENDPOINT": f"{self.url}{MSI_PATH}",
            "IDENTITY_HEADER": self.identity_secret,
            "REQUESTS_CA_BUNDLE": str(self.ca_file),
        }

    def sku(self, name: str) -> Sku | None:
        return next((s for s in self.skus if s.name.lower() == name.lower()), None)

    def vms(self) -> list[dict[str, Any]]:
        """Every VM there is now."""
        with self.lock:
            return [
                r
                for r in self.resources.values()
                if r["type"] == "Microsoft.Compute/virtualMachines"
            ]

    def set_spot_price(self, size: str, price: float) -> None:
        """The size's spot price moves: every Spot VM capped below it is evicted."""
        sku = self.sku(size)
        assert sku is not None, size
        sku.spot_price = price
        for vm in self.vms():
            properties = vm["properties"]
            cap = properties.get("billingProfile", {}).get("maxPrice", -1)
            same = properties["hardwareProfile"]["vmSize"].lower() == size.lower()
            if same and properties.get("priority") == "Spot" and cap != -1 and cap < price:
                self.evict(vm["name"])

    def evict(self, name: str) -> None:
        """Evict a Spot VM: its Preempt notice now, its deletion after the notice."""
        with self.lock:
            booted = next((b for b in self.booted if b.name == name), None)
        if booted is None:
            return
        self.on_notice(booted)
        timer = threading.Timer(self.eviction_delay_s, self._delete_vm, args=(booted.resource_id,))
        timer.daemon = True
        self._timers.append(timer)
        timer.start()

    def delete_now(self, name: str) -> None:
        """End a VM at once (an eviction whose notice has run out)."""
        with self.lock:
            booted = next((b for b in self.booted if b.name == name), None)
        if booted is not None:
            self._delete_vm(booted.resource_id)

    # the server's side

    def answer(self, request: Request, vault: str | None = None) -> Answer:
        with self.lock:
            self.requests.append(request)
        if request.path == MSI_PATH and vault is None:
            return self._identity(request)
        if re.match(
            r"^/subscriptions/[^/]+/providers/[^/]+/locations/[^/]+/operations/", request.path
        ):
            return self._poll(request)
        try:
            route, found = self._match(request, vault)
            audience = VAULT if route.vault else ARM
            token = request.header("Authorization").removeprefix("Bearer ")
            if self.tokens.get(token) != audience:
                if route.vault:
                    challenge = (
                        f'Bearer authorization="https://login.microsoftonline.com/{TENANT}", '
                        f'resource="{VAULT}"'
                    )
                    return Answer(
                        401,
                        {
                            "error": {
                                "code": "Unauthorized",
                                "message": "AKV10000: Request is missing a Bearer or PoP token.",
                            }
                        },
                        {"WWW-Authenticate": challenge},
                    )
                return _error(401, "AuthenticationFailed", "Authentication failed.")
            body = None
            if route.model:
                body = request.json()
                _check_request(route.model, body)
            if not route.vault:
                self._subscription(found)
            with self.lock:
                answer: Answer = getattr(self, f"_{route.handler}")(request, found, body)
            return answer
        except Invalid as exc:
            self.refused.append(f"{request.method} {request.path}: {exc}")
            return _error(400, "InvalidRequestContent", str(exc))
        except json.JSONDecodeError as exc:
            self.refused.append(f"{request.method} {request.path}: {exc}")
            return _error(400, "InvalidRequestContent", str(exc))
        except Refused as exc:
            return _error(exc.status, exc.code, exc.message)

    def _match(self, request: Request, vault: str | None) -> tuple[Route, dict[str, str]]:
        query = dict(request.query)
        for route in self.routes:
            found = route.pattern.match(request.path)
            if route.vault != (vault is not None):
                continue
            if found is None or route.method != request.method:
                continue
            version = query.get("api-version")
            if version not in route.api_versions:
                raise Invalid(
                    f"api-version {version!r} is not {sorted(route.api_versions)} ({route.builder})"
                )
            values = {k: unquote(v) for k, v in found.groupdict().items()}
            if vault is not None:
                values["vault"] = vault
            return route, values
        raise Invalid(f"no operation of the Azure SDK is {request.method} {request.path}")

    def _subscription(self, found: dict[str, str]) -> None:
        given = found.get("subscription_id")
        scope = found.get("scope", "")
        if given is None and scope.startswith("subscriptions/"):
            given = scope.split("/")[1]
        if given is not None and given != self.subscription:
            raise Refused(
                404, "SubscriptionNotFound", f"The subscription '{given}' could not be found."
            )

    def _identity(self, request: Request) -> Answer:
        params = dict(request.query)
        problems = []
        if params.get("api-version") != "2019-08-01":
            problems.append("api-version must be 2019-08-01")
        resource = params.get("resource", "").rstrip("/")
        if resource not in (ARM, VAULT, "https://storage.azure.com"):
            problems.append(f"no token for the resource {resource!r}")
        if request.header("X-IDENTITY-HEADER") != self.identity_secret:
            problems.append("X-IDENTITY-HEADER is not the secret")
        if problems:
            self.refused.append("; ".join(problems))
            return Answer(400, {"error": "invalid_request", "error_description": problems[0]})
        token = secrets.token_urlsafe(24)
        with self.lock:
            self.tokens[token] = resource
        return Answer(
            200,
            {
                "access_token": token,
                "expires_on": str(int(SYSTEM_CLOCK.time()) + 3600),
                "resource": params["resource"],
                "token_type": "Bearer",
                "client_id": "00000000-0000-0000-0000-00000000cafe",
            },
        )

    # long-running operations

    def _accepted(
        self,
        status: int,
        body: dict[str, Any] | None,
        namespace: str,
        *,
        polls: int = 1,
        error: dict[str, str] | None = None,
        done: Callable[[], None] | None = None,
        location_style: bool = False,
        result: Callable[[], dict[str, Any] | None] | None = None,
    ) -> Answer:
        operation = uuid.uuid4().hex
        self.operations[operation] = Operation(polls=polls, error=error, done=done, result=result)
        url = (
            f"{self.url}/subscriptions/{self.subscription}/providers/{namespace}/locations/"
            f"eastus/operations/{operation}?api-version=2024-01-01"
        )
        headers = {"retry-after-ms": "20"}
        if location_style:
            headers["Location"] = url + "&kind=location"
        else:
            headers["Azure-AsyncOperation"] = url
        return Answer(status, body, headers)

    def _poll(self, request: Request) -> Answer:
        operation_id = request.path.rsplit("/", 1)[1]
        with self.lock:
            operation = self.operations.get(operation_id)
            if operation is None:
                return _error(404, "OperationNotFound", "no such operation")
            if operation.polls > 0:
                operation.polls -= 1
                if dict(request.query).get("kind") == "location":
                    return Answer(
                        202,
                        None,
                        {
                            "retry-after-ms": "20",
                            "Location": self.url
                            + request.path
                            + "?"
                            + "&".join(f"{k}={v}" for k, v in request.query),
                        },
                    )
                return Answer(200, {"status": "InProgress"}, {"retry-after-ms": "20"})
            if not operation.finished:
                operation.finished = True
                if operation.done is not None:
                    operation.done()
        if dict(request.query).get("kind") == "location":
            result = operation.result() if operation.result else None
            return Answer(200, result) if result is not None else Answer(204)
        if operation.error:
            return Answer(200, {"status": "Failed", "error": operation.error})
        return Answer(200, {"status": "Succeeded"})

    # resources

    def _id(self, found: dict[str, str], provider: str, *names: str) -> str:
        rg = found["resource_group_name"]
        self._need_group(rg)
        return f"/subscriptions/{self.subscription}/resourceGroups/{rg}/providers/{provider}/" + (
            "/".join(names)
        )

    def _need_group(self, rg: str) -> None:
        if rg.lower() not in self.groups:
            raise Refused(
                404, "ResourceGroupNotFound", f"Resource group '{rg}' could not be found."
            )

    def _need_provider(self, namespace: str) -> None:
        if namespace.lower() in {n.lower() for n in self.unregistered}:
            raise Refused(
                409,
                "MissingSubscriptionRegistration",
                f"The subscription is not registered to use namespace '{namespace}'. See "
                "https://aka.ms/rps-not-found for how to register subscriptions.",
            )

    def _get(self, resource_id: str) -> dict[str, Any]:
        found = self.resources.get(resource_id.lower())
        if found is None:
            kind = "/".join(resource_id.split("/providers/")[-1].split("/")[0:2])
            name = resource_id.rsplit("/", 1)[1]
            raise Refused(404, "ResourceNotFound", f"The Resource '{kind}/{name}' was not found.")
        return found

    def _put(
        self, resource_id: str, kind: str, body: dict[str, Any]
    ) -> tuple[dict[str, Any], bool]:
        old = self.resources.get(resource_id.lower())
        resource = {
            **body,
            "id": resource_id,
            "name": resource_id.rsplit("/", 1)[1],
            "type": kind,
        }
        resource.setdefault("properties", {})["provisioningState"] = "Succeeded"
        if "etag" not in resource and kind.startswith("Microsoft.Network"):
            resource["etag"] = f'W/"{uuid.uuid4()}"'
        self.resources[resource_id.lower()] = resource
        return resource, old is None

    def _plain_get(self, request: Request, found: dict[str, str], body: Any) -> Answer:
        return Answer(200, self._get(_resource_id(request.path)))

    def _plain_list(self, request: Request, found: dict[str, str], body: Any) -> Answer:
        prefix = request.path.lower().rstrip("/") + "/"
        self._need_group(found["resource_group_name"])
        items = [r for key, r in self.resources.items() if key.startswith(prefix)]
        items = [r for r in items if "/" not in r["id"][len(prefix) :]]
        return Answer(200, {"value": [self._shown(r) for r in items]})

    def _shown(self, resource: dict[str, Any]) -> dict[str, Any]:
        """A resource as GET answers it (a VM's customData is never returned)."""
        if resource["type"] != "Microsoft.Compute/virtualMachines":
            return resource
        shown = json.loads(json.dumps(resource))
        shown["properties"].get("osProfile", {}).pop("customData", None)
        return shown

    def _group_exists(self, request: Request, found: dict[str, str], body: Any) -> Answer:
        return Answer(204 if found["resource_group_name"].lower() in self.groups else 404)

    def _group_get(self, request: Request, found: dict[str, str], body: Any) -> Answer:
        self._need_group(found["resource_group_name"])
        return Answer(200, self.groups[found["resource_group_name"].lower()])

    def _group_put(self, request: Request, found: dict[str, str], body: dict[str, Any]) -> Answer:
        name = found["resource_group_name"]
        made = name.lower() not in self.groups
        self.groups[name.lower()] = {
            **body,
            "id": f"/subscriptions/{self.subscription}/resourceGroups/{name}",
            "name": name,
            "type": "Microsoft.Resources/resourceGroups",
            "properties": {"provisioningState": "Succeeded"},
        }
        return Answer(201 if made else 200, self.groups[name.lower()])

    def _provider_get(self, request: Request, found: dict[str, str], body: Any) -> Answer:
        namespace = found["resource_provider_namespace"]
        state = (
            "NotRegistered"
            if namespace.lower() in {n.lower() for n in self.unregistered}
            else "Registered"
        )
        return Answer(
            200,
            {
                "id": f"/subscriptions/{self.subscription}/providers/{namespace}",
                "namespace": namespace,
                "registrationState": state,
                "resourceTypes": [],
            },
        )

    def _account_put(self, request: Request, found: dict[str, str], body: dict[str, Any]) -> Answer:
        self._need_provider("Microsoft.Storage")
        rid = self._id(found, "Microsoft.Storage", "storageAccounts", found["account_name"])
        account = json.loads(json.dumps(body))
        properties = account.setdefault("properties", {})
        properties["primaryEndpoints"] = {"blob": self.blob_endpoint}
        properties["primaryLocation"] = body["location"]
        resource, _ = self._put(rid, "Microsoft.Storage/storageAccounts", account)
        return self._accepted(
            202, None, "Microsoft.Storage", location_style=True, result=lambda: resource
        )

    def _container_put(
        self, request: Request, found: dict[str, str], body: dict[str, Any]
    ) -> Answer:
        account = found["account_name"]
        self._get(self._id(found, "Microsoft.Storage", "storageAccounts", account))
        rid = self._id(
            found,
            "Microsoft.Storage",
            "storageAccounts",
            account,
            "blobServices/default/containers",
            found["container_name"],
        )
        made = rid.lower() not in self.resources
        resource, _ = self._put(
            rid, "Microsoft.Storage/storageAccounts/blobServices/containers", body
        )
        if made and self.on_container is not None:
            self.on_container(account, found["container_name"])
        return Answer(201 if made else 200, resource)

    def _identity_put(
        self, request: Request, found: dict[str, str], body: dict[str, Any]
    ) -> Answer:
        rid = self._id(
            found, "Microsoft.ManagedIdentity", "userAssignedIdentities", found["resource_name"]
        )
        old = self.resources.get(rid.lower())
        identity = {**body, "id": rid, "name": found["resource_name"]}
        identity["type"] = "Microsoft.ManagedIdentity/userAssignedIdentities"
        identity["properties"] = (old or {}).get("properties") or {
            "tenantId": TENANT,
            "principalId": str(uuid.uuid4()),
            "clientId": str(uuid.uuid4()),
        }
        self.resources[rid.lower()] = identity
        return Answer(200 if old else 201, identity)

    def _vault_put(self, request: Request, found: dict[str, str], body: dict[str, Any]) -> Answer:
        self._need_provider("Microsoft.KeyVault")
        name = found["vault_name"]
        rid = self._id(found, "Microsoft.KeyVault", "vaults", name)
        vault = json.loads(json.dumps(body))
        if name.lower() not in self.vault_urls:
            self.vault_urls[name.lower()] = self._serve(name.lower())
        vault["properties"]["vaultUri"] = self.vault_urls[name.lower()] + "/"
        resource, made = self._put(rid, "Microsoft.KeyVault/vaults", vault)
        self.vaults.setdefault(name.lower(), {})
        self.deleted_secrets.setdefault(name.lower(), {})
        return self._accepted(201 if made else 200, resource, "Microsoft.KeyVault")

    def _role_put(self, request: Request, found: dict[str, str], body: dict[str, Any]) -> Answer:
        properties = body["properties"]
        role = properties["roleDefinitionId"].rsplit("/", 1)[1]
        if role not in ROLES or not properties["roleDefinitionId"].startswith(
            f"/subscriptions/{self.subscription}/providers/Microsoft.Authorization/roleDefinitions/"
        ):
            raise Refused(
                404,
                "RoleDefinitionDoesNotExist",
                f"The specified role definition with ID '{role}' does not exist.",
            )
        principals = {
            r["properties"].get("principalId")
            for r in self.resources.values()
            if r["type"] == "Microsoft.ManagedIdentity/userAssignedIdentities"
        }
        if properties["principalId"] not in principals:
            raise Refused(
                400,
                "PrincipalNotFound",
                f"Principal {properties['principalId']} does not exist in the directory {TENANT}.",
            )
        scope = "/" + found["scope"]
        self._get(scope)
        name = found["role_assignment_name"]
        rid = f"{scope}/providers/Microsoft.Authorization/roleAssignments/{name}"
        for other in self.resources.values():
            if (
                other["type"] == "Microsoft.Authorization/roleAssignments"
                and other["id"].lower() != rid.lower()
                and other["properties"]["scope"].lower() == scope.lower()
                and other["properties"]["roleDefinitionId"] == properties["roleDefinitionId"]
                and other["properties"]["principalId"] == properties["principalId"]
            ):
                raise Refused(409, "RoleAssignmentExists", "The role assignment already exists.")
        made = rid.lower() not in self.resources
        assignment = {
            "id": rid,
            "name": found["role_assignment_name"],
            "type": "Microsoft.Authorization/roleAssignments",
            "properties": {**properties, "scope": scope},
        }
        self.resources[rid.lower()] = assignment
        return Answer(201 if made else 200, assignment)

    def _role_list(self, request: Request, found: dict[str, str], body: Any) -> Answer:
        scope = "/" + found["scope"]
        items = [
            r
            for r in self.resources.values()
            if r["type"] == "Microsoft.Authorization/roleAssignments"
            and r["properties"]["scope"].lower() == scope.lower()
        ]
        return Answer(200, {"value": items})

    def _nsg_put(self, request: Request, found: dict[str, str], body: dict[str, Any]) -> Answer:
        self._need_provider("Microsoft.Network")
        rid = self._id(
            found,
            "Microsoft.Network",
            "networkSecurityGroups",
            found["network_security_group_name"],
        )
        body = json.loads(json.dumps(body))
        for rule in body.get("properties", {}).get("securityRules", []):
            rule["id"] = f"{rid}/securityRules/{rule['name']}"
            rule.setdefault("properties", {})["provisioningState"] = "Succeeded"
            self.resources[rule["id"].lower()] = {
                **rule,
                "type": "Microsoft.Network/networkSecurityGroups/securityRules",
            }
        resource, made = self._put(rid, "Microsoft.Network/networkSecurityGroups", body)
        return self._accepted(201 if made else 200, resource, "Microsoft.Network")

    def _rule_put(self, request: Request, found: dict[str, str], body: dict[str, Any]) -> Answer:
        group = self._id(
            found,
            "Microsoft.Network",
            "networkSecurityGroups",
            found["network_security_group_name"],
        )
        nsg = self._get(group)
        rid = f"{group}/securityRules/{found['security_rule_name']}"
        resource, made = self._put(
            rid, "Microsoft.Network/networkSecurityGroups/securityRules", body
        )
        rules = [r for r in nsg["properties"].get("securityRules", []) if r["id"] != rid]
        nsg["properties"]["securityRules"] = [*rules, resource]
        return self._accepted(201 if made else 200, resource, "Microsoft.Network")

    def _vnet_put(self, request: Request, found: dict[str, str], body: dict[str, Any]) -> Answer:
        self._need_provider("Microsoft.Network")
        rid = self._id(found, "Microsoft.Network", "virtualNetworks", found["virtual_network_name"])
        body = json.loads(json.dumps(body))
        for subnet in body.get("properties", {}).get("subnets", []):
            subnet["id"] = f"{rid}/subnets/{subnet['name']}"
            group = subnet.get("properties", {}).get("networkSecurityGroup", {}).get("id")
            if group:
                self._get(group)
            subnet.setdefault("properties", {})["provisioningState"] = "Succeeded"
            subnet["type"] = "Microsoft.Network/virtualNetworks/subnets"
            self.resources[subnet["id"].lower()] = subnet
        resource, made = self._put(rid, "Microsoft.Network/virtualNetworks", body)
        return self._accepted(201 if made else 200, resource, "Microsoft.Network")

    def _nic_put(self, request: Request, found: dict[str, str], body: dict[str, Any]) -> Answer:
        self._need_provider("Microsoft.Network")
        rid = self._id(
            found, "Microsoft.Network", "networkInterfaces", found["network_interface_name"]
        )
        configs = body.get("properties", {}).get("ipConfigurations", [])
        if not configs:
            raise Refused(400, "InvalidRequestFormat", "A NIC needs an IP configuration.")
        for index, config in enumerate(configs):
            subnet = config.get("properties", {}).get("subnet", {}).get("id", "")
            if subnet.lower() not in self.resources:
                raise Refused(
                    400,
                    "InvalidResourceReference",
                    f"Resource {subnet} referenced by resource {rid} was not found.",
                )
            config.setdefault("properties", {})["privateIPAddress"] = (
                f"10.42.0.{4 + index + len(self.resources) % 200}"
            )
            config["id"] = f"{rid}/ipConfigurations/{config.get('name', 'ipconfig1')}"
        resource, made = self._put(rid, "Microsoft.Network/networkInterfaces", body)
        return self._accepted(201 if made else 200, resource, "Microsoft.Network")

    def _nic_delete(self, request: Request, found: dict[str, str], body: Any) -> Answer:
        rid = _resource_id(request.path)
        if rid.lower() not in self.resources:
            return Answer(204)

        def done() -> None:
            self.resources.pop(rid.lower(), None)

        return self._accepted(202, None, "Microsoft.Network", done=done)

    def _vm_get(self, request: Request, found: dict[str, str], body: Any) -> Answer:
        vm = self._shown(self._get(_resource_id(request.path)))
        if dict(request.query).get("$expand") == "instanceView":
            vm["properties"]["instanceView"] = {
                "statuses": [
                    {"code": f"ProvisioningState/{vm['properties']['provisioningState'].lower()}"},
                    {"code": f"PowerState/{vm.get('_power', 'running')}"},
                ]
            }
        vm.pop("_power", None)
        return Answer(200, vm)

    def _vm_put(self, request: Request, found: dict[str, str], body: dict[str, Any]) -> Answer:
        self._need_provider("Microsoft.Compute")
        name = found["vm_name"]
        rid = self._id(found, "Microsoft.Compute", "virtualMachines", name)
        if rid.lower() in self.resources:
            raise Refused(409, "OperationNotAllowed", "The fake does not update VMs.")
        properties = body.get("properties", {})
        size = properties.get("hardwareProfile", {}).get("vmSize", "")
        sku = self.sku(size)
        zones = body.get("zones") or []
        zone = zones[0] if zones else None
        location = body["location"]
        if sku is None or (
            zone is not None and (zone not in sku.zones or zone in sku.restricted_zones)
        ):
            where = f"zone '{zone}' of " if zone else ""
            raise Refused(
                409,
                "SkuNotAvailable",
                f"The requested VM size '{size}' is currently not available in {where}location "
                f"'{location}' for subscription '{self.subscription}'. Please try another size "
                "or deploy to a different location or different zone. See "
                "https://aka.ms/azureskunotavailable for details.",
            )
        spot = properties.get("priority") == "Spot"
        if properties.get("evictionPolicy") and not spot:
            raise Refused(
                400,
                "EvictionPolicyCanBeSetOnlyOnAzureSpotVirtualMachines",
                "Eviction policy can be set only on Azure Spot Virtual Machines.",
            )
        cap = properties.get("billingProfile", {}).get("maxPrice", -1)
        if spot and cap != -1:
            if cap <= 0:
                raise Refused(400, "MaxPriceValueInvalid", "Invalid max price value.")
            if cap < sku.spot_price:
                raise Refused(
                    409,
                    "SpotPriceGreaterThanProvidedMaxPrice",
                    f"Unable to perform operation 'Create VM' since the provided max price "
                    f"'{cap} USD' is lower than the current spot price '{sku.spot_price} USD' "
                    f"for Azure Spot VM size '{size}'.",
                )
        if spot:
            used = sum(
                (self.sku(v["properties"]["hardwareProfile"]["vmSize"]) or sku).vcpus
                for v in self.vms()
                if v["properties"].get("priority") == "Spot"
            )
            if used + sku.vcpus > self.spot_quota:
                raise Refused(
                    409,
                    "OperationNotAllowed",
                    f"Operation could not be completed as it results in exceeding approved "
                    f"LowPriorityCores quota. Location: {location}, Current Limit: "
                    f"{self.spot_quota}, Current Usage: {used}, Additional Required: {sku.vcpus}.",
                )
        storage = properties.get("storageProfile", {})
        image = storage.get("imageReference", {})
        key = (location, image.get("publisher"), image.get("offer"), image.get("sku"))
        versions = self.images.get(key, [])
        if not image.get("id") and not (versions and image.get("version") in ("latest", *versions)):
            raise Refused(
                404,
                "PlatformImageNotFound",
                f"The platform image '{':'.join(map(str, key[1:]))}:{image.get('version')}' is "
                "not available.",
            )
        os_profile = properties.get("osProfile", {})
        custom = os_profile.get("customData", "")
        try:
            script = base64.b64decode(custom, validate=True).decode()
        except (ValueError, UnicodeDecodeError):
            raise Refused(400, "InvalidParameter", "customData is not base64.") from None
        if len(custom) > 87380:
            raise Refused(400, "InvalidParameter", "customData is over 64 KB.")
        for nic in properties.get("networkProfile", {}).get("networkInterfaces", []):
            self._get(nic["id"])
        for identity in (body.get("identity") or {}).get("userAssignedIdentities", {}):
            self._get(identity)
        vm = json.loads(json.dumps(body))
        vm["properties"]["vmId"] = str(uuid.uuid4())
        resource, _ = self._put(rid, "Microsoft.Compute/virtualMachines", vm)
        resource["properties"]["provisioningState"] = "Creating"
        failure = self.no_capacity.get(zone or "")
        booted = Booted(
            name=name,
            resource_id=rid,
            custom_data=script,
            tags=dict(body.get("tags") or {}),
            spot=spot,
            zone=zone,
        )

        def done() -> None:
            resource["properties"]["provisioningState"] = "Failed" if failure else "Succeeded"
            if not failure:
                self.booted.append(booted)

        error = None
        if failure:
            error = {
                "code": failure,
                "message": f"Allocation failed. We do not have sufficient capacity for the "
                f"requested VM size in this {'zone' if zone else 'region'}. Read more about "
                "improving likelihood of allocation success at http://aka.ms/allocation-guidance",
            }
        return self._accepted(
            201, self._shown(resource), "Microsoft.Compute", error=error, done=done
        )

    def _delete_vm(self, rid: str) -> None:
        with self.lock:
            vm = self.resources.pop(rid.lower(), None)
            if vm is None:
                return
            for nic in vm["properties"].get("networkProfile", {}).get("networkInterfaces", []):
                if (
                    nic.get("properties", {}).get("deleteOption", nic.get("deleteOption"))
                    == "Delete"
                ):
                    self.resources.pop(nic["id"].lower(), None)

    def _vm_delete(self, request: Request, found: dict[str, str], body: Any) -> Answer:
        rid = _resource_id(request.path)
        if rid.lower() not in self.resources:
            return Answer(204)
        self.resources[rid.lower()]["properties"]["provisioningState"] = "Deleting"
        return self._accepted(202, None, "Microsoft.Compute", done=lambda: self._delete_vm(rid))

    def _vm_power_off(self, request: Request, found: dict[str, str], body: Any) -> Answer:
        rid = _resource_id(request.path.rsplit("/", 1)[0])
        vm = self._get(rid)
        vm["_power"] = "stopping"
        booted = next((b for b in self.booted if b.resource_id.lower() == rid.lower()), None)
        if booted is not None:
            self.on_power_off(booted)

        def done() -> None:
            vm["_power"] = "stopped"

        return self._accepted(202, None, "Microsoft.Compute", done=done)

    def _vm_simulate_eviction(self, request: Request, found: dict[str, str], body: Any) -> Answer:
        rid = _resource_id(request.path.rsplit("/", 1)[0])
        vm = self._get(rid)
        if vm["properties"].get("priority") != "Spot":
            raise Refused(409, "OperationNotAllowed", "Only a Spot VM can be evicted.")
        threading.Thread(target=self.evict, args=(vm["name"],), daemon=True).start()
        return Answer(204)

    def _image_get(self, request: Request, found: dict[str, str], body: Any) -> Answer:
        key = (found["location"], found["publisher_name"], found["offer"], found["skus"])
        if found["version"] not in self.images.get(key, []):
            raise Refused(
                404, "ImageNotFound", f"Artifact: VMImage was not found ({':'.join(key[1:])})."
            )
        return Answer(200, self._image(key, found["version"]))

    def _image(self, key: tuple[str, ...], version: str) -> dict[str, Any]:
        location, publisher, offer, sku = key
        return {
            "id": f"/Subscriptions/{self.subscription}/Providers/Microsoft.Compute/Locations/"
            f"{location}/Publishers/{publisher}/ArtifactTypes/VMImage/Offers/{offer}/Skus/"
            f"{sku}/Versions/{version}",
            "name": version,
            "location": location,
            "properties": {"osImage": {"operatingSystem": "Linux"}, "hyperVGeneration": "V2"},
        }

    def _image_list(self, request: Request, found: dict[str, str], body: Any) -> Answer:
        key = (found["location"], found["publisher_name"], found["offer"], found["skus"])
        versions = sorted(self.images.get(key, []), reverse=True)
        top = int(dict(request.query).get("$top", len(versions)))
        return Answer(200, [self._image(key, v) for v in versions[:top]])

    def _skus_list(self, request: Request, found: dict[str, str], body: Any) -> Answer:
        wanted = re.fullmatch(r"location eq '([^']+)'", dict(request.query).get("$filter", ""))
        location = wanted.group(1) if wanted else "eastus"
        items = []
        for sku in self.skus:
            items.append(
                {
                    "resourceType": "virtualMachines",
                    "name": sku.name,
                    "tier": "Standard",
                    "size": sku.name.removeprefix("Standard_"),
                    "family": sku.family,
                    "locations": [location],
                    "locationInfo": [{"location": location, "zones": list(sku.zones)}],
                    "capabilities": [
                        {"name": "vCPUs", "value": str(sku.vcpus)},
                        {"name": "LowPriorityCapable", "value": "True"},
                    ],
                    "restrictions": [
                        {
                            "type": "Zone",
                            "values": [location],
                            "restrictionInfo": {
                                "locations": [location],
                                "zones": list(sku.restricted_zones),
                            },
                            "reasonCode": "NotAvailableForSubscription",
                        }
                    ]
                    if sku.restricted_zones
                    else [],
                }
            )
        return Answer(200, {"value": items})

    def _usage_list(self, request: Request, found: dict[str, str], body: Any) -> Answer:
        used = sum(
            (self.sku(v["properties"]["hardwareProfile"]["vmSize"]) or self.skus[0]).vcpus
            for v in self.vms()
            if v["properties"].get("priority") == "Spot"
        )
        return Answer(
            200,
            {
                "value": [
                    {
                        "unit": "Count",
                        "currentValue": used,
                        "limit": self.spot_quota,
                        "name": {
                            "value": "lowPriorityCores",
                            "localizedValue": "Total Regional Spot vCPUs",
                        },
                    },
                    *(
                        {
                            "unit": "Count",
                            "currentValue": 0,
                            "limit": 0,
                            "name": {"value": s.family, "localizedValue": f"{s.family} vCPUs"},
                        }
                        for s in self.skus
                    ),
                ]
            },
        )

    # Key Vault's data plane

    def _vault(self, found: dict[str, str]) -> dict[str, dict[str, Any]]:
        vault = self.vaults.get(found["vault"].lower())
        if vault is None:
            raise Refused(404, "VaultNotFound", f"No vault named {found['vault']}.")
        return vault

    def _secret_put(self, request: Request, found: dict[str, str], body: dict[str, Any]) -> Answer:
        vault = self._vault(found)
        name = found["secret_name"]
        if not re.fullmatch(r"[0-9a-zA-Z-]{1,127}", name):
            raise Refused(400, "BadParameter", "The secret name is invalid.")
        if name.lower() in self.deleted_secrets[found["vault"].lower()]:
            raise Refused(
                409,
                "Conflict",
                f"Secret {name} is currently in a deleted but recoverable state, and its name "
                "cannot be reused; in this state, the secret can only be recovered or purged.",
            )
        version = uuid.uuid4().hex
        now = int(SYSTEM_CLOCK.time())
        bundle = {
            "value": body["value"],
            "id": f"{self.vault_urls[found['vault']]}/secrets/{name}/{version}",
            "attributes": {
                "enabled": True,
                "created": now,
                "updated": now,
                "recoveryLevel": "Recoverable+Purgeable",
            },
            "tags": body.get("tags") or {},
        }
        if body.get("contentType"):
            bundle["contentType"] = body["contentType"]
        vault[name.lower()] = bundle
        return Answer(200, bundle)

    def _secret_get(self, request: Request, found: dict[str, str], body: Any) -> Answer:
        bundle = self._vault(found).get(found["secret_name"].lower())
        if bundle is None:
            raise Refused(
                404,
                "SecretNotFound",
                f"A secret with (name/id) {found['secret_name']} was not found in this key vault.",
            )
        return Answer(200, bundle)

    def _secret_list(self, request: Request, found: dict[str, str], body: Any) -> Answer:
        items = [
            {"id": b["id"].rsplit("/", 1)[0], "attributes": b["attributes"], "tags": b["tags"]}
            for b in self._vault(found).values()
        ]
        return Answer(200, {"value": items, "nextLink": None})

    def _secret_delete(self, request: Request, found: dict[str, str], body: Any) -> Answer:
        vault = self._vault(found)
        name = found["secret_name"]
        bundle = vault.pop(name.lower(), None)
        if bundle is None:
            raise Refused(404, "SecretNotFound", f"A secret with (name/id) {name} was not found.")
        deleted = {
            **{k: v for k, v in bundle.items() if k != "value"},
            "recoveryId": f"{self.vault_urls[found['vault']]}/deletedsecrets/{name}",
            "deletedDate": int(SYSTEM_CLOCK.time()),
            "scheduledPurgeDate": int(SYSTEM_CLOCK.time()) + 90 * 86400,
        }
        self.deleted_secrets[found["vault"].lower()][name.lower()] = deleted
        return Answer(200, deleted)

    def _deleted_secret_get(self, request: Request, found: dict[str, str], body: Any) -> Answer:
        deleted = self.deleted_secrets.get(found["vault"].lower(), {}).get(
            found["secret_name"].lower()
        )
        if deleted is None:
            raise Refused(404, "SecretNotFound", "Deleted secret not found.")
        return Answer(200, deleted)


def _resource_id(path: str) -> str:
    return path if path.startswith("/") else "/" + path


def _error(status: int, code: str, message: str) -> Answer:
    return Answer(status, {"error": {"code": code, "message": message}})

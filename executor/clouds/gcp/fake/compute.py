"""A loopback fake of the Google Cloud APIs ``--launcher gcp`` calls besides storage: Compute
Engine v1 (instances, operations, firewalls, regions and their quotas, projects, images,
accelerator and machine types), Secret Manager v1 (secrets, versions, a secret's IAM policy) and
IAM v1 (service accounts), on one endpoint, with Google's OAuth2 token endpoint for service
account keys. Storage is the real emulator's (``gcp-storage-emulator``).

Every request is checked against Google's discovery documents (this folder's
``compute.v1.json``, ``secretmanager.v1.json``, ``iam.v1.json``, excerpts of those
google-api-python-client ships: see SOURCE.md): the path and HTTP method must name a method,
each path parameter must match its pattern, each query parameter must be one the method or the
API declares (type, format, enum), and the body must have the shape of the method's request
schema (no field it lacks, each of its type, format, enum and pattern, every field annotated as
required for the method). A request that breaks it is answered 400 ``INVALID_ARGUMENT`` and
kept in :attr:`GcpFake.refused` (tests assert it stays empty). Every answer is checked against
the method's response schema before it is sent.

Beyond the schemas it answers as Compute Engine documents: an insert is an ``Operation``
(https://cloud.google.com/compute/docs/reference/rest/v1/zoneOperations), done at once; a zone
out of capacity (:attr:`GcpFake.stockout`) or a preemptible GPU quota too small (:attr:`quotas`)
makes it end in the error Compute Engine gives (``ZONE_RESOURCE_POOL_EXHAUSTED``,
``QUOTA_EXCEEDED``); a GPU a zone does not offer, a machine type, image, service account or
network that does not exist, labels or metadata keys outside their documented alphabets, a
GPU instance that would live-migrate, or a Spot VM without a termination action are refused
with Compute Engine's 400 or 404. :meth:`preempt` takes a Spot VM back as Compute Engine does
with ``instanceTerminationAction=DELETE``: the instance is deleted and a
``compute.instances.preempted`` operation is recorded. List filters are read in the documented
forms ``field = "value"``, ``field != value``, ``field:*`` and parenthesised terms joined by
spaces or ``AND``; anything else is refused.

Authentication is a service account key this fake makes (:meth:`credentials_file`): a bearer
token is a self-signed JWT of that key, or an access token the fake's ``/token`` endpoint
minted for a signed JWT assertion (RFC 7523, as google-auth sends it). An API can be "not
enabled" (:attr:`disabled`, answered 403 with an ``ErrorInfo`` of reason ``SERVICE_DISABLED``).

``spotwise try gcp`` and the tests serve it with :class:`GcpLocal`. Run as a command
(``python -m spotwise.executor.clouds.gcp.fake.compute --key-file-folder F``) it prints its
endpoint and key file and serves until SIGTERM or Ctrl-C. ``cryptography`` (the ``try``
extra) verifies the tokens; gcp-storage-emulator (the ``try`` extra) plays GCS.
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import re
import secrets as random_tokens
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from spotwise.core.clock import SYSTEM_CLOCK
from spotwise.executor.clouds.gcp.fake.rest_api import Api, Call, Invalid, check_value, find_call
from spotwise.executor.local_clouds.http import Answer, LoopbackServer, Request

PROJECT = "spotwise-fake"
PROJECT_NUMBER = "561200347215"
CLIENT_EMAIL = f"spotwise-user@{PROJECT}.iam.gserviceaccount.com"
KEY_ID = "fake-gcp-key-1"
REGION = "us-central1"
ZONES = ("us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f")
IMAGE_PROJECT = "deeplearning-platform-release"
IMAGE_FAMILY = "pytorch-latest-gpu"
IMAGE = "pytorch-latest-gpu-v20260801"
COMPUTE = "https://www.googleapis.com/compute/v1"
MACHINE_TYPES = {
    "n1-standard-4": (4, 15360),
    "n1-standard-8": (8, 30720),
    "n1-standard-16": (16, 61440),
    "a2-highgpu-1g": (12, 87040),
    "g2-standard-8": (8, 32768),
}
"""Machine types every zone offers: vCPUs and MiB of memory."""
BUILT_IN_GPUS = {"a2-highgpu-1g": ("nvidia-tesla-a100", 1), "g2-standard-8": ("nvidia-l4", 1)}
ACCELERATORS = {
    "us-central1-a": ("nvidia-tesla-v100", "nvidia-tesla-t4", "nvidia-tesla-a100", "nvidia-l4"),
    "us-central1-b": ("nvidia-tesla-v100", "nvidia-tesla-t4", "nvidia-tesla-a100", "nvidia-l4"),
    "us-central1-c": ("nvidia-tesla-v100", "nvidia-tesla-t4", "nvidia-tesla-a100", "nvidia-l4"),
    "us-central1-f": ("nvidia-tesla-t4", "nvidia-l4"),
}
"""The GPUs each zone offers: us-central1-f has no V100 and no A100."""
QUOTA_METRICS = {
    "nvidia-tesla-v100": "NVIDIA_V100_GPUS",
    "nvidia-tesla-t4": "NVIDIA_T4_GPUS",
    "nvidia-tesla-a100": "NVIDIA_A100_GPUS",
    "nvidia-l4": "NVIDIA_L4_GPUS",
}
SCOPES = {"https://www.googleapis.com/auth/cloud-platform"}
TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"
"""The audience of a JWT assertion google-auth signs for the token endpoint (Google's)."""
AUDIENCES = {
    "https://compute.googleapis.com/",
    "https://secretmanager.googleapis.com/",
    "https://iam.googleapis.com/",
}
STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED"}
STATUS |= {404: "NOT_FOUND", 409: "ALREADY_EXISTS", 412: "FAILED_PRECONDITION"}
STATUS |= {500: "INTERNAL", 503: "UNAVAILABLE"}
SERVICES = {
    "compute": "compute.googleapis.com",
    "secretmanager": "secretmanager.googleapis.com",
    "iam": "iam.googleapis.com",
}
"""Each API's service name, as :attr:`GcpFake.disabled` and ``SERVICE_DISABLED`` name it."""
LABEL_KEY = re.compile(r"[a-z][-_a-z0-9]{0,62}")
LABEL_VALUE = re.compile(r"[-_a-z0-9]{0,63}")
METADATA_KEY = re.compile(r"[a-zA-Z0-9-_]{1,128}")
ACCOUNT_ID = re.compile(r"[a-z]([-a-z0-9]{4,28}[a-z0-9])")
FILTER_TERM = re.compile(
    r"\s*\(?\s*(?P<field>[A-Za-z][\w.-]*)\s*(?P<op>!=|=|:)\s*"
    r'(?P<value>"(?:[^"\\]|\\.)*"|[^\s()]+)\s*\)?\s*(?:AND\s+)?'
)


class GcpFake:
    """Serve one project's Compute Engine, Secret Manager and IAM until :meth:`close`."""

    def __init__(self, *, port: int = 0) -> None:
        from cryptography.hazmat.primitives.asymmetric import rsa

        self.apis = [
            Api.load("compute.v1.json"),
            Api.load("iam.v1.json"),
            Api.load("secretmanager.v1.json"),
        ]
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.requests: list[Request] = []
        self.refused: list[str] = []
        """Why each request the discovery documents do not allow was refused."""
        self.calls: list[Call] = []
        self.disabled: set[str] = set()
        """Services answered as not enabled (``compute.googleapis.com``, ...)."""
        self.stockout: set[str] = set()
        """Zones where an insert of a Spot VM ends in ``ZONE_RESOURCE_POOL_EXHAUSTED``."""
        self.quotas: dict[str, float] = {
            f"PREEMPTIBLE_{m}": 8.0 for m in QUOTA_METRICS.values()
        } | dict.fromkeys(QUOTA_METRICS.values(), 8.0)
        self.instances: dict[tuple[str, str], dict[str, Any]] = {}
        self.operations: dict[str, dict[str, Any]] = {}
        self.firewalls: dict[str, dict[str, Any]] = {}
        self.service_accounts: dict[str, dict[str, Any]] = {}
        self.secrets: dict[str, dict[str, Any]] = {}
        self.versions: dict[str, list[bytes]] = {}
        self.secret_policies: dict[str, dict[str, Any]] = {}
        self.tokens: set[str] = set()
        self.networks = {"default"}
        self.images = {
            (IMAGE_PROJECT, IMAGE): {"family": IMAGE_FAMILY, "status": "READY"},
        }
        self._ids = itertools.count(4_815_162_342_000_000_001)
        self._lock = threading.RLock()
        self._server = LoopbackServer(self.answer, port)
        self.url = self._server.url

    def close(self) -> None:
        self._server.close()

    def credentials_file(self, folder: Path) -> Path:
        """A service account key file whose key this fake trusts (0600), its token endpoint
        this fake's."""
        from cryptography.hazmat.primitives import serialization

        pem = self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        path = folder / "gcp-key.json"
        path.write_text(
            json.dumps(
                {
                    "type": "service_account",
                    "project_id": PROJECT,
                    "private_key_id": KEY_ID,
                    "private_key": pem,
                    "client_email": CLIENT_EMAIL,
                    "client_id": "100000000000000000002",
                    "token_uri": f"{self.url}/token",
                }
            )
        )
        path.chmod(0o600)
        return path

    # -- what tests look at and do ------------------------------------------------------------

    def live(self) -> list[dict[str, Any]]:
        """The instances there are now, in the order they were made."""
        with self._lock:
            return sorted(self.instances.values(), key=lambda i: int(i["id"]))

    def preempt(self, name: str) -> None:
        """Take a Spot VM back (its termination action DELETE): gone, with a
        ``compute.instances.preempted`` operation."""
        with self._lock:
            (key,) = [k for k in self.instances if k[1] == name]
            instance = self.instances.pop(key)
            self._operation(key[0], "compute.instances.preempted", instance, user="system")

    # -- serving ------------------------------------------------------------------------------

    def answer(self, request: Request) -> Answer:
        with self._lock:
            self.requests.append(request)
            if request.path == "/token":
                return self._token(request)
            try:
                call = find_call(
                    self.apis, request.method, request.path, request.query, request.body
                )
            except Invalid as exc:
                self.refused.append(str(exc))
                return error(400, str(exc))
            self.calls.append(call)
            denied = self._authenticate(request)
            if denied is not None:
                return denied
            service = SERVICES[call.method_id.split(".")[0]]
            if service in self.disabled:
                return service_disabled(service)
            try:
                status, body = self._serve(call)
            except Refusal as refusal:
                return refusal.answer
            response = call.method.get("response")
            if response is not None:
                check_value(call.api, response["$ref"], body)
            return Answer(status, body)

    def _serve(self, call: Call) -> tuple[int, Any]:
        p, what = call.params, call.method_id
        if what.startswith("compute."):
            public = what.startswith("compute.images.") and p.get("project") == IMAGE_PROJECT
            if p.get("project") != PROJECT and not public:
                raise Refusal(404, f"The resource 'projects/{p.get('project')}' was not found")
            if "zone" in p and p["zone"] not in ACCELERATORS:
                raise Refusal(400, f"Invalid value for field 'zone': '{p['zone']}'. Unknown zone.")
        handler = getattr(self, "_" + what.replace(".", "_"))
        return handler(call)

    # -- Compute Engine ----------------------------------------------------------------------

    def _compute_projects_get(self, call: Call) -> tuple[int, Any]:
        return 200, {
            "kind": "compute#project",
            "id": PROJECT_NUMBER,
            "name": PROJECT,
            "selfLink": f"{COMPUTE}/projects/{PROJECT}",
            "defaultServiceAccount": f"{PROJECT_NUMBER}-compute@developer.gserviceaccount.com",
        }

    def _compute_regions_get(self, call: Call) -> tuple[int, Any]:
        region = call.params["region"]
        if region != REGION:
            raise Refusal(404, f"The resource 'projects/{PROJECT}/regions/{region}' was not found")
        used: dict[str, float] = {}
        for instance in self.instances.values():
            for accelerator in _gpus(instance):
                metric = QUOTA_METRICS.get(accelerator[0], "")
                spot = instance["scheduling"].get("provisioningModel") == "SPOT"
                metric = f"PREEMPTIBLE_{metric}" if spot else metric
                used[metric] = used.get(metric, 0.0) + accelerator[1]
        return 200, {
            "kind": "compute#region",
            "id": "1000",
            "name": REGION,
            "status": "UP",
            "selfLink": f"{COMPUTE}/projects/{PROJECT}/regions/{REGION}",
            "zones": [f"{COMPUTE}/projects/{PROJECT}/zones/{z}" for z in ZONES],
            "quotas": [
                {"metric": m, "limit": limit, "usage": used.get(m, 0.0)}
                for m, limit in sorted(self.quotas.items())
            ],
        }

    def _compute_acceleratorTypes_get(self, call: Call) -> tuple[int, Any]:
        zone, name = call.params["zone"], call.params["acceleratorType"]
        if name not in ACCELERATORS[zone]:
            raise Refusal(
                404,
                f"The resource 'projects/{PROJECT}/zones/{zone}/acceleratorTypes/{name}' was "
                "not found",
            )
        return 200, {
            "kind": "compute#acceleratorType",
            "id": "10001",
            "name": name,
            "description": name.replace("-", " "),
            "zone": f"{COMPUTE}/projects/{PROJECT}/zones/{zone}",
            "maximumCardsPerInstance": 8,
            "selfLink": f"{COMPUTE}/projects/{PROJECT}/zones/{zone}/acceleratorTypes/{name}",
        }

    def _compute_machineTypes_get(self, call: Call) -> tuple[int, Any]:
        zone, name = call.params["zone"], call.params["machineType"]
        if name not in MACHINE_TYPES:
            raise Refusal(
                404,
                f"The resource 'projects/{PROJECT}/zones/{zone}/machineTypes/{name}' was not found",
            )
        cpus, memory = MACHINE_TYPES[name]
        answer: dict[str, Any] = {
            "kind": "compute#machineType",
            "id": "20001",
            "name": name,
            "guestCpus": cpus,
            "memoryMb": memory,
            "zone": zone,
            "selfLink": f"{COMPUTE}/projects/{PROJECT}/zones/{zone}/machineTypes/{name}",
        }
        if name in BUILT_IN_GPUS:
            kind, count = BUILT_IN_GPUS[name]
            answer["accelerators"] = [
                {"guestAcceleratorType": kind, "guestAcceleratorCount": count}
            ]
        return 200, answer

    def _image(self, project: str, name: str) -> dict[str, Any]:
        found = self.images.get((project, name))
        if found is None:
            raise Refusal(
                404, f"The resource 'projects/{project}/global/images/{name}' was not found"
            )
        return {
            "kind": "compute#image",
            "id": "30001",
            "name": name,
            "family": found["family"],
            "status": found["status"],
            "architecture": "X86_64",
            "description": found.get("description", "PyTorch with CUDA, Python 3.11"),
            "selfLink": f"{COMPUTE}/projects/{project}/global/images/{name}",
            **({"deprecated": found["deprecated"]} if "deprecated" in found else {}),
        }

    def _compute_images_get(self, call: Call) -> tuple[int, Any]:
        return 200, self._image(call.params["project"], call.params["image"])

    def _compute_images_getFromFamily(self, call: Call) -> tuple[int, Any]:
        project, family = call.params["project"], call.params["family"]
        for (where, name), image in self.images.items():
            if where == project and image["family"] == family:
                return 200, self._image(where, name)
        raise Refusal(
            404, f"The resource 'projects/{project}/global/images/family/{family}' was not found"
        )

    def _compute_firewalls_get(self, call: Call) -> tuple[int, Any]:
        name = call.params["firewall"]
        if name not in self.firewalls:
            raise Refusal(
                404, f"The resource 'projects/{PROJECT}/global/firewalls/{name}' was not found"
            )
        return 200, self.firewalls[name]

    def _compute_firewalls_insert(self, call: Call) -> tuple[int, Any]:
        body = dict(call.body)
        name = body["name"]
        network = _tail(body.get("network", "global/networks/default"))
        if network not in self.networks:
            raise Refusal(
                404, f"The resource 'projects/{PROJECT}/global/networks/{network}' was not found"
            )
        if name in self.firewalls:
            raise Refusal(
                409, f"The resource 'projects/{PROJECT}/global/firewalls/{name}' already exists"
            )
        body.update(
            kind="compute#firewall",
            id=str(next(self._ids)),
            network=f"{COMPUTE}/projects/{PROJECT}/global/networks/{network}",
            selfLink=f"{COMPUTE}/projects/{PROJECT}/global/firewalls/{name}",
            creationTimestamp=_now(),
            direction=body.get("direction", "INGRESS"),
            priority=body.get("priority", 1000),
            disabled=False,
        )
        self.firewalls[name] = body
        return 200, self._operation(None, "insert", body)

    def _compute_instances_insert(self, call: Call) -> tuple[int, Any]:
        zone, body = call.params["zone"], call.body
        name = body["name"]
        if (zone, name) in self.instances:
            raise Refusal(
                409,
                f"The resource 'projects/{PROJECT}/zones/{zone}/instances/{name}' already exists",
            )
        instance = self._new_instance(zone, body)
        gpus = _gpus(instance)
        spot = instance["scheduling"].get("provisioningModel") == "SPOT"
        if spot and zone in self.stockout:
            return 200, self._operation(
                zone,
                "insert",
                instance,
                error=(
                    "ZONE_RESOURCE_POOL_EXHAUSTED",
                    f"The zone 'projects/{PROJECT}/zones/{zone}' does not have enough "
                    "resources available to fulfill the request.  Try a different zone, or "
                    "try again later.",
                    503,
                ),
            )
        for kind, count in gpus:
            metric = ("PREEMPTIBLE_" if spot else "") + QUOTA_METRICS.get(kind, "GPUS")
            used = sum(
                c
                for other in self.instances.values()
                if (other["scheduling"].get("provisioningModel") == "SPOT") == spot
                for k, c in _gpus(other)
                if k == kind
            )
            limit = self.quotas.get(metric, 0.0)
            if used + count > limit:
                return 200, self._operation(
                    zone,
                    "insert",
                    instance,
                    error=(
                        "QUOTA_EXCEEDED",
                        f"Quota '{metric}' exceeded.  Limit: {limit} in region {REGION}.",
                        403,
                    ),
                )
        self.instances[(zone, name)] = instance
        return 200, self._operation(zone, "insert", instance)

    def _new_instance(self, zone: str, body: dict[str, Any]) -> dict[str, Any]:
        """The instance ``body`` asks for, checked as Compute Engine checks an insert."""
        where = f"projects/{PROJECT}/zones/{zone}"
        given = str(body.get("machineType", "")).removeprefix(f"{COMPUTE}/")
        machine = _tail(given)
        if not re.fullmatch(
            rf"(?:projects/{PROJECT}/)?zones/{zone}/machineTypes/[a-z0-9-]+", given
        ):
            raise Refusal(
                400,
                f"Invalid value for field 'resource.machineType': '{given}'. Machine type must "
                "be in the instance's zone.",
            )
        if machine not in MACHINE_TYPES:
            raise Refusal(
                400,
                f"Invalid value for field 'resource.machineType': '{body['machineType']}'. "
                f"Machine type with name '{machine}' does not exist in zone '{zone}'.",
            )
        for i, accelerator in enumerate(body.get("guestAccelerators", [])):
            kind = _tail(accelerator.get("acceleratorType", ""))
            if kind not in ACCELERATORS[zone]:
                raise Refusal(
                    400,
                    f"Invalid value for field 'resource.guestAccelerators[{i}].acceleratorType'"
                    f": '{accelerator.get('acceleratorType')}'. Accelerator type '{kind}' does "
                    f"not exist in zone {zone}.",
                )
        scheduling = body.get("scheduling", {})
        if (body.get("guestAccelerators") or machine in BUILT_IN_GPUS) and scheduling.get(
            "onHostMaintenance", "MIGRATE"
        ) != "TERMINATE":
            raise Refusal(
                400,
                "Invalid value for field 'resource.scheduling.onHostMaintenance': 'MIGRATE'. "
                "Instances with guest accelerators do not support live migration.",
            )
        if scheduling.get("provisioningModel") == "SPOT":
            if scheduling.get("automaticRestart", False):
                raise Refusal(
                    400,
                    "Invalid value for field 'resource.scheduling.automaticRestart': 'true'. "
                    "Spot VMs cannot be restarted automatically.",
                )
            if scheduling.get("instanceTerminationAction") not in ("STOP", "DELETE"):
                raise Refusal(
                    400,
                    "Invalid value for field 'resource.scheduling.instanceTerminationAction': "
                    "Spot VMs need a termination action (STOP or DELETE).",
                )
        labels = body.get("labels", {})
        for key, value in labels.items():
            if not LABEL_KEY.fullmatch(key) or not LABEL_VALUE.fullmatch(value):
                raise Refusal(
                    400,
                    f"Invalid value for field 'resource.labels': '{key}={value}'. Label keys "
                    "and values can only contain lowercase letters, numeric characters, "
                    "underscores and dashes.",
                )
        items = body.get("metadata", {}).get("items", [])
        for item in items:
            if not METADATA_KEY.fullmatch(item.get("key", "")):
                raise Refusal(
                    400, f"Invalid value for field 'resource.metadata': '{item.get('key')}'."
                )
            if len(item.get("value", "").encode()) > 256 * 1024:
                raise Refusal(400, f"Metadata value for key '{item['key']}' is too large.")
        for account in body.get("serviceAccounts", []):
            email = account.get("email", "")
            if email not in self.service_accounts:
                raise Refusal(
                    400,
                    f"The resource 'projects/{PROJECT}/serviceAccounts/{email}' was not found",
                )
        for disk in body.get("disks", []):
            source = disk.get("initializeParams", {}).get("sourceImage", "")
            found = re.fullmatch(
                r"(?:.*/)?projects/([^/]+)/global/images/(family/)?([^/]+)", source
            )
            if found is None or not any(
                project == found.group(1)
                and (image["family"] if found.group(2) else name) == found.group(3)
                for (project, name), image in self.images.items()
            ):
                raise Refusal(404, f"The resource '{source}' was not found")
        networks = [
            _tail(n.get("network", "global/networks/default"))
            for n in body.get("networkInterfaces", [{}])
        ]
        for network in networks:
            if network not in self.networks:
                raise Refusal(
                    404,
                    f"The resource 'projects/{PROJECT}/global/networks/{network}' was not found",
                )
        number = len(self.operations) + 2
        instance = {
            **body,
            "kind": "compute#instance",
            "id": str(next(self._ids)),
            "creationTimestamp": _now(),
            "zone": f"{COMPUTE}/{where}",
            "machineType": f"{COMPUTE}/{where}/machineTypes/{machine}",
            "status": "RUNNING",
            "selfLink": f"{COMPUTE}/{where}/instances/{body['name']}",
            "labelFingerprint": "42WmSpB8rSM=",
            "metadata": {
                "kind": "compute#metadata",
                "fingerprint": "xyz0ABCDEF4=",
                "items": items,
            },
            "networkInterfaces": [
                {
                    "kind": "compute#networkInterface",
                    "name": f"nic{i}",
                    "network": f"{COMPUTE}/projects/{PROJECT}/global/networks/{network}",
                    "networkIP": f"10.128.0.{number % 250 + 2}",
                }
                for i, network in enumerate(networks)
            ],
            "cpuPlatform": "Intel Skylake",
            "startRestricted": False,
            "deletionProtection": False,
        }
        instance["scheduling"] = {
            "automaticRestart": scheduling.get("provisioningModel") != "SPOT",
            "onHostMaintenance": "MIGRATE",
            "preemptible": False,
            "provisioningModel": "STANDARD",
            **scheduling,
        }
        return instance

    def _compute_instances_get(self, call: Call) -> tuple[int, Any]:
        key = (call.params["zone"], call.params["instance"])
        if key not in self.instances:
            raise Refusal(
                404,
                f"The resource 'projects/{PROJECT}/zones/{key[0]}/instances/{key[1]}' was not "
                "found",
            )
        return 200, self.instances[key]

    def _compute_instances_delete(self, call: Call) -> tuple[int, Any]:
        key = (call.params["zone"], call.params["instance"])
        if key not in self.instances:
            raise Refusal(
                404,
                f"The resource 'projects/{PROJECT}/zones/{key[0]}/instances/{key[1]}' was not "
                "found",
            )
        instance = self.instances.pop(key)
        return 200, self._operation(key[0], "delete", instance)

    def _compute_instances_list(self, call: Call) -> tuple[int, Any]:
        zone = call.params["zone"]
        items = [i for (z, _), i in self.instances.items() if z == zone and _matches(call, i)]
        body: dict[str, Any] = {
            "kind": "compute#instanceList",
            "id": f"projects/{PROJECT}/zones/{zone}/instances",
            "selfLink": f"{COMPUTE}/projects/{PROJECT}/zones/{zone}/instances",
        }
        return 200, body | ({"items": items} if items else {})

    def _compute_instances_aggregatedList(self, call: Call) -> tuple[int, Any]:
        scopes: dict[str, Any] = {}
        for zone in ZONES:
            items = [i for (z, _), i in self.instances.items() if z == zone and _matches(call, i)]
            scopes[f"zones/{zone}"] = (
                {"instances": items}
                if items
                else {
                    "warning": {
                        "code": "NO_RESULTS_ON_PAGE",
                        "message": f"There are no results for scope 'zones/{zone}' on this page.",
                        "data": [{"key": "scope", "value": f"zones/{zone}"}],
                    }
                }
            )
        return 200, {
            "kind": "compute#instanceAggregatedList",
            "id": f"projects/{PROJECT}/aggregated/instances",
            "items": scopes,
            "selfLink": f"{COMPUTE}/projects/{PROJECT}/aggregated/instances",
        }

    def _operation(
        self,
        zone: str | None,
        kind: str,
        target: dict[str, Any],
        *,
        user: str = CLIENT_EMAIL,
        error: tuple[str, str, int] | None = None,
    ) -> dict[str, Any]:
        name = f"operation-{int(SYSTEM_CLOCK.time() * 1000)}-{random_tokens.token_hex(6)}"
        scope = f"zones/{zone}" if zone else "global"
        operation: dict[str, Any] = {
            "kind": "compute#operation",
            "id": str(next(self._ids)),
            "name": name,
            "operationType": kind,
            "targetLink": target["selfLink"],
            "targetId": target["id"],
            "status": "DONE",
            "user": user,
            "progress": 100,
            "insertTime": _now(),
            "startTime": _now(),
            "endTime": _now(),
            "selfLink": f"{COMPUTE}/projects/{PROJECT}/{scope}/operations/{name}",
        }
        if zone:
            operation["zone"] = f"{COMPUTE}/projects/{PROJECT}/zones/{zone}"
        if error is not None:
            code, message, status = error
            operation["error"] = {"errors": [{"code": code, "message": message}]}
            operation["httpErrorStatusCode"] = status
            operation["httpErrorMessage"] = {
                503: "SERVICE UNAVAILABLE",
                403: "FORBIDDEN",
            }.get(status, "BAD REQUEST")
        self.operations[name] = operation
        return operation

    def _compute_zoneOperations_get(self, call: Call) -> tuple[int, Any]:
        return 200, self._known_operation(call.params["operation"])

    def _compute_zoneOperations_wait(self, call: Call) -> tuple[int, Any]:
        return 200, self._known_operation(call.params["operation"])

    def _compute_globalOperations_get(self, call: Call) -> tuple[int, Any]:
        return 200, self._known_operation(call.params["operation"])

    def _compute_globalOperations_wait(self, call: Call) -> tuple[int, Any]:
        return 200, self._known_operation(call.params["operation"])

    def _compute_zoneOperations_list(self, call: Call) -> tuple[int, Any]:
        zone = call.params["zone"]
        items = [
            o
            for o in self.operations.values()
            if o.get("zone", "").endswith(f"/zones/{zone}") and _matches(call, o)
        ]
        body: dict[str, Any] = {
            "kind": "compute#operationList",
            "id": f"projects/{PROJECT}/zones/{zone}/operations",
            "selfLink": f"{COMPUTE}/projects/{PROJECT}/zones/{zone}/operations",
        }
        return 200, body | ({"items": items} if items else {})

    def _known_operation(self, name: str) -> dict[str, Any]:
        if name not in self.operations:
            raise Refusal(404, f"The resource 'operations/{name}' was not found")
        return self.operations[name]

    # -- IAM ---------------------------------------------------------------------------------

    def _iam_projects_serviceAccounts_get(self, call: Call) -> tuple[int, Any]:
        email = call.params["name"].rsplit("/", 1)[1]
        if email not in self.service_accounts:
            raise Refusal(404, f"Unknown service account {email}", status="NOT_FOUND")
        return 200, self.service_accounts[email]

    def _iam_projects_serviceAccounts_create(self, call: Call) -> tuple[int, Any]:
        project = call.params["name"].removeprefix("projects/")
        if project != PROJECT:
            raise Refusal(404, f"Project {project} not found")
        account_id = call.body.get("accountId", "")
        if not ACCOUNT_ID.fullmatch(account_id):
            raise Refusal(
                400,
                f"Invalid account id {account_id!r}: 6-30 characters, lowercase letters, "
                "digits and dashes, starting with a letter",
            )
        email = f"{account_id}@{PROJECT}.iam.gserviceaccount.com"
        if email in self.service_accounts:
            raise Refusal(
                409,
                f"Service account {account_id} already exists within project projects/{PROJECT}.",
            )
        given = call.body.get("serviceAccount", {})
        self.service_accounts[email] = {
            "name": f"projects/{PROJECT}/serviceAccounts/{email}",
            "projectId": PROJECT,
            "uniqueId": str(next(self._ids))[:21],
            "email": email,
            "displayName": given.get("displayName", ""),
            "description": given.get("description", ""),
            "etag": "MDEwMjE5MjA=",
            "oauth2ClientId": str(next(self._ids))[:21],
        }
        return 200, self.service_accounts[email]

    # -- Secret Manager ----------------------------------------------------------------------

    def _secret(self, name: str) -> str:
        """A secret's key (its id) from ``projects/P/secrets/ID``, P the id or number."""
        project, _, secret = name.removeprefix("projects/").partition("/secrets/")
        if project not in (PROJECT, PROJECT_NUMBER):
            raise Refusal(404, f"Project {project} not found", status="NOT_FOUND")
        if secret not in self.secrets:
            raise Refusal(
                404,
                f"Secret [projects/{PROJECT_NUMBER}/secrets/{secret}] not found or has no "
                "versions.",
            )
        return secret

    def _secretmanager_projects_secrets_create(self, call: Call) -> tuple[int, Any]:
        project = call.params["parent"].removeprefix("projects/")
        secret = call.params.get("secretId", "")
        if project not in (PROJECT, PROJECT_NUMBER):
            raise Refusal(404, f"Project {project} not found", status="NOT_FOUND")
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,255}", secret):
            raise Refusal(400, f"Invalid secret id {secret!r}")
        if secret in self.secrets:
            raise Refusal(
                409, f"Secret [projects/{PROJECT_NUMBER}/secrets/{secret}] already exists."
            )
        if "replication" not in call.body:
            raise Refusal(400, "Secret.replication is required.")
        for key, value in call.body.get("labels", {}).items():
            if not LABEL_KEY.fullmatch(key) or not LABEL_VALUE.fullmatch(value):
                raise Refusal(400, f"Invalid label {key}={value}")
        self.secrets[secret] = {
            **call.body,
            "name": f"projects/{PROJECT_NUMBER}/secrets/{secret}",
            "createTime": _now(),
            "etag": '"1"',
        }
        self.versions[secret] = []
        return 200, self.secrets[secret]

    def _secretmanager_projects_secrets_list(self, call: Call) -> tuple[int, Any]:
        project = call.params["parent"].removeprefix("projects/")
        if project not in (PROJECT, PROJECT_NUMBER):
            raise Refusal(404, f"Project {project} not found", status="NOT_FOUND")
        found = [s for s in self.secrets.values() if _matches(call, s)]
        return 200, {"secrets": found, "totalSize": len(found)} if found else {}

    def _secretmanager_projects_secrets_delete(self, call: Call) -> tuple[int, Any]:
        secret = self._secret(call.params["name"])
        del self.secrets[secret]
        self.versions.pop(secret, None)
        self.secret_policies.pop(secret, None)
        return 200, {}

    def _secretmanager_projects_secrets_addVersion(self, call: Call) -> tuple[int, Any]:
        import google_crc32c

        secret = self._secret(call.params["parent"])
        payload = call.body.get("payload", {})
        data = base64.b64decode(payload.get("data", ""))
        if "dataCrc32c" in payload and int(payload["dataCrc32c"]) != google_crc32c.value(data):
            raise Refusal(400, "Checksum mismatch: the payload's data_crc32c does not match.")
        self.versions[secret].append(data)
        number = len(self.versions[secret])
        return 200, {
            "name": f"projects/{PROJECT_NUMBER}/secrets/{secret}/versions/{number}",
            "createTime": _now(),
            "state": "ENABLED",
            "etag": f'"{number}"',
        }

    def _secretmanager_projects_secrets_setIamPolicy(self, call: Call) -> tuple[int, Any]:
        secret = self._secret(call.params["resource"])
        policy = call.body.get("policy", {})
        for binding in policy.get("bindings", []):
            for member in binding.get("members", []):
                kind, _, email = member.partition(":")
                if kind == "serviceAccount" and email not in self.service_accounts:
                    raise Refusal(400, f"Service account {email} does not exist.")
        self.secret_policies[secret] = {**policy, "etag": "BwYTbQz3Zyc=", "version": 1}
        return 200, self.secret_policies[secret]

    def _secretmanager_projects_secrets_versions_access(self, call: Call) -> tuple[int, Any]:
        import google_crc32c

        name = call.params["name"]
        secret_name, _, version = name.partition("/versions/")
        secret = self._secret(secret_name)
        versions = self.versions[secret]
        if not versions or (version != "latest" and not version.isdigit()):
            raise Refusal(404, f"Secret Version [{name}] not found.")
        number = len(versions) if version == "latest" else int(version)
        if not 1 <= number <= len(versions):
            raise Refusal(404, f"Secret Version [{name}] not found.")
        data = versions[number - 1]
        return 200, {
            "name": f"projects/{PROJECT_NUMBER}/secrets/{secret}/versions/{number}",
            "payload": {
                "data": base64.b64encode(data).decode(),
                "dataCrc32c": str(google_crc32c.value(data)),
            },
        }

    # -- authentication ----------------------------------------------------------------------

    def _token(self, request: Request) -> Answer:
        """Google's OAuth2 token endpoint for a service account's signed JWT (RFC 7523)."""
        form = dict(parse_qsl(request.body.decode()))
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return Answer(400, {"error": "unsupported_grant_type"})
        try:
            claims = self._verify(form.get("assertion", ""))
        except (ValueError, KeyError) as exc:
            return Answer(400, {"error": "invalid_grant", "error_description": str(exc)})
        if claims.get("aud") != TOKEN_AUDIENCE:
            return Answer(400, {"error": "invalid_grant", "error_description": "Invalid audience"})
        token = "ya29.fake-" + random_tokens.token_urlsafe(24)
        self.tokens.add(token)
        return Answer(200, {"access_token": token, "expires_in": 3599, "token_type": "Bearer"})

    def _authenticate(self, request: Request) -> Answer | None:
        scheme, _, token = request.header("Authorization").partition(" ")
        if scheme.lower() != "bearer" or not token:
            return error(401, "Request is missing required authentication credential.")
        if token in self.tokens:
            return None
        try:
            claims = self._verify(token)
        except (ValueError, KeyError) as exc:
            return error(401, f"Request had invalid authentication credentials ({exc}).")
        scopes = set(str(claims.get("scope", "")).split())
        if not scopes & SCOPES and claims.get("aud") not in AUDIENCES:
            return error(403, "Request had insufficient authentication scopes.")
        return None

    def _verify(self, token: str) -> dict[str, Any]:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        head, payload, signature = token.split(".")
        header = json.loads(_b64(head))
        if header.get("alg") != "RS256" or header.get("kid") != KEY_ID:
            raise ValueError("not signed by this service account's key")
        try:
            self.key.public_key().verify(
                _b64(signature), f"{head}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256()
            )
        except InvalidSignature:
            raise ValueError("bad signature") from None
        claims: dict[str, Any] = json.loads(_b64(payload))
        now = SYSTEM_CLOCK.time()
        if claims["iss"] != CLIENT_EMAIL or not claims["iat"] - 300 <= now < claims["exp"]:
            raise ValueError("wrong issuer or expired")
        return claims


class Refusal(Exception):
    """An error answer in Google's error model."""

    def __init__(self, code: int, message: str, *, status: str | None = None) -> None:
        super().__init__(message)
        self.answer = error(code, message, status=status)


def error(code: int, message: str, *, status: str | None = None) -> Answer:
    """Google's error model (https://cloud.google.com/apis/design/errors), with the
    ``errors`` list Compute Engine adds."""
    reason = {400: "invalid", 404: "notFound", 409: "alreadyExists", 403: "forbidden"}
    return Answer(
        code,
        {
            "error": {
                "code": code,
                "message": message,
                "status": status or STATUS[code],
                "errors": [
                    {"message": message, "domain": "global", "reason": reason.get(code, "error")}
                ],
            }
        },
    )


def service_disabled(service: str) -> Answer:
    """What Google answers when ``service`` is not enabled in the project."""
    title = {"compute.googleapis.com": "Compute Engine API"}.get(service, service)
    message = (
        f"{title} has not been used in project {PROJECT_NUMBER} before or it is disabled. "
        f"Enable it by visiting https://console.developers.google.com/apis/api/{service}/"
        f"overview?project={PROJECT_NUMBER} then retry."
    )
    return Answer(
        403,
        {
            "error": {
                "code": 403,
                "message": message,
                "status": "PERMISSION_DENIED",
                "details": [
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": "SERVICE_DISABLED",
                        "domain": "googleapis.com",
                        "metadata": {"service": service, "consumer": f"projects/{PROJECT_NUMBER}"},
                    }
                ],
            }
        },
    )


def _matches(call: Call, resource: dict[str, Any]) -> bool:
    """Whether ``resource`` passes the call's ``filter`` (the documented forms only).

    Raises:
        Refusal: for a filter the fake cannot read.
    """
    text = call.params.get("filter", "").strip()
    pos, terms = 0, []
    while pos < len(text):
        found = FILTER_TERM.match(text, pos)
        if found is None or found.end() == pos:
            raise Refusal(
                400, f"Invalid value for field 'filter': '{text}'. Invalid list filter expression."
            )
        terms.append(found)
        pos = found.end()
    for term in terms:
        value: Any = resource
        for part in term["field"].split("."):
            value = value.get(part) if isinstance(value, dict) else None
        wanted = term["value"]
        wanted = json.loads(wanted) if wanted.startswith('"') else wanted
        if term["op"] == ":":
            ok = value is not None and (wanted == "*" or str(value) == wanted)
        elif term["op"] == "=":
            ok = value is not None and str(value) == wanted
        else:
            ok = value is None or str(value) != wanted
        if not ok:
            return False
    return True


def _gpus(instance: dict[str, Any]) -> list[tuple[str, int]]:
    machine = _tail(instance["machineType"])
    if machine in BUILT_IN_GPUS:
        return [BUILT_IN_GPUS[machine]]
    return [
        (_tail(a["acceleratorType"]), int(a.get("acceleratorCount", 1)))
        for a in instance.get("guestAccelerators", [])
    ]


def _tail(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[-1]


def _now() -> str:
    return (
        datetime.fromtimestamp(SYSTEM_CLOCK.time(), UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "-00:00")
    )


def _b64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


class StorageEmulator:
    """gcp-storage-emulator (PyPI) as a subprocess on 127.0.0.1, in memory, until
    :meth:`close`; google-cloud-storage and gcsfs reach it through ``STORAGE_EMULATOR_HOST``."""

    def __init__(self, project_number: str = PROJECT_NUMBER) -> None:
        import socket
        import subprocess
        import sys

        from spotwise.executor.local_clouds.lifetime import die_with_parent

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.process = subprocess.Popen(
            [
                *(sys.executable, "-m", "gcp_storage_emulator", "start", "--host", "127.0.0.1"),
                *("--port", str(port), "--in-memory", "--quiet"),
                *("--project-number", project_number),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=die_with_parent,
        )
        self.url = f"http://127.0.0.1:{port}"
        deadline = SYSTEM_CLOCK.monotonic() + 30
        while SYSTEM_CLOCK.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    return
            except OSError:
                if self.process.poll() is not None:
                    raise RuntimeError("gcp-storage-emulator exited at start") from None
                SYSTEM_CLOCK.sleep(0.05)
        self.close()
        raise RuntimeError("gcp-storage-emulator did not listen within 30 s")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except Exception:
                self.process.kill()
                self.process.wait()


class GcpLocal:
    """The loopback fake and the storage emulator together, with the environment that points
    Google's libraries at them (a key file as Application Default Credentials)."""

    def __init__(self, folder: Path) -> None:
        self.fake = GcpFake()
        try:
            self.storage = StorageEmulator()
        except BaseException:
            self.fake.close()
            raise
        self.key_file = self.fake.credentials_file(folder)
        self.env = {
            "GOOGLE_APPLICATION_CREDENTIALS": str(self.key_file),
            "STORAGE_EMULATOR_HOST": self.storage.url,
            "GOOGLE_CLOUD_PROJECT": PROJECT,
            "NO_GCE_CHECK": "true",
            # gcsfs asks Google's storage control API (gRPC, not the emulator) for a bucket's
            # layout before each operation unless told not to (its documented switch)
            "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false",
        }

    @property
    def image(self) -> str:
        return f"projects/{IMAGE_PROJECT}/global/images/family/{IMAGE_FAMILY}"

    def close(self) -> None:
        self.storage.close()
        self.fake.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--key-file-folder", type=Path, required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    fake = GcpFake(port=args.port)
    key_file = fake.credentials_file(args.key_file_folder)
    print(f"endpoint {fake.url}\nkey file {key_file}\nproject {PROJECT}", flush=True)
    fake._server.wait_for_signal()


if __name__ == "__main__":
    main()

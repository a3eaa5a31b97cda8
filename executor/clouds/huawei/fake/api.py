"""Huawei Cloud's ECS, BSS and CSMS endpoints on 127.0.0.1, for the real SDK clients (endpoint
override): each request's AK/SK signature checked (:mod:`.signature`), its route, query and JSON
body held to the SDK's generated models (:mod:`.sdk_models`), a request that breaks them answered
400 with the offending field named; each answer held to its response model too, so the fake
cannot drift from what the SDK reads. Every request it accepted is kept (:attr:`HuaweiApi.log`):
a test reads the ``spotPrice`` a launch sent there."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spotwise.executor.clouds.huawei.fake import signature
from spotwise.executor.clouds.huawei.fake.bss import PriceCatalog
from spotwise.executor.clouds.huawei.fake.csms import SecretStore
from spotwise.executor.clouds.huawei.fake.ecs import EcsProject, error
from spotwise.executor.clouds.huawei.fake.sdk_models import Operation, Sdk, WireError
from spotwise.executor.local_clouds.http import Answer, LoopbackServer, Request

ECS_OPERATIONS = (
    "create_servers",
    "list_servers_details",
    "show_server",
    "delete_servers",
    "batch_create_server_tags",
    "show_server_tags",
    "list_flavor_sell_policies",
    "show_job",
)
"""The ECS client's methods Spotwise calls: the fake serves these and refuses the rest."""
BSS_OPERATIONS = ("list_on_demand_resource_ratings",)
CSMS_OPERATIONS = ("create_secret", "list_secrets", "show_secret_version", "delete_secret")
ACCESS_KEY = "SPOTWISEFAKEACCESSKEY"
SECRET_KEY = "spotwise-fake-secret-key-not-a-real-one"
"""The fake's one key pair (a test's; a request signed with any other is refused)."""


@dataclass(frozen=True, slots=True)
class Received:
    """One accepted request: its operation, path values, query and body."""

    operation: str
    params: dict[str, str]
    query: dict[str, str]
    body: Any


class HuaweiApi:
    """The ECS project ``ecs`` and the price catalog ``prices`` served on a loopback port
    (:attr:`url`) until :meth:`close`."""

    def __init__(
        self,
        ecs: EcsProject,
        prices: PriceCatalog,
        port: int = 0,
        secrets: SecretStore | None = None,
    ) -> None:
        self.ecs = ecs
        self.prices = prices
        self.secrets = secrets or SecretStore(clock=ecs.clock)
        self.keys = {ACCESS_KEY: SECRET_KEY}
        self.log: list[Received] = []
        self._lock = threading.Lock()
        ecs_sdk = Sdk.load("huaweicloudsdkecs.v2", "EcsClient")
        bss_sdk = Sdk.load("huaweicloudsdkbss.v2", "BssClient")
        csms_sdk = Sdk.load("huaweicloudsdkcsms.v1", "CsmsClient")
        routes = [
            *((ecs_sdk, ecs_sdk.operation(name)) for name in ECS_OPERATIONS),
            *((bss_sdk, bss_sdk.operation(name)) for name in BSS_OPERATIONS),
            *((csms_sdk, csms_sdk.operation(name)) for name in CSMS_OPERATIONS),
        ]
        # a literal segment before a placeholder: .../cloudservers/detail is not a server's id
        self._routes = sorted(routes, key=lambda route: route[1].path.count("{"))
        self._server = LoopbackServer(self.answer, port)
        self.url = self._server.url

    def close(self) -> None:
        self._server.close()

    def sent(self, operation: str) -> list[Received]:
        """The accepted requests of ``operation``, oldest first."""
        with self._lock:
            return [r for r in self.log if r.operation == operation]

    def answer(self, request: Request) -> Answer:
        """The fake's answer to ``request``."""
        why = signature.problem(request, self.keys)
        if why is not None:
            return error(401, "APIGW.0301", f"incorrect IAM authentication information: {why}")
        for sdk, operation in self._routes:
            params = operation.match(request.method, request.path)
            if params is not None:
                return self._serve(sdk, operation, params, request)
        return error(
            404, "APIGW.0101", f"{request.method} {request.path[:120]}: no such API in this fake"
        )

    def _serve(
        self, sdk: Sdk, operation: Operation, params: dict[str, str], request: Request
    ) -> Answer:
        query = dict(request.query)
        try:
            unknown = sorted(set(query) - operation.query)
            if unknown:
                raise WireError(f"query {unknown[0]}", f"{operation.request} has no such parameter")
            body = json.loads(request.body) if request.body else None
            if operation.body is not None:
                if body is None:
                    raise WireError("body", f"{operation.request} needs a {operation.body}")
                sdk.check(operation.body, body)
        except WireError as wrong:
            return error(400, "Ecs.0005", f"{operation.request}: {wrong}")
        except ValueError as not_json:
            return error(400, "Ecs.0005", f"{operation.request}: the body is not JSON: {not_json}")
        if "project_id" in params and params["project_id"] != self.ecs.project_id:
            return error(403, "Ecs.0001", f"project {params['project_id'][:40]} is not yours")
        with self._lock:
            self.log.append(Received(operation.name, params, query, body))
        reply = self._handlers()[operation.name](params, query, body)
        if reply.status < 300 and reply.body is not None:
            try:
                sdk.check(operation.response, reply.body, operation.response, complete=False)
            except WireError as drift:
                return error(500, "Fake.0500", f"the fake's answer breaks the SDK's model: {drift}")
        return reply

    def _handlers(self) -> dict[str, Callable[[dict[str, str], dict[str, str], Any], Answer]]:
        ecs = self.ecs
        return {
            "create_servers": lambda p, q, b: ecs.create_servers(b),
            "list_servers_details": lambda p, q, b: ecs.list_servers(q),
            "show_server": lambda p, q, b: ecs.show_server(p["server_id"]),
            "delete_servers": lambda p, q, b: ecs.delete_servers(b),
            "batch_create_server_tags": lambda p, q, b: ecs.add_tags(p["server_id"], b),
            "show_server_tags": lambda p, q, b: ecs.show_tags(p["server_id"]),
            "list_flavor_sell_policies": lambda p, q, b: ecs.sell_policies(q),
            "show_job": lambda p, q, b: ecs.show_job(p["job_id"]),
            "list_on_demand_resource_ratings": lambda p, q, b: self.prices.rate(b),
            "create_secret": lambda p, q, b: self.secrets.create(b),
            "list_secrets": lambda p, q, b: self.secrets.listed(q),
            "show_secret_version": lambda p, q, b: self.secrets.version(
                p["secret_name"], p["version_id"]
            ),
            "delete_secret": lambda p, q, b: self.secrets.delete(p["secret_name"]),
        }

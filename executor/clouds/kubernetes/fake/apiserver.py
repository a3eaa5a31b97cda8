"""A kube-apiserver on 127.0.0.1 for the endpoints the Kubernetes launcher uses: Pods (their
logs, and their evictions: :mod:`.eviction`), Jobs, Nodes, Events, Services,
PodDisruptionBudgets, Namespaces, PersistentVolumeClaims, Secrets and SelfSubjectAccessReview;
list (label and field selectors), get, create, merge-patch, delete, and ``?watch=1`` from a
``resourceVersion``. Every object a request writes is checked against the Kubernetes API's
schema (:mod:`.schema`); a refused one gets the apiserver's 422 ``Status`` naming the field.
Requests carry the bearer token of the kubeconfig it writes (:meth:`FakeApiServer.kubeconfig`),
else get 401.
"""

from __future__ import annotations

import base64
import copy
import importlib.util
import json
import os
import re
import secrets
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from spotwise.executor.clouds.kubernetes.fake.cluster import (
    RESOURCES,
    Cluster,
    Conflict,
    Expired,
    NotFound,
    Resource,
    field_selected,
    selected,
)
from spotwise.executor.clouds.kubernetes.fake.eviction import NameMismatch, TooManyRequests, evict
from spotwise.executor.clouds.kubernetes.fake.schema import (
    KUBERNETES_VERSION,
    Invalid,
    check_name,
    check_object,
)
from spotwise.executor.local_clouds.tls import self_signed

ROUTE = re.compile(
    r"/(?:api/(?P<core>v1)|apis/(?P<group>[a-z0-9.-]+)/(?P<version>v[0-9a-z]+))"
    r"(?:/namespaces/(?P<namespace>[a-z0-9-]+))?"
    r"(?:/(?P<plural>[a-z]+)(?:/(?P<name>[a-z0-9.-]+)(?:/(?P<sub>log|eviction))?)?)?"
)
ACCESS_REVIEW = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
VERBS = {
    ("GET", True): "get",
    ("GET", False): "list",
    ("POST", False): "create",
    ("POST", True): "create",
    ("PATCH", True): "patch",
    ("DELETE", True): "delete",
}
"""The RBAC verb of a request: its method, and whether it names one object (a POST that names
one is an eviction: ``create`` on ``pods/eviction``)."""
ACCESS_REVIEWS = Resource(
    "selfsubjectaccessreviews", "SelfSubjectAccessReview", "authorization.k8s.io/v1", False
)
WATCH_TIMEOUT_S = 60.0
"""How long a watch with no ``timeoutSeconds`` stays open with nothing to say."""


class MissingSchemas(RuntimeError):
    """The schemas the fake checks objects against are not installed."""


@dataclass(frozen=True, slots=True)
class Reply:
    """An answer: its status and JSON body (bytes as they are)."""

    status: int
    body: Any


def status(code: int, reason: str, message: str, **details: Any) -> Reply:
    """The apiserver's ``Status`` of a refused request."""
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return Reply(code, body)


SHORT_NAMES = {
    "pods": ["po"],
    "nodes": ["no"],
    "events": ["ev"],
    "services": ["svc"],
    "namespaces": ["ns"],
    "persistentvolumeclaims": ["pvc"],
    "poddisruptionbudgets": ["pdb"],
}
"""The short names ``kubectl`` takes (``kubectl get pdb``), as discovery publishes them."""


def discovery(path: str) -> dict[str, Any] | None:
    """The legacy discovery documents ``kubectl`` reads first (``/api``, ``/apis``, and each
    group version's resources), None for any other path."""
    versions = sorted({r.api_version for r in RESOURCES.values()} | {ACCESS_REVIEWS.api_version})
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
    groups = [v for v in versions if "/" in v]
    if path == "/apis":
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [
                {
                    "name": v.split("/")[0],
                    "versions": [{"groupVersion": v, "version": v.split("/")[1]}],
                    "preferredVersion": {"groupVersion": v, "version": v.split("/")[1]},
                }
                for v in groups
            ],
        }
    asked = "v1" if path == "/api/v1" else path.removeprefix("/apis/")
    if not (path == "/api/v1" or (path.startswith("/apis/") and asked in groups)):
        return None
    served = [r for r in (*RESOURCES.values(), ACCESS_REVIEWS) if r.api_version == asked]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": asked,
        "resources": [
            {
                "name": r.plural,
                "singularName": r.kind.lower(),
                "namespaced": r.namespaced,
                "kind": r.kind,
                "shortNames": SHORT_NAMES.get(r.plural, []),
                "verbs": ["create"]
                if r is ACCESS_REVIEWS
                else ["create", "delete", "get", "list", "patch", "watch"],
            }
            for r in served
        ]
        + [
            {
                "name": "pods/log",
                "singularName": "",
                "namespaced": True,
                "kind": "Pod",
                "verbs": ["get"],
            }
            for _ in served[:1]
            if asked == "v1"
        ]
        + [
            {
                "name": "pods/eviction",
                "singularName": "",
                "namespaced": True,
                "group": "policy",
                "version": "v1",
                "kind": "Eviction",
                "verbs": ["create"],
            }
            for _ in served[:1]
            if asked == "v1"
        ],
    }


def merge(target: dict[str, Any], patch: dict[str, Any]) -> None:
    """Apply a JSON merge patch (RFC 7386) to ``target`` in place."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


class FakeApiServer:
    """The fake apiserver over a :class:`Cluster`, serving until :meth:`close`. ``denied``:
    ``(verb, resource)`` pairs (``("get", "pods/log")``) its RBAC refuses: such a request gets
    403, and a SelfSubjectAccessReview of it says no; ``tls``: a folder for a self-signed
    certificate to serve HTTPS with (``kubectl`` sends its token over HTTPS only);
    ``logs``: where each Pod's log is, ``NAMESPACE/POD.log`` (a node player writes them)."""

    def __init__(
        self,
        cluster: Cluster | None = None,
        *,
        logs: Path,
        denied: frozenset[tuple[str, str]] = frozenset(),
        tls: Path | None = None,
    ) -> None:
        if importlib.util.find_spec("kubernetes_validate") is None:
            raise MissingSchemas(
                "the Kubernetes fake checks every object with kubernetes-validate: "
                "pip install 'spotwise[try]'"
            )
        self.cluster = cluster or Cluster()
        self.logs, self.denied = logs, denied
        self.token = secrets.token_urlsafe(24)
        self.requests: list[tuple[str, str]] = []
        """Each request's method and path, in order (what a test asserts was asked)."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
                server.requests.append((self.command, parts.path))
                if self.headers.get("Authorization") != f"Bearer {server.token}":
                    self._send(status(401, "Unauthorized", "Unauthorized"))
                    return
                if self.command == "GET" and query.get("watch") in ("1", "true", "True"):
                    self._watch(parts.path, query)
                    return
                try:
                    data = json.loads(body) if body else None
                except ValueError:
                    self._send(status(400, "BadRequest", "the body is not JSON"))
                    return
                self._send(server.answer(self.command, parts.path, query, data))

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

            def _send(self, reply: Reply) -> None:
                plain = isinstance(reply.body, bytes)
                data = reply.body if plain else json.dumps(reply.body).encode()
                self.send_response(reply.status)
                kind = "text/plain" if plain else "application/json"
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _watch(self, path: str, query: dict[str, str]) -> None:
                route = server.route(path)
                if isinstance(route, Reply):
                    self._send(route)
                    return
                resource, namespace, _, _ = route
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for event in server.events(resource, namespace, query):
                        line = json.dumps(event).encode() + b"\n"
                        self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the watcher went away: nothing to say

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.certificate: Path | None = None
        """The certificate it serves HTTPS with (None: plain HTTP)."""
        if tls is not None:
            self.certificate, key = self_signed(
                tls, "apiserver", subject="spotwise kubernetes fake"
            )
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(self.certificate, key)
            # the handshake happens in each request's thread, not in the accept loop
            self._server.socket = context.wrap_socket(
                self._server.socket, server_side=True, do_handshake_on_connect=False
            )
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self._server.server_address[1]}"

    def kubeconfig(self, path: Path, *, context: str = "fake", namespace: str = "default") -> Path:
        """Write a kubeconfig (mode 0600) that reaches this server as ``kubectl`` reads one:
        cluster, user (its bearer token) and context ``context`` with ``namespace``."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": context, "cluster": self._cluster_entry()}],
            "users": [{"name": context, "user": {"token": self.token}}],
            "contexts": [
                {
                    "name": context,
                    "context": {"cluster": context, "user": context, "namespace": namespace},
                }
            ],
            "current-context": context,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(config, out, indent=1)  # YAML reads JSON
        return path

    def _cluster_entry(self) -> dict[str, str]:
        entry = {"server": self.url}
        if self.certificate is not None:
            data = base64.b64encode(self.certificate.read_bytes()).decode()
            entry["certificate-authority-data"] = data
        return entry

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()

    # routing

    def route(self, path: str) -> tuple[Resource, str | None, str | None, str | None] | Reply:
        """The resource, namespace, name and subresource a path names, or the 404 for one the
        fake does not serve."""
        found = ROUTE.fullmatch(path)
        if found is None or (found["plural"] is None and found["namespace"] is None):
            return status(404, "NotFound", f"the server could not find {path[:120]}")
        plural, name, namespace = found["plural"], found["name"], found["namespace"]
        if plural is None:  # /api/v1/namespaces/NAME
            plural, name, namespace = "namespaces", namespace, None
        resource = RESOURCES.get(plural)
        api = found["core"] or f"{found['group']}/{found['version']}"
        if resource is None or resource.api_version.split("/")[-1] != api.split("/")[-1]:
            return status(404, "NotFound", f"the server could not find {path[:120]}")
        group = resource.api_version.rpartition("/")[0]
        if (found["group"] or "") != group or (namespace is not None and not resource.namespaced):
            return status(404, "NotFound", f"the server could not find {path[:120]}")
        return resource, namespace, name, found["sub"]

    def answer(self, method: str, path: str, query: dict[str, str], body: Any) -> Reply:
        """The reply to one request that is not a watch."""
        if path == ACCESS_REVIEW and method == "POST":
            return self._review(body)
        if path in ("/version", "/version/"):
            major, minor, _ = KUBERNETES_VERSION.split(".")
            return Reply(
                200,
                {
                    "major": major,
                    "minor": minor,
                    "gitVersion": f"v{KUBERNETES_VERSION}",
                    "gitCommit": "",
                    "gitTreeState": "clean",
                    "buildDate": "2025-04-22T00:00:00Z",
                    "goVersion": "go1.24",
                    "compiler": "gc",
                    "platform": "linux/amd64",
                },
            )
        found = discovery(path.rstrip("/"))
        if found is not None:
            return Reply(200, found)
        route = self.route(path)
        if isinstance(route, Reply):
            return route
        resource, namespace, name, sub = route
        ns = namespace or ""
        verb = VERBS.get((method, name is not None), method.lower())
        what = f"{resource.plural}/{sub}" if sub else resource.plural
        if (verb, what) in self.denied:
            group = resource.api_version.rpartition("/")[0]
            return status(
                403,
                "Forbidden",
                f'{what} "{name or ""}" is forbidden: cannot {verb} resource "{what}" in API '
                f'group "{group}" in the namespace "{ns}"',
            )
        try:
            if name is None:
                if method == "GET":
                    return self._list(resource, namespace, query)
                if method == "POST":
                    return self._create(resource, ns, body)
            elif method == "POST" and sub == "eviction" and resource.plural == "pods":
                return Reply(201, evict(self.cluster, ns, name, body))
            elif method == "GET" and sub == "log":
                self.cluster.get("pods", ns, name)
                log = self.logs / ns / f"{name}.log"
                return Reply(200, log.read_bytes() if log.exists() else b"")
            elif method == "GET":
                return Reply(200, self.cluster.get(resource.plural, ns, name))
            elif method == "PATCH":
                return self._patch(resource, ns, name, body)
            elif method == "DELETE":
                return self._delete(resource, ns, name, query, body)
        except NotFound as error:
            return status(404, "NotFound", str(error), name=name, kind=resource.plural)
        except Conflict as error:
            return status(409, "AlreadyExists", str(error), name=name, kind=resource.plural)
        except Invalid as error:
            return self._invalid(resource, name, error)
        except NameMismatch as error:
            return status(400, "BadRequest", str(error))
        except TooManyRequests as error:
            return status(
                429,
                "TooManyRequests",
                str(error),
                causes=[{"reason": "DisruptionBudget", "message": str(error)}],
            )
        return status(405, "MethodNotAllowed", f"{method} is not served on {path[:120]}")

    def _invalid(self, resource: Resource, name: str | None, error: Invalid) -> Reply:
        return status(
            422,
            "Invalid",
            f'{resource.kind} "{name or ""}" is invalid: {error}',
            name=name or "",
            kind=resource.kind,
            causes=[
                {"reason": "FieldValueInvalid", "message": error.message, "field": error.field}
            ],
        )

    def _list(self, resource: Resource, namespace: str | None, query: dict[str, str]) -> Reply:
        items = self.cluster.items(
            resource.plural,
            namespace,
            query.get("labelSelector", ""),
            query.get("fieldSelector", ""),
        )
        start = int(query["continue"]) if query.get("continue", "").isdigit() else 0
        limit = int(query["limit"]) if query.get("limit", "").isdigit() else 0
        end = start + limit if limit else len(items)
        metadata = {"resourceVersion": str(self.cluster.version)}
        if end < len(items):
            metadata["continue"] = str(end)  # the position: enough for a fake's one reader
        return Reply(
            200,
            {
                "kind": f"{resource.kind}List",
                "apiVersion": resource.api_version,
                "metadata": metadata,
                "items": items[start:end],
            },
        )

    def _create(self, resource: Resource, namespace: str, body: Any) -> Reply:
        if not resource.namespaced and namespace:
            raise Invalid("metadata.namespace", f"a {resource.kind} has no namespace")
        check_object(body, resource.kind, resource.api_version)
        check_name(body)
        body.pop("status", None)  # the cluster's to write
        if resource.kind == "Secret":  # write-only: stored as data, base64
            text = body.pop("stringData", None) or {}
            encoded = {k: base64.b64encode(str(v).encode()).decode() for k, v in text.items()}
            body["data"] = {**(body.get("data") or {}), **encoded}
        return Reply(201, self.cluster.create(resource.plural, namespace, body))

    def _patch(self, resource: Resource, namespace: str, name: str, body: Any) -> Reply:
        if not isinstance(body, dict):
            raise Invalid("<patch>", "a merge patch is a JSON object")
        current = self.cluster.get(resource.plural, namespace, name)
        merge(current, body)
        status_ = current.pop("status", None)
        check_object(current, resource.kind, resource.api_version)

        def apply(obj: dict[str, Any]) -> None:
            merge(obj, body)

        if status_ is not None:
            current["status"] = status_
        return Reply(200, self.cluster.update(resource.plural, namespace, name, apply))

    def _delete(
        self, resource: Resource, namespace: str, name: str, query: dict[str, str], body: Any
    ) -> Reply:
        options = body if isinstance(body, dict) else {}
        propagation = query.get("propagationPolicy") or options.get("propagationPolicy")
        grace_text = query.get("gracePeriodSeconds") or options.get("gracePeriodSeconds")
        grace = None if grace_text is None else int(grace_text)
        if resource.plural == "pods":
            return Reply(200, self.end_pod(namespace, name, grace))
        removed = self.cluster.delete(resource.plural, namespace, name)
        if resource.plural == "jobs" and propagation in ("Background", "Foreground"):
            uid = removed["metadata"]["uid"]
            for pod in self.cluster.items("pods", namespace):
                owners = pod["metadata"].get("ownerReferences") or []
                if any(o.get("uid") == uid for o in owners):
                    self.end_pod(namespace, pod["metadata"]["name"], grace)
        return Reply(200, removed)

    def end_pod(self, namespace: str, name: str, grace: int | None = None) -> dict[str, Any]:
        """Delete a Pod as the apiserver does (:meth:`Cluster.end_pod`).

        Raises:
            NotFound: when there is none.
        """
        return self.cluster.end_pod(namespace, name, grace)

    def _review(self, body: Any) -> Reply:
        try:
            check_object(body, "SelfSubjectAccessReview", "authorization.k8s.io/v1")
        except Invalid as error:
            return self._invalid(ACCESS_REVIEWS, "", error)
        attributes = body.get("spec", {}).get("resourceAttributes") or {}
        sub = attributes.get("subresource")
        what = f"{attributes.get('resource')}/{sub}" if sub else str(attributes.get("resource"))
        asked = (str(attributes.get("verb")), what)
        allowed = asked not in self.denied
        reason = "" if allowed else f"RBAC: {asked[0]} on {asked[1]} is not granted"
        return Reply(201, {**body, "status": {"allowed": allowed, "reason": reason}})

    def events(
        self, resource: Resource, namespace: str | None, query: dict[str, str]
    ) -> Iterator[dict[str, Any]]:
        """A watch's events: from ``resourceVersion`` on (none or 0: each object now as
        ``ADDED``, then what changes), until ``timeoutSeconds`` pass with no change."""
        labels = query.get("labelSelector", "")
        fields = query.get("fieldSelector", "")
        since = query.get("resourceVersion") or "0"
        timeout = min(float(query.get("timeoutSeconds") or WATCH_TIMEOUT_S), 600.0)
        if not since.isdigit():
            refused = status(400, "BadRequest", f"resourceVersion {since[:20]!r} is not a number")
            yield {"type": "ERROR", "object": refused.body}
            return
        start = int(since)
        if start == 0:
            start = self.cluster.version
            for obj in self.cluster.items(resource.plural, namespace, labels, fields):
                yield {"type": "ADDED", "object": obj}
        try:
            changes = self.cluster.changes(resource.plural, namespace, start, timeout)
        except Expired as error:
            yield {"type": "ERROR", "object": status(410, "Expired", str(error)).body}
            return
        for change in changes:
            obj = change.object
            if selected(obj["metadata"].get("labels") or {}, labels) and field_selected(
                obj, fields
            ):
                yield {"type": change.type, "object": obj}

"""``spotwise check kubernetes``: is this cluster ready for ``spotwise run --launcher
kubernetes``?

Each check is one line with its fix: the kubeconfig context and its apiserver, the namespace,
each permission the launcher uses (asked of the apiserver itself with a SelfSubjectAccessReview,
as ``kubectl auth can-i`` does), the checkpoint claim, spot nodes of the platform, and the GPU
resource on them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from spotwise.executor.clouds.base import Check
from spotwise.executor.clouds.kubernetes.clients import Gone, Unreachable, call
from spotwise.executor.clouds.kubernetes.platforms import GPU_RESOURCE
from spotwise.executor.clouds.kubernetes.target import KubernetesTarget
from spotwise.executor.errors import ExecutorError

DOCS = "docs/kubernetes.md"
PERMISSIONS = (
    ("create", "jobs", "batch", ""),
    ("get", "jobs", "batch", ""),
    ("list", "jobs", "batch", ""),
    ("delete", "jobs", "batch", ""),
    ("list", "pods", "", ""),
    ("get", "pods", "", "log"),
    ("create", "secrets", "", ""),
    ("list", "secrets", "", ""),
    ("delete", "secrets", "", ""),
)
"""What the launcher and ``gc`` do in the namespace: verb, resource, API group, subresource."""


class KubernetesCheck:
    """The checks for one context, namespace and set of ``spotwise run`` settings."""

    def __init__(self, target: KubernetesTarget, api: Callable[[], Any]) -> None:
        self.target = target
        self._api = api
        self.core: Any = None
        self.auth: Any = None

    def run(self) -> Iterator[Check]:
        """Every check, in the order a user would fix them, each as soon as it is decided."""
        first = self.context()
        yield first
        if first.status != "ok":
            return
        namespace = self.namespace()
        yield namespace
        if namespace.status == "missing":
            return  # without it nothing else can be asked (a namespace not readable: go on)
        yield from self.permissions()
        yield self.claim()
        nodes = self.spot_nodes()
        yield nodes[0]
        yield self.gpus(nodes[1])

    def context(self) -> Check:
        """The kubeconfig's context, and an apiserver that answers with it."""
        from kubernetes import client

        where = self.target.context or "the current context"
        try:
            api = self._api()
            self.core = client.CoreV1Api(api)
            self.auth = client.AuthorizationV1Api(api)
            version = call("version", lambda: client.VersionApi(api).get_code(_request_timeout=15))
        except Unreachable as error:
            return Check("credentials", "unknown", str(error), fix="is the cluster up?")
        except ExecutorError as error:
            return Check(
                "credentials",
                "missing",
                str(error),
                fix="kubectl config get-contexts; pass --project CONTEXT/NAMESPACE",
            )
        server = api.configuration.host
        return Check(
            "credentials",
            "ok",
            f"kubeconfig context {where} at {server}, Kubernetes {version.git_version}",
        )

    def namespace(self) -> Check:
        """The namespace the Jobs go to."""
        name = self.target.namespace
        try:
            call(f"namespace {name}", lambda: self.core.read_namespace(name, _request_timeout=15))
        except Gone:
            return Check(
                "namespace", "missing", f"{name} does not exist", fix=f"kubectl create ns {name}"
            )
        except ExecutorError as error:  # a namespaced Role need not read its namespace
            return Check("namespace", "unknown", f"{error} (the checks below tell more)")
        return Check("namespace", "ok", name)

    def permissions(self) -> Iterator[Check]:
        """Each verb the launcher needs, as the apiserver's RBAC answers for this user."""
        from kubernetes import client

        for verb, resource, group, sub in PERMISSIONS:
            what = f"{verb} {resource}{'/' + sub if sub else ''}"
            review = client.V1SelfSubjectAccessReview(
                spec=client.V1SelfSubjectAccessReviewSpec(
                    resource_attributes=client.V1ResourceAttributes(
                        namespace=self.target.namespace,
                        verb=verb,
                        group=group,
                        resource=resource,
                        subresource=sub or None,
                    )
                )
            )
            try:
                answer = self._review(what, review)
            except ExecutorError as error:
                yield Check(f"permission: {what}", "unknown", str(error))
                continue
            if answer.status and answer.status.allowed:
                yield Check(f"permission: {what}", "ok", f"in {self.target.namespace}")
            else:
                reason = (answer.status.reason if answer.status else "") or "not allowed"
                yield Check(
                    f"permission: {what}",
                    "missing",
                    reason,
                    fix=f"grant the Role of {DOCS} in {self.target.namespace}",
                )

    def _review(self, what: str, review: Any) -> Any:
        return call(
            f"can-i {what}",
            lambda: self.auth.create_self_subject_access_review(review, _request_timeout=15),
        )

    def claim(self) -> Check:
        """The PersistentVolumeClaim the checkpoints go to: there, bound, and shared."""
        name = self.target.claim
        if not name:
            return Check("checkpoint claim", "skipped", "no claim given", flag="--bucket")
        ns = self.target.namespace
        try:
            found = call(
                f"claim {name}",
                lambda: self.core.read_namespaced_persistent_volume_claim(
                    name, ns, _request_timeout=15
                ),
            )
        except Gone:
            return Check(
                "checkpoint claim",
                "missing",
                f"no PersistentVolumeClaim {name} in {ns}",
                fix=f"create one (ReadWriteMany, a storage class that outlives nodes): {DOCS}",
            )
        except ExecutorError as error:
            return Check("checkpoint claim", "unknown", str(error))
        modes = list((found.status.access_modes if found.status else None) or [])
        phase = found.status.phase if found.status else None
        if phase != "Bound":
            return Check("checkpoint claim", "unknown", f"{name} is {phase}, not Bound yet")
        if "ReadWriteMany" not in modes:
            return Check(
                "checkpoint claim",
                "ok",
                f"{name} ({', '.join(modes)}): a new Pod mounts it only once the old one's "
                "node has let it go",
            )
        return Check("checkpoint claim", "ok", f"{name} (ReadWriteMany)")

    def spot_nodes(self) -> tuple[Check, list[Any]]:
        """The platform's spot nodes now (a pool that scales from zero may have none yet)."""
        platform = self.target.platform_rules
        selector = dict(platform.spot_selector)
        if self.target.shape:
            selector["node.kubernetes.io/instance-type"] = self.target.shape
        text = ",".join(f"{k}={v}" for k, v in selector.items())
        try:
            listed = call(
                "nodes", lambda: self.core.list_node(label_selector=text, _request_timeout=15)
            )
        except ExecutorError as error:
            return Check("spot nodes", "unknown", str(error)), []
        nodes = list(listed.items)
        if self.target.zones:
            nodes = [
                n
                for n in nodes
                if (n.metadata.labels or {}).get(platform.pool_label) in self.target.zones
            ]
        if not nodes:
            return (
                Check(
                    "spot nodes",
                    "unknown",
                    f"no node with {text or 'the pools given'} now (a pool that scales from "
                    "zero adds one when a Pod asks)",
                    fix=f"add a spot node pool ({platform.title}: {platform.source})",
                ),
                [],
            )
        return Check("spot nodes", "ok", f"{len(nodes)} with {text or 'the pools given'}"), nodes

    def gpus(self, nodes: list[Any]) -> Check:
        """``nvidia.com/gpu`` on a spot node, as many as a Pod asks."""
        wanted = self.target.gpus
        if not wanted:
            return Check("GPU resource", "skipped", "no GPU asked", flag="--instance-type")
        most = max(
            (int((n.status.allocatable or {}).get(GPU_RESOURCE, 0)) for n in nodes if n.status),
            default=0,
        )
        if most >= wanted:
            return Check("GPU resource", "ok", f"{GPU_RESOURCE}: {most} on a spot node")
        return Check(
            "GPU resource",
            "unknown" if not nodes else "missing",
            f"no spot node offers {wanted} {GPU_RESOURCE} (most: {most})",
            fix="install the NVIDIA device plugin (GPU Operator) on the GPU node pool",
        )

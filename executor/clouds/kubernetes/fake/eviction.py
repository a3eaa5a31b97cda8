"""The Eviction API of the fake apiserver (``POST .../pods/{name}/eviction``, a policy/v1
``Eviction``), as kube-apiserver's eviction REST handler does it: the Pod's
PodDisruptionBudgets are consulted (a Pod that has ended is deleted without them); one that
allows no disruption refuses with 429 ``TooManyRequests`` (the caller retries, as ``kubectl
drain`` and Karpenter do); otherwise the Pod is marked ``DisruptionTarget``
(``EvictionByEvictionAPI``) and deleted with the Eviction's ``deleteOptions`` grace, else its
own: its node stops it with SIGTERM, then SIGKILL once the grace is over.

What the fake leaves out: a budget's ``unhealthyPodEvictionPolicy`` (a not-ready Pod is
counted unhealthy and so never counts toward ``currentHealthy``), ``deleteOptions``
preconditions and dry runs, and the disruption controller's ``disruptedPods`` bookkeeping (a
budget is computed from the Pods as they are, at each eviction). The annotations
``karpenter.sh/do-not-disrupt`` and ``cluster-autoscaler.kubernetes.io/safe-to-evict`` are not
the apiserver's: they are read by Karpenter's and the cluster autoscaler's voluntary
disruption (consolidation, drift, scale-down), never by an eviction, so the fake ignores them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from spotwise.executor.clouds.kubernetes.fake.cluster import Cluster, condition, selected
from spotwise.executor.clouds.kubernetes.fake.schema import Invalid, check_object

EVICTED_REASON = "EvictionByEvictionAPI"
"""The ``DisruptionTarget`` reason an eviction gives (Kubernetes 1.26+)."""


class NameMismatch(Exception):
    """An Eviction whose name is not the Pod's of its URL (HTTP 400)."""


class TooManyRequests(Exception):
    """An eviction a PodDisruptionBudget refuses now (HTTP 429): ``budget`` is its name."""

    def __init__(self, budget: str) -> None:
        super().__init__(
            "Cannot evict pod as it would violate the pod's disruption budget. "
            f"The disruption budget {budget} needs more healthy pods to allow a disruption."
        )
        self.budget = budget


@dataclass(frozen=True, slots=True)
class Budget:
    """What a PodDisruptionBudget allows now."""

    name: str
    healthy: int
    desired: int

    @property
    def allowed(self) -> int:
        """``status.disruptionsAllowed``: how many of its Pods may go now."""
        return max(0, self.healthy - self.desired)


def _count(value: Any, expected: int, *, round_up: bool) -> int:
    """An ``IntOrString`` of a budget: a whole number, or a percentage of ``expected``."""
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit():
        share = int(value[:-1]) * expected / 100
        return math.ceil(share) if round_up else math.floor(share)
    if isinstance(value, int):
        return value
    raise Invalid("spec", f"{str(value)[:40]!r} is neither a whole number nor a percentage")


def _healthy(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    return (
        status.get("phase") == "Running" and ready and not pod["metadata"].get("deletionTimestamp")
    )


def budgets(cluster: Cluster, pod: dict[str, Any]) -> list[Budget]:
    """The PodDisruptionBudgets of ``pod``'s namespace whose ``matchLabels`` select it, each as
    the disruption controller would compute it now (``minAvailable`` rounds a percentage up,
    ``maxUnavailable`` down)."""
    namespace = pod["metadata"]["namespace"]
    labels = pod["metadata"].get("labels") or {}
    found = []
    for budget in cluster.items("poddisruptionbudgets", namespace):
        spec = budget.get("spec") or {}
        wanted = (spec.get("selector") or {}).get("matchLabels") or {}
        if not wanted or not selected(labels, ",".join(f"{k}={v}" for k, v in wanted.items())):
            continue
        term = ",".join(f"{k}={v}" for k, v in wanted.items())
        covered = cluster.items("pods", namespace, term)
        healthy = sum(_healthy(p) for p in covered)
        if "minAvailable" in spec:
            desired = _count(spec["minAvailable"], len(covered), round_up=True)
        else:
            unavailable = _count(spec.get("maxUnavailable", 0), len(covered), round_up=False)
            desired = max(0, len(covered) - unavailable)
        found.append(Budget(budget["metadata"]["name"], healthy, desired))
    return found


def evict(cluster: Cluster, namespace: str, name: str, body: Any) -> dict[str, Any]:
    """Evict Pod ``name`` as ``body`` (an ``Eviction``) asks: the ``Status`` of success (the
    apiserver answers 201 with it).

    Raises:
        Invalid: for a body that is no policy/v1 Eviction (naming the field).
        NameMismatch: for an Eviction of another Pod than the URL's.
        NotFound: when there is no such Pod.
        TooManyRequests: when a disruption budget of the Pod allows no disruption now.
    """
    check_object(body, "Eviction", "policy/v1")
    named = (body.get("metadata") or {}).get("name")
    if named != name:
        raise NameMismatch(
            f"name in URL does not match name in Eviction object ({str(named)[:60]!r}, not "
            f"{name!r})"
        )
    options = body.get("deleteOptions") or {}
    grace = options.get("gracePeriodSeconds")
    pod = cluster.get("pods", namespace, name)
    ended = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
    if not ended and not pod["metadata"].get("deletionTimestamp"):
        for budget in budgets(cluster, pod):
            if budget.allowed < 1:
                raise TooManyRequests(budget.name)
        at = cluster.stamp()

        def mark(obj: dict[str, Any]) -> None:
            conditions = obj.setdefault("status", {}).setdefault("conditions", [])
            if not any(c.get("type") == "DisruptionTarget" for c in conditions):
                conditions.append(
                    condition(
                        "DisruptionTarget", "True", EVICTED_REASON, at, "Eviction API: evicting"
                    )
                )

        cluster.update("pods", namespace, name, mark)
    cluster.end_pod(namespace, name, None if grace is None else int(grace))
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

"""The fake cluster's state, as etcd and the controllers keep it: objects by resource, namespace
and name, one ``resourceVersion`` counter, every change kept as a watch event, and the
controllers a launcher relies on: the scheduler (a Pod bound to a ready node whose labels match
its ``nodeSelector`` and required node affinity, and whose taints it tolerates), the Job
controller (a Pod per Job from its template; a failed Pod counted against ``backoffLimit``, or
not, or failing the Job at once, as the first matching ``podFailurePolicy`` rule says; the Job
``Complete`` once a Pod succeeded, ``Failed`` past its limit) and the taint manager (it
the Pods that do not tolerate a node's ``NoExecute`` taint)."""

from __future__ import annotations

import copy
import secrets
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from spotwise.core.clock import SYSTEM_CLOCK, Clock


@dataclass(frozen=True, slots=True)
class Resource:
    """One kind the fake serves: its URL plural, kind, apiVersion, and whether it lives in a
    namespace."""

    plural: str
    kind: str
    api_version: str
    namespaced: bool = True


RESOURCES = {
    r.plural: r
    for r in (
        Resource("pods", "Pod", "v1"),
        Resource("nodes", "Node", "v1", namespaced=False),
        Resource("events", "Event", "v1"),
        Resource("services", "Service", "v1"),
        Resource("namespaces", "Namespace", "v1", namespaced=False),
        Resource("persistentvolumeclaims", "PersistentVolumeClaim", "v1"),
        Resource("secrets", "Secret", "v1"),
        Resource("jobs", "Job", "batch/v1"),
        Resource("poddisruptionbudgets", "PodDisruptionBudget", "policy/v1"),
    )
}


class NotFound(Exception):
    """No such object (HTTP 404)."""


class Conflict(Exception):
    """The object exists already (HTTP 409)."""


class Expired(Exception):
    """A watch from a resourceVersion whose history is compacted (HTTP 410)."""


@dataclass(frozen=True, slots=True)
class Change:
    """One watch event: ``ADDED``, ``MODIFIED`` or ``DELETED``, and the object after it."""

    version: int
    plural: str
    type: str
    object: dict[str, Any]


def condition(kind: str, status: str, reason: str, at: str, message: str = "") -> dict[str, Any]:
    """A status condition as the API writes it, changed at ``at``."""
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": at,
    }


def selected(labels: dict[str, str], selector: str) -> bool:
    """Whether ``labels`` match a label selector's text (``a=b,c!=d,e``: equality, inequality,
    existence)."""
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            key, _, value = term.partition("!=")
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, _, value = term.partition("=")
            if labels.get(key) != value.lstrip("="):
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def field_selected(obj: dict[str, Any], selector: str) -> bool:
    """Whether ``obj`` matches a field selector's text (``spec.nodeName=n,metadata.name=x``)."""
    for term in filter(None, (t.strip() for t in selector.split(","))):
        negate = "!=" in term
        path, _, value = term.partition("!=" if negate else "=")
        found: Any = obj
        for part in path.lstrip("=").split("."):
            found = found.get(part) if isinstance(found, dict) else None
        if (str(found or "") == value.lstrip("=")) == negate:
            return False
    return True


def affine(affinity: dict[str, Any], labels: dict[str, str]) -> bool:
    """Whether a node with ``labels`` meets a Pod's required node affinity: one of its terms
    whose every expression holds (``In``, ``NotIn``, ``Exists``, ``DoesNotExist``)."""
    required = (affinity.get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not required:
        return True

    def holds(expression: dict[str, Any]) -> bool:
        key, operator = expression["key"], expression["operator"]
        values = expression.get("values") or []
        return {
            "In": key in labels and labels[key] in values,
            "NotIn": labels.get(key) not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }.get(operator, False)

    return any(
        all(holds(e) for e in term.get("matchExpressions") or [])
        for term in required.get("nodeSelectorTerms") or []
    )


def tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    """Whether one of ``tolerations`` tolerates ``taint`` (the scheduler's rule)."""
    for toleration in tolerations:
        effect = toleration.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        key = toleration.get("key")
        if toleration.get("operator") == "Exists":
            if not key or key == taint.get("key"):
                return True
        elif key == taint.get("key") and toleration.get("value", "") == taint.get("value", ""):
            return True
    return False


class Cluster:
    """Every object of the fake, its watch history and its controllers; thread-safe."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self._objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self._changes: list[Change] = []
        self._version = 1
        self.compacted = 0
        """The resourceVersion up to which the history is dropped (:meth:`compact`)."""
        self._lock = threading.Condition()
        self._counted: set[str] = set()
        """The uids of the ended Pods the Job controller has counted."""

    def stamp(self) -> str:
        """The time as the API writes it (RFC 3339, seconds, UTC), on the cluster's clock."""
        return datetime.fromtimestamp(self.clock.time(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    @property
    def version(self) -> int:
        """The resourceVersion of the last change."""
        return self._version

    # storage

    def _record(self, plural: str, kind: str, obj: dict[str, Any]) -> Change:
        self._version += 1
        obj["metadata"]["resourceVersion"] = str(self._version)  # a deletion's too, as etcd's
        change = Change(self._version, plural, kind, copy.deepcopy(obj))
        self._changes.append(change)
        self._lock.notify_all()
        return change

    def create(self, plural: str, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        """Store a new object (its name made from ``generateName`` where it has none).

        Raises:
            Conflict: when one of that name exists.
        """
        with self._lock:
            obj = copy.deepcopy(body)
            meta = obj.setdefault("metadata", {})
            if not meta.get("name"):
                meta["name"] = meta["generateName"] + secrets.token_hex(3)[:5]
            key = (plural, namespace, meta["name"])
            if key in self._objects:
                raise Conflict(f'{plural} "{meta["name"]}" already exists')
            if RESOURCES[plural].namespaced:
                meta["namespace"] = namespace
            meta.update(uid=str(uuid.uuid4()), creationTimestamp=self.stamp(), generation=1)
            self._objects[key] = obj
            self._after(self._record(plural, "ADDED", obj))
            return copy.deepcopy(obj)

    def get(self, plural: str, namespace: str, name: str) -> dict[str, Any]:
        """One object.

        Raises:
            NotFound: when there is none.
        """
        with self._lock:
            try:
                return copy.deepcopy(self._objects[(plural, namespace, name)])
            except KeyError:
                raise NotFound(f'{plural} "{name}" not found') from None

    def update(
        self, plural: str, namespace: str, name: str, change: Callable[[dict[str, Any]], None]
    ) -> dict[str, Any]:
        """Change one object in place (``change`` mutates it), as one MODIFIED event.

        Raises:
            NotFound: when there is none.
        """
        with self._lock:
            obj = self._objects.get((plural, namespace, name))
            if obj is None:
                raise NotFound(f'{plural} "{name}" not found')
            change(obj)
            self._after(self._record(plural, "MODIFIED", obj))
            return copy.deepcopy(obj)

    def delete(self, plural: str, namespace: str, name: str) -> dict[str, Any]:
        """Remove one object at once.

        Raises:
            NotFound: when there is none.
        """
        with self._lock:
            obj = self._objects.pop((plural, namespace, name), None)
            if obj is None:
                raise NotFound(f'{plural} "{name}" not found')
            self._after(self._record(plural, "DELETED", obj))
            return copy.deepcopy(obj)

    def end_pod(self, namespace: str, name: str, grace: int | None = None) -> dict[str, Any]:
        """Delete a Pod as the apiserver does: one whose container runs is marked
        (``deletionTimestamp``) for its node to stop within ``grace`` seconds (None: its
        ``terminationGracePeriodSeconds``); any other goes at once.

        Raises:
            NotFound: when there is none.
        """
        with self._lock:
            pod = self.get("pods", namespace, name)
            if pod.get("status", {}).get("phase") != "Running":
                return self.delete("pods", namespace, name)

            def mark(obj: dict[str, Any]) -> None:
                obj["metadata"].setdefault("deletionTimestamp", self.stamp())
                own = obj["spec"].get("terminationGracePeriodSeconds", 30)
                given = own if grace is None else grace
                obj["metadata"].setdefault("deletionGracePeriodSeconds", given)

            return self.update("pods", namespace, name, mark)

    def items(
        self, plural: str, namespace: str | None, labels: str = "", fields: str = ""
    ) -> list[dict[str, Any]]:
        """The objects of a resource (in ``namespace``; None: all), by name, that match the
        selectors."""
        with self._lock:
            return [
                copy.deepcopy(obj)
                for (kind, ns, _), obj in sorted(self._objects.items())
                if kind == plural
                and (namespace is None or ns == namespace)
                and selected(obj["metadata"].get("labels") or {}, labels)
                and field_selected(obj, fields)
            ]

    def compact(self) -> int:
        """Drop the history up to now, as etcd's compaction does: a watch from an older
        resourceVersion is then refused (:class:`Expired`). The version compacted to."""
        with self._lock:
            self._changes.clear()
            self.compacted = self._version
            return self.compacted

    def changes(
        self, plural: str, namespace: str | None, since: int, timeout_s: float
    ) -> Iterator[Change]:
        """The changes of a resource after resourceVersion ``since``, as they come, until
        ``timeout_s`` passes with none.

        Raises:
            Expired: when the history after ``since`` is compacted away.
        """
        if since < self.compacted:
            raise Expired(f"too old resource version: {since} ({self.compacted})")
        return self._changes_after(plural, namespace, since, timeout_s)

    def _changes_after(
        self, plural: str, namespace: str | None, since: int, timeout_s: float
    ) -> Iterator[Change]:
        seen = since
        while True:
            with self._lock:
                if seen < self.compacted:
                    return  # compacted under it: resumed from ``seen``, the watcher gets 410
                fresh = [c for c in self._changes if c.version > seen]
                if not fresh and not self._lock.wait(timeout_s):
                    return
                fresh = [c for c in self._changes if c.version > seen]
            for change in fresh:
                seen = change.version
                namespace_of = change.object["metadata"].get("namespace")
                if change.plural == plural and namespace in (None, namespace_of):
                    yield change

    # controllers

    def _after(self, change: Change) -> None:
        """Run the controllers on a change (the lock held: their changes follow it)."""
        obj = change.object
        meta = obj["metadata"]
        if change.plural == "jobs" and change.type == "ADDED":
            self._start_pod(self._objects[("jobs", meta.get("namespace", ""), meta["name"])])
        elif change.plural == "pods" and change.type != "DELETED":
            if not obj["spec"].get("nodeName") and obj.get("status", {}).get("phase") is None:
                self._schedule(meta.get("namespace", ""), meta["name"])
            self._job_saw(obj)
        elif change.plural == "nodes" and change.type != "DELETED":
            self._evict_untolerating(obj)
            for (kind, ns, name), pod in list(self._objects.items()):
                unbound = kind == "pods" and not pod["spec"].get("nodeName")
                if unbound and pod.get("status", {}).get("phase") != "Failed":
                    self._schedule(ns, name)

    def _evict_untolerating(self, node: dict[str, Any]) -> None:
        """The taint manager: each running Pod on ``node`` that does not tolerate one of its
        ``NoExecute`` taints (a reclaim notice: CCE's) is marked ``DisruptionTarget``
        (``DeletionByTaintManager``, as Kubernetes 1.26+ does) and deleted with its grace."""
        taints = [
            t for t in node.get("spec", {}).get("taints") or [] if t.get("effect") == "NoExecute"
        ]
        if not taints:
            return
        at = self.stamp()
        for (kind, ns, name), pod in list(self._objects.items()):
            if kind != "pods" or pod["spec"].get("nodeName") != node["metadata"]["name"]:
                continue
            spec, meta = pod["spec"], pod["metadata"]
            if meta.get("deletionTimestamp") or pod.get("status", {}).get("phase") != "Running":
                continue
            if all(tolerates(spec.get("tolerations") or [], t) for t in taints):
                continue
            pod["status"].setdefault("conditions", []).append(
                condition(
                    "DisruptionTarget",
                    "True",
                    "DeletionByTaintManager",
                    at,
                    "Taint manager: deleting due to NoExecute taint",
                )
            )
            meta.update(
                deletionTimestamp=at,
                deletionGracePeriodSeconds=spec.get("terminationGracePeriodSeconds", 30),
            )
            self._record("pods", "MODIFIED", pod)
            self.create(
                "events",
                ns,
                {
                    "apiVersion": "v1",
                    "kind": "Event",
                    "metadata": {"generateName": f"{name}."},
                    "involvedObject": {"kind": "Pod", "name": name, "namespace": ns},
                    "reason": "TaintManagerEviction",
                    "message": f"Marking for deletion Pod {ns}/{name}",
                    "type": "Normal",
                    "firstTimestamp": at,
                },
            )

    def _schedule(self, namespace: str, name: str) -> None:
        pod = self._objects[("pods", namespace, name)]
        spec = pod["spec"]
        wanted = spec.get("nodeSelector") or {}
        for (kind, _, node_name), node in sorted(self._objects.items()):
            if kind != "nodes" or node.get("spec", {}).get("unschedulable"):
                continue
            labels = node["metadata"].get("labels") or {}
            taints = node.get("spec", {}).get("taints") or []
            if any(labels.get(k) != v for k, v in wanted.items()):
                continue
            if not affine(spec.get("affinity") or {}, labels):
                continue
            if any(not tolerates(spec.get("tolerations") or [], t) for t in taints):
                continue
            spec["nodeName"] = node_name
            pod["status"] = {
                "phase": "Pending",
                "conditions": [condition("PodScheduled", "True", "Scheduled", self.stamp())],
            }
            self._record("pods", "MODIFIED", pod)
            return
        unschedulable = condition(
            "PodScheduled",
            "False",
            "Unschedulable",
            self.stamp(),
            "0 nodes match its selector and tolerations",
        )
        before = (pod.get("status", {}).get("conditions") or [{}])[0]
        if before.get("reason") != "Unschedulable":
            pod["status"] = {"conditions": [unschedulable]}
            self._record("pods", "MODIFIED", pod)

    def _start_pod(self, job: dict[str, Any]) -> None:
        meta = job["metadata"]
        template = copy.deepcopy(job["spec"]["template"])
        labels = {
            **(template.get("metadata", {}).get("labels") or {}),
            "job-name": meta["name"],
            "batch.kubernetes.io/job-name": meta["name"],
            "controller-uid": meta["uid"],
        }
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                **template.get("metadata", {}),
                "generateName": f"{meta['name']}-",
                "labels": labels,
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": template["spec"],
        }
        pod["metadata"].pop("name", None)
        job.setdefault("status", {})["active"] = 1
        self._record("jobs", "MODIFIED", job)
        self.create("pods", meta.get("namespace", ""), pod)

    def _job_saw(self, pod: dict[str, Any]) -> None:
        """The Job controller's step on a Pod's change."""
        phase = pod.get("status", {}).get("phase")
        owner = next(iter(pod["metadata"].get("ownerReferences") or []), None)
        if phase not in ("Succeeded", "Failed") or owner is None or owner["kind"] != "Job":
            return
        job = self._objects.get(("jobs", pod["metadata"].get("namespace", ""), owner["name"]))
        if job is None or pod["metadata"]["uid"] in self._counted:
            return
        self._counted.add(pod["metadata"]["uid"])
        status = job.setdefault("status", {})
        if status.get("conditions"):
            return  # the Job has ended
        status["active"] = 0
        if phase == "Succeeded":
            status["succeeded"] = status.get("succeeded", 0) + 1
            status["completionTime"] = self.stamp()
            status["conditions"] = [condition("Complete", "True", "Completed", self.stamp())]
            self._record("jobs", "MODIFIED", job)
            return
        action = failure_action(job["spec"].get("podFailurePolicy"), pod)
        if action == "Ignore":
            self._record("jobs", "MODIFIED", job)
            self._start_pod(job)
            return
        status["failed"] = status.get("failed", 0) + 1
        if action == "FailJob":
            status["conditions"] = [
                condition("Failed", "True", "PodFailurePolicy", self.stamp(), "a FailJob rule")
            ]
        elif status["failed"] > job["spec"].get("backoffLimit", 6):
            status["conditions"] = [
                condition("Failed", "True", "BackoffLimitExceeded", self.stamp(), "past its limit")
            ]
        else:
            self._record("jobs", "MODIFIED", job)
            self._start_pod(job)
            return
        self._record("jobs", "MODIFIED", job)


def failure_action(policy: dict[str, Any] | None, pod: dict[str, Any]) -> str:
    """What a Job's ``podFailurePolicy`` does with this failed Pod: the action of the first rule
    that matches (a ``DisruptionTarget`` condition, or its container's exit code), else
    ``Count`` (a retry used)."""
    conditions = {c["type"]: c["status"] for c in pod.get("status", {}).get("conditions") or []}
    codes = [
        s.get("state", {}).get("terminated", {}).get("exitCode")
        for s in pod.get("status", {}).get("containerStatuses") or []
    ]
    for rule in (policy or {}).get("rules") or []:
        on_conditions = rule.get("onPodConditions") or []
        on_codes = rule.get("onExitCodes")
        matched = any(conditions.get(c["type"]) == c.get("status", "True") for c in on_conditions)
        if on_codes:
            values = set(on_codes.get("values") or [])
            inside = any(code in values for code in codes if code is not None)
            matched = inside if on_codes.get("operator") == "In" else not inside and bool(codes)
        if matched:
            return str(rule.get("action"))
    return "Count"

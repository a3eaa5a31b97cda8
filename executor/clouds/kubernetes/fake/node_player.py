"""The kubelets of the fake cluster's nodes: each Pod the scheduler binds to a played node runs
its container's command as a process of this machine, and a node is taken back on cue as a
spot node is.

A container here has no image and no mount namespace, so the player stands in for them: the
command's ``python``/``python3`` is this Python; each volume mount of a PersistentVolumeClaim
(or an ``emptyDir``) is a host folder, and the mount path is rewritten to that folder where it
starts an argument or an environment value (the PVC that outlives the node is the claim's
folder, shared by every Pod that claims it); ``env`` takes plain values and the Downward API's
``metadata.name``, ``metadata.namespace``, ``metadata.uid`` and ``spec.nodeName``, and a
Secret's key. Its output (stdout and stderr) is the Pod's log, which the apiserver serves.

A take-back (:meth:`NodePlayer.take_back`) does what a spot reclaim does through the kubelet's
graceful node shutdown: the node is tainted (no new Pod lands there), each of its running Pods
gets the ``DisruptionTarget`` condition (``TerminationByKubelet``), its process SIGTERM, and
SIGKILL once its ``terminationGracePeriodSeconds`` have passed; the Pods end ``Failed`` and the
node is deleted. With a ``NoExecute`` taint (CCE's reclaim notice) the cluster's taint manager
marks and deletes the Pods first (``DeletionByTaintManager``), and the player stops them.
A Pod deleted through the API (its ``deletionTimestamp`` set) is stopped the same way, then
removed.

A drain (:meth:`NodePlayer.drain`) is a take-back as EKS hands one to Karpenter's interruption
handling: the node is tainted ``karpenter.sh/disrupted:NoSchedule`` and each of its Pods is
evicted through the Eviction API (:mod:`.eviction`: ``DisruptionTarget``
``EvictionByEvictionAPI``, then SIGTERM and the Pod's grace); an eviction a
PodDisruptionBudget refuses is tried again until the instance goes (EC2's two minutes), when
the Pods still running are killed without a SIGTERM."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.executor.clouds.kubernetes.fake.cluster import Cluster, NotFound, condition
from spotwise.executor.clouds.kubernetes.fake.eviction import TooManyRequests, evict
from spotwise.executor.clouds.kubernetes.platforms import GPU_RESOURCE

RECLAIM_TAINT = {"key": "cloud.google.com/impending-node-termination", "effect": "NoSchedule"}
"""The taint GKE puts on a Spot node it is about to reclaim (the default of a take-back)."""
DRAIN_TAINT = {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}
"""The taint Karpenter (v1) puts on a node it drains, an interrupted spot node's too."""
SPOT_WARNING_S = 120.0
"""EC2's spot interruption warning: the instance goes this long after it."""


@dataclass(slots=True)
class Running:
    """A Pod's process on a played node."""

    namespace: str
    name: str
    node: str
    process: subprocess.Popen[bytes]
    grace_s: float
    stopping_since: float | None = None
    disrupted: bool = False
    evicted: bool = False


@dataclass(slots=True)
class Played:
    """What the player did, for a test or ``spotwise try`` to say."""

    started: list[str] = field(default_factory=list)
    """Each Pod whose process started, in order."""
    exits: dict[str, int] = field(default_factory=dict)
    """Each ended Pod's exit code (negative: the signal that ended it)."""
    taken_back: list[str] = field(default_factory=list)
    """Each node taken back."""
    killed: list[str] = field(default_factory=list)
    """Each Pod SIGKILLed at the end of its grace, or when its drained node went."""
    refused: dict[str, int] = field(default_factory=dict)
    """How many evictions of each Pod a disruption budget refused during a drain."""


class NodePlayer:
    """Runs the Pods bound to the nodes it played, on a thread, until :meth:`close`.

    ``root``: a folder of its own (each Pod's home; the logs the apiserver serves are under
    ``logs``); ``claims``: the host folder of each PersistentVolumeClaim by name; ``env``: what
    every process gets beside the Pod's own (``PATH`` is this machine's)."""

    def __init__(
        self,
        cluster: Cluster,
        root: Path,
        *,
        logs: Path,
        claims: Mapping[str, Path] | None = None,
        env: Mapping[str, str] | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.cluster, self.root, self.logs = cluster, root, logs
        self.claims = dict(claims or {})
        self.env = {"PATH": os.environ["PATH"], **(env or {})}
        self.clock = clock
        self.played = Played()
        self.errors: list[BaseException] = []
        self._nodes: set[str] = set()
        self._running: dict[tuple[str, str], Running] = {}
        self._draining: dict[str, float] = {}
        """Each node being drained, and when (the clock, monotonic) its instance goes."""
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def add_node(
        self,
        name: str,
        *,
        labels: Mapping[str, str] | None = None,
        taints: list[dict[str, str]] | None = None,
        gpus: int = 0,
    ) -> None:
        """A ready node ``name`` with ``labels``, ``taints`` and ``gpus`` of
        ``nvidia.com/gpu``, played from now on."""
        capacity = {"cpu": "8", "memory": "32Gi", "pods": "110"}
        if gpus:
            capacity[GPU_RESOURCE] = str(gpus)
        with self._lock:
            self._nodes.add(name)
        self.cluster.create(
            "nodes",
            "",
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {"kubernetes.io/hostname": name, **(labels or {})},
                },
                "spec": {"taints": list(taints or [])},
                "status": {
                    "capacity": capacity,
                    "allocatable": capacity,
                    "conditions": [
                        condition("Ready", "True", "KubeletReady", self.cluster.stamp())
                    ],
                },
            },
        )

    def take_back(self, node: str, taint: Mapping[str, str] = RECLAIM_TAINT) -> None:
        """Reclaim ``node`` as a spot node is: tainted, its Pods disrupted (condition and
        SIGTERM, SIGKILL after their grace), then deleted once they have ended (see
        :meth:`wait_gone`).

        Raises:
            NotFound: for a node the cluster lacks.
        """

        def tainted(obj: dict[str, Any]) -> None:
            obj.setdefault("spec", {}).setdefault("taints", []).append(dict(taint))

        self.cluster.update("nodes", "", node, tainted)
        self.played.taken_back.append(node)
        with self._lock:
            victims = [r for r in self._running.values() if r.node == node]
        for running in victims:
            pod = self.cluster.get("pods", running.namespace, running.name)
            if pod["metadata"].get("deletionTimestamp"):  # the taint manager evicted it
                running.grace_s = float(pod["metadata"]["deletionGracePeriodSeconds"])
            else:
                self._disrupt(running)
            self._stop(running)

    def drain(
        self,
        node: str,
        *,
        within_s: float = SPOT_WARNING_S,
        taint: Mapping[str, str] = DRAIN_TAINT,
    ) -> None:
        """Reclaim ``node`` as a drain: tainted, each of its Pods evicted through the Eviction
        API (a budget's refusal tried again), the Pods still running ``within_s`` from now
        killed without a SIGTERM (the instance is gone), the node deleted once none runs.

        Raises:
            NotFound: for a node the cluster lacks.
        """
        if within_s <= 0:
            raise ValueError(f"a drain's window is over 0 s, not {within_s}")

        def tainted(obj: dict[str, Any]) -> None:
            obj.setdefault("spec", {}).setdefault("taints", []).append(dict(taint))

        self.cluster.update("nodes", "", node, tainted)
        with self._lock:
            self._draining[node] = self.clock.monotonic() + within_s
        self.played.taken_back.append(node)
        self._drain()

    def wait_gone(self, node: str, timeout_s: float = 120.0) -> None:
        """Wait until ``node``'s Pods have ended and the node is deleted.

        Raises:
            TimeoutError: when that takes longer than ``timeout_s``.
        """
        deadline = self.clock.monotonic() + timeout_s
        while self.clock.monotonic() < deadline:
            try:
                self.cluster.get("nodes", "", node)
            except NotFound:
                return
            self.clock.sleep(0.05)
        raise TimeoutError(f"node {node} still had Pods running after {timeout_s:.0f} s")

    def close(self) -> None:
        """Stop playing: every process still running is killed."""
        self._done.set()
        self._thread.join(timeout=30)
        with self._lock:
            left = list(self._running.values())
        for running in left:
            if running.process.poll() is None:
                running.process.kill()
            running.process.wait()

    # the play

    def _run(self) -> None:
        try:
            while not self._done.is_set():
                self._start_bound()
                self._drain()
                self._reap()
                self._end_reclaimed()
                self.clock.sleep(0.05)
        except BaseException as exc:  # surfaced by the caller, not lost in the thread
            self.errors.append(exc)

    def _start_bound(self) -> None:
        for pod in self.cluster.items("pods", None):
            meta, spec = pod["metadata"], pod["spec"]
            key = (meta["namespace"], meta["name"])
            phase = pod.get("status", {}).get("phase")
            with self._lock:
                ours = spec.get("nodeName") in self._nodes and key not in self._running
            if ours and phase == "Pending" and not meta.get("deletionTimestamp"):
                self._start(pod)
            with self._lock:
                running = self._running.get(key)
            if running and meta.get("deletionTimestamp") and running.stopping_since is None:
                running.grace_s = float(meta.get("deletionGracePeriodSeconds", running.grace_s))
                self._stop(running)

    def _start(self, pod: dict[str, Any]) -> None:
        meta, spec = pod["metadata"], pod["spec"]
        container = spec["containers"][0]
        mounts = self._mounts(pod)
        command = [self._rewrite(a, mounts) for a in (container.get("command") or [])]
        command += [self._rewrite(a, mounts) for a in (container.get("args") or [])]
        if command and command[0] in ("python", "python3"):
            command[0] = sys.executable
        home = self.root / meta["namespace"] / meta["name"]
        home.mkdir(parents=True, exist_ok=True)
        env = {**self.env, "HOME": str(home), "HOSTNAME": meta["name"]}
        for item in container.get("env") or []:
            env[item["name"]] = self._rewrite(self._value(item, pod), mounts)
        log = self.logs / meta["namespace"] / f"{meta['name']}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        workdir = self._rewrite(container.get("workingDir") or str(home), mounts)
        with log.open("ab") as out:
            process = subprocess.Popen(
                command, env=env, cwd=workdir, stdout=out, stderr=subprocess.STDOUT
            )
        grace = float(spec.get("terminationGracePeriodSeconds", 30))
        running = Running(meta["namespace"], meta["name"], spec["nodeName"], process, grace)
        with self._lock:
            self._running[(running.namespace, running.name)] = running
        self.played.started.append(meta["name"])
        started = self.cluster.stamp()

        def run(obj: dict[str, Any]) -> None:
            status = obj.setdefault("status", {})
            status.update(phase="Running", startTime=started, hostIP="127.0.0.1")
            status.setdefault("conditions", []).append(
                condition("Ready", "True", "PodReady", started)
            )
            status["containerStatuses"] = [
                {
                    "name": container["name"],
                    "image": container.get("image", ""),
                    "imageID": "",
                    "ready": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": started}},
                }
            ]

        self.cluster.update("pods", meta["namespace"], meta["name"], run)

    def _mounts(self, pod: dict[str, Any]) -> dict[str, Path]:
        """Each mount path of the Pod's container and the host folder standing in for it."""
        volumes = {v["name"]: v for v in pod["spec"].get("volumes") or []}
        meta = pod["metadata"]
        found: dict[str, Path] = {}
        for mount in pod["spec"]["containers"][0].get("volumeMounts") or []:
            volume = volumes.get(mount["name"], {})
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if claim is not None:
                if claim not in self.claims:
                    raise NotFound(f"the Pod {meta['name']} claims {claim}, which is not played")
                folder = self.claims[claim]
            else:
                folder = self.root / meta["namespace"] / meta["name"] / "volumes" / mount["name"]
            folder.mkdir(parents=True, exist_ok=True)
            found[mount["mountPath"].rstrip("/")] = folder
        return found

    @staticmethod
    def _rewrite(text: str, mounts: Mapping[str, Path]) -> str:
        for path, folder in sorted(mounts.items(), key=lambda m: -len(m[0])):
            if text == path or text.startswith(path + "/"):
                return str(folder) + text[len(path) :]
            if "=" in text:  # --flag=/mount/path
                flag, _, value = text.partition("=")
                if value == path or value.startswith(path + "/"):
                    return f"{flag}={folder}{value[len(path) :]}"
        return text

    def _value(self, item: dict[str, Any], pod: dict[str, Any]) -> str:
        if "value" in item:
            return str(item["value"])
        source = item.get("valueFrom") or {}
        if "secretKeyRef" in source:
            ref = source["secretKeyRef"]
            stored = self.cluster.get("secrets", pod["metadata"]["namespace"], ref["name"])
            return base64.b64decode((stored.get("data") or {})[ref["key"]]).decode()
        field_path = (source.get("fieldRef") or {}).get("fieldPath", "")
        fields = {
            "metadata.name": pod["metadata"]["name"],
            "metadata.namespace": pod["metadata"]["namespace"],
            "metadata.uid": pod["metadata"]["uid"],
            "spec.nodeName": pod["spec"].get("nodeName", ""),
        }
        return fields.get(field_path, "")

    def _disrupt(self, running: Running) -> None:
        running.disrupted = True
        at = self.cluster.stamp()

        def mark(obj: dict[str, Any]) -> None:
            obj.setdefault("status", {}).setdefault("conditions", []).append(
                condition(
                    "DisruptionTarget",
                    "True",
                    "TerminationByKubelet",
                    at,
                    "Pod was terminated in response to imminent node shutdown.",
                )
            )

        self.cluster.update("pods", running.namespace, running.name, mark)
        self.cluster.create(
            "events",
            running.namespace,
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"generateName": f"{running.name}."},
                "involvedObject": {"kind": "Pod", "name": running.name},
                "reason": "PreemptingNode",
                "message": f"node {running.node} is being reclaimed (spot)",
                "type": "Warning",
                "firstTimestamp": at,
            },
        )

    def _drain(self) -> None:
        """One round of each drain: evict the Pods not yet stopping; past its window, kill
        those still running."""
        now = self.clock.monotonic()
        with self._lock:
            draining = dict(self._draining)
            running = list(self._running.values())
        for node, ends in draining.items():
            left = [r for r in running if r.node == node and r.process.poll() is None]
            if now >= ends:
                for gone in left:
                    gone.process.kill()
                    self.played.killed.append(gone.name)
                with self._lock:
                    self._draining.pop(node, None)
                continue
            for victim in left:
                if victim.stopping_since is None and not victim.evicted:
                    self._evict(victim)

    def _evict(self, running: Running) -> None:
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": running.name, "namespace": running.namespace},
        }
        try:
            evict(self.cluster, running.namespace, running.name, body)
        except TooManyRequests:
            self.played.refused[running.name] = self.played.refused.get(running.name, 0) + 1
            return
        except NotFound:
            return
        running.evicted = True  # deleted: the next round stops it with its grace

    def _stop(self, running: Running) -> None:
        if running.stopping_since is None and running.process.poll() is None:
            running.stopping_since = self.clock.monotonic()
            running.process.send_signal(signal.SIGTERM)

    def _reap(self) -> None:
        with self._lock:
            items = list(self._running.items())
        for key, running in items:
            code = running.process.poll()
            if code is None:
                since = running.stopping_since
                if since is not None and self.clock.monotonic() - since > running.grace_s:
                    running.process.kill()
                    self.played.killed.append(running.name)
                continue
            with self._lock:
                del self._running[key]
            self.played.exits[running.name] = code
            self._ended(running, code)

    def _ended(self, running: Running, code: int) -> None:
        at = self.cluster.stamp()
        failed = code != 0 or running.disrupted

        def end(obj: dict[str, Any]) -> None:
            status = obj.setdefault("status", {})
            status["phase"] = "Failed" if failed else "Succeeded"
            if running.disrupted:
                status.update(
                    reason="Terminated",
                    message="Pod was terminated in response to imminent node shutdown.",
                )
            exit_code = code if code >= 0 else 128 - code
            for container in status.get("containerStatuses") or []:
                container["ready"] = False
                container["state"] = {
                    "terminated": {
                        "exitCode": exit_code,
                        "finishedAt": at,
                        "reason": "Error" if failed else "Completed",
                    }
                }

        try:
            pod = self.cluster.update("pods", running.namespace, running.name, end)
        except NotFound:
            return
        if pod["metadata"].get("deletionTimestamp"):
            self.cluster.delete("pods", running.namespace, running.name)

    def _end_reclaimed(self) -> None:
        """Delete each taken-back node once none of its Pods runs."""
        with self._lock:
            busy = {r.node for r in self._running.values()}
            gone = [n for n in self.played.taken_back if n in self._nodes and n not in busy]
            self._nodes.difference_update(gone)
        for node in gone:
            self.cluster.delete("nodes", "", node)

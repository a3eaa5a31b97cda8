"""The Kubernetes launcher: each instance is a one-Pod Job on the platform's spot nodes
(:mod:`.manifests`). A reclaim of its node is the kubelet's SIGTERM to the
Pod (the guard's stop notice: it checkpoints to the claim within the grace); the Job's failure
policy then starts a new Pod without using a retry, which resumes from that checkpoint: the
instance rides the take-back out, and tells the supervisor of it (:meth:`~KubernetesInstance.
ridden_out`), which counts a preemption and its notice. The instance ends when the Job does:
complete (exit 0), or failed (the last Pod's exit code).

The command's output is its Pods' logs, read back through the apiserver, each Pod's in turn:
its JSON event lines become events, every other line goes to the job's log, and a Pod's first
line is said with its node. The take-backs are seen by a watch of the Job's Pods
(:mod:`.pod_watch`), not by the reads: a Pod disrupted and deleted between two reads is counted
too, once. A status or log request that times out, is refused at the socket,
or answers 429/5xx leaves the instance as it was: it never counts as the job failing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.executor.clouds.cloud_launcher import CloudLauncher
from spotwise.executor.clouds.kubernetes.clients import REQUEST_TIMEOUT_S, Gone, Unreachable, call
from spotwise.executor.clouds.kubernetes.manifests import (
    INSTANCE_LABEL,
    job,
    secret,
    secret_name,
)
from spotwise.executor.clouds.kubernetes.pod_watch import WATCH_WINDOW_S, PodWatch
from spotwise.executor.clouds.kubernetes.target import CHECKPOINT_MOUNT, KubernetesTarget
from spotwise.executor.errors import PREEMPTED_EXIT_CODE
from spotwise.executor.launchers.base import Placement, RiddenOut

POLL_EVERY_S = 2.0
"""The least time between two status reads of an instance (a supervisor polls far more often:
each read lists its Pods, reads their logs and its Job)."""
KILLED_EXIT_CODE = 137
"""What a killed instance ends with (128 + SIGKILL, as a container killed without a grace)."""


class KubernetesLauncher(CloudLauncher):
    """Starts job ``job_id``'s instances as Jobs in the target's namespace, through ``api`` (an
    ``ApiClient``), each request given ``timeout_s``, an instance's status read at most every
    ``poll_every_s``, its Pods watched in streams of ``watch_window_s``; ``secrets`` go to a
    Secret of the job
    (made now, deleted by :meth:`close`) and reach the command's environment only.

    Raises:
        ExecutorError: for a secret whose name is no variable's, or one the apiserver refuses.
    """

    name = "kubernetes"

    def __init__(
        self,
        *,
        target: KubernetesTarget,
        api: Any,
        job_id: str,
        secrets: Mapping[str, str] | None = None,
        clock: Clock = SYSTEM_CLOCK,
        timeout_s: float = REQUEST_TIMEOUT_S,
        poll_every_s: float = POLL_EVERY_S,
        watch_window_s: int = WATCH_WINDOW_S,
    ) -> None:
        super().__init__(
            pools=target.zones_or_default, job_id=job_id, prefix=CHECKPOINT_MOUNT, clock=clock
        )
        from kubernetes import client

        self.target, self.timeout_s, self.poll_every_s = target, timeout_s, poll_every_s
        self.watch_window_s = watch_window_s
        # the client's models are typed; the objects written are plain JSON (manifests.py)
        self.core: Any = client.CoreV1Api(api)
        self.batch: Any = client.BatchV1Api(api)
        self._launched = 0
        self.secret_keys = tuple(sorted(secrets or {}))
        if secrets:
            body = secret(job_id, secrets)  # refuses a name before anything is written
            call(
                f"Secret {secret_name(job_id)}",
                lambda: self.core.create_namespaced_secret(
                    target.namespace, body, _request_timeout=timeout_s
                ),
            )

    def launch(
        self,
        placement: Placement,
        command: Sequence[str],
        env: dict[str, str],
        log: Callable[[str], None] | None = None,
    ) -> KubernetesInstance:
        """A new Job running ``command`` with ``env`` in the pool ``placement`` names (a zone;
        ``any``: wherever the scheduler puts it).

        Raises:
            ExecutorError: when the apiserver refuses the Job.
        """
        self.target.require_complete()
        self._launched += 1
        name = f"spotwise-{self.job_id}-{self._launched}"
        target = self.target
        if placement.pool and placement.pool in target.zones:
            target = dataclasses.replace(target, zones=(placement.pool,))
        spot = placement.market == "spot"
        ns = target.namespace
        body = job(target, name, self.job_id, command, env, spot=spot, secrets=self.secret_keys)
        created = call(
            f"Job {name}",
            lambda: self.batch.create_namespaced_job(ns, body, _request_timeout=self.timeout_s),
        )
        since = created.metadata.resource_version if created.metadata else None
        return KubernetesInstance(self, name, placement, log or (lambda _: None), since)

    def close(self) -> None:
        """Delete the job's Secret: its secrets live as long as the launcher."""
        if self.secret_keys:
            name, ns = secret_name(self.job_id), self.target.namespace
            self._quietly(
                lambda: self.core.delete_namespaced_secret(
                    name, ns, _request_timeout=self.timeout_s
                )
            )

    @staticmethod
    def _quietly(request: Callable[[], Any]) -> None:
        """A deletion whose object may be gone already; one the apiserver does not answer
        leaves the object to ``gc kubernetes`` (it carries the job's id)."""
        with contextlib.suppress(Gone, Unreachable):
            call("cleanup", request)


def _grace_s(pod: Any) -> int | None:
    """The SIGTERM window of a Pod: the grace it was deleted with, else its spec's."""
    given = pod.metadata.deletion_grace_period_seconds
    return int(given) if given is not None else pod.spec.termination_grace_period_seconds


def _disruption(pod: Any) -> str | None:
    """The reason of a Pod's ``DisruptionTarget`` condition when it is true, else None."""
    status = pod.status
    for marked in (status.conditions or []) if status else []:
        if marked.type == "DisruptionTarget" and marked.status == "True":
            return str(marked.reason or "DisruptionTarget")
    return None


class KubernetesInstance:
    """One Job of the launcher: its Pods' output read back, its exit code once it has ended."""

    def __init__(
        self,
        launcher: KubernetesLauncher,
        name: str,
        placement: Placement,
        log: Callable[[str], None],
        since: str | None = None,
    ) -> None:
        """``since``: the resourceVersion of the Job's creation, which its Pods are watched
        from (None: they are listed first)."""
        self.launcher, self.name, self.placement = launcher, name, placement
        self.address: str | None = None
        self.events: list[dict[str, Any]] = []
        self.started_hours = launcher.now_hours()
        self.unknown = 0
        """How many status requests got no answer (never a verdict)."""
        self._log = log
        self._code: int | None = None
        self._asked_to_leave = False
        self._killed = False
        self._lines: dict[str, int] = {}
        """Each Pod's log lines already passed on."""
        self._read_to_end: set[str] = set()
        """The ended Pods whose logs were read after they ended."""
        self._next_read = 0.0
        """When (the launcher's clock, monotonic) the apiserver is asked again."""
        self._disrupted: dict[str, RiddenOut | None] = {}
        """Each Pod seen disrupted, until :meth:`ridden_out` tells of it (then None)."""
        self._seen = threading.Lock()
        self.watch = PodWatch(
            launcher.core,
            self._ns,
            f"{INSTANCE_LABEL}={name}",
            since,
            self._saw,
            timeout_s=launcher.timeout_s,
            window_s=launcher.watch_window_s,
        )
        """The watch of its Pods (stopped once it has ended)."""

    @property
    def instance_id(self) -> str:
        """Its Job's name (what ``job_instances`` lists)."""
        return self.name

    @property
    def _ns(self) -> str:
        return self.launcher.target.namespace

    def pods(self) -> list[dict[str, Any]]:
        """The Job's Pods, oldest first, as plain JSON (``name``, ``node``, ``phase``,
        ``exit_code``, ``disrupted``, its ``disruption``'s reason, and the SIGTERM window it
        was given or has, ``grace_s``).

        Raises:
            Unreachable: when the apiserver does not answer.
        """
        found = call(
            f"Pods of {self.name}",
            lambda: self.launcher.core.list_namespaced_pod(
                self._ns,
                label_selector=f"{INSTANCE_LABEL}={self.name}",
                _request_timeout=self.launcher.timeout_s,
            ),
        )
        pods = []
        seen = list(self._lines)

        def age(pod: Any) -> tuple[str, int]:
            # creation times have whole seconds: within one, the order this instance saw them
            name = pod.metadata.name
            return str(pod.metadata.creation_timestamp), seen.index(
                name
            ) if name in seen else 1 << 30

        listed: list[Any] = list(found.items)
        for pod in sorted(listed, key=age):
            status = pod.status
            disruption = _disruption(pod)
            self._saw(pod)
            code = None
            for container in (status.container_statuses or []) if status else []:
                if container.state and container.state.terminated:
                    code = container.state.terminated.exit_code
            pods.append(
                {
                    "name": pod.metadata.name,
                    "node": pod.spec.node_name,
                    "phase": status.phase if status else None,
                    "exit_code": code,
                    "disrupted": disruption is not None,
                    "disruption": disruption,
                    "grace_s": _grace_s(pod),
                }
            )
        return pods

    def pod_logs(self) -> dict[str, str]:
        """Each Pod's whole log, by name: the logs per instance a person reads.

        Raises:
            Unreachable: when the apiserver does not answer.
        """
        return {pod["name"]: self._pod_log(pod["name"]) for pod in self.pods()}

    def _pod_log(self, pod: str) -> str:
        try:
            text = call(
                f"log of Pod {pod}",
                lambda: self.launcher.core.read_namespaced_pod_log(
                    pod, self._ns, _request_timeout=self.launcher.timeout_s
                ),
            )
        except Gone:
            return ""
        return str(text or "")

    def read_output(self) -> list[dict[str, Any]]:
        """Pass on each Pod's new complete lines: JSON events become events, every other line
        goes to the job's log. The Pods as they are now.

        Raises:
            Unreachable: when the apiserver does not answer.
        """
        pods = self.pods()
        for pod in pods:
            name, phase = pod["name"], pod["phase"]
            if phase in (None, "Pending") or name in self._read_to_end:
                continue
            text = self._pod_log(name)
            if phase == "Running":  # only its complete lines: the last may be half written
                text = text[: text.rfind("\n") + 1]
            else:
                self._read_to_end.add(name)  # an ended Pod's log is read once more, no more
            lines = text.splitlines()
            if name not in self._lines:
                self._lines[name] = 0
                self._log(f"Pod {name} runs on node {pod['node']}")
            for line in lines[self._lines[name] :]:
                self._line(line)
            self._lines[name] = max(self._lines[name], len(lines))
        return pods

    def _line(self, line: str) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            event = None
        if isinstance(event, dict):
            event["cloud_hours"] = self.launcher.now_hours()
            self.events.append(event)
        else:
            self._log(line)

    def poll(self) -> int | None:
        """The exit code once the Job has ended (0 complete; else its last Pod's; a Job asked
        to leave and gone: preempted), else None: also when the apiserver does not answer."""
        if self._code is not None:
            return self._code
        now = self.launcher.clock.monotonic()
        if now < self._next_read:
            return None  # asked again too soon: the apiserver is not asked each poll
        self._next_read = now + self.launcher.poll_every_s
        try:
            self.read_output()
            found = call(
                f"Job {self.name}",
                lambda: self.launcher.batch.read_namespaced_job(
                    self.name, self._ns, _request_timeout=self.launcher.timeout_s
                ),
            )
            status = found.status
            ended = {
                c.type for c in (status.conditions if status else None) or [] if c.status == "True"
            }
            if not ended & {"Complete", "Failed"}:
                return None
            pods = self.read_output()  # its last lines, and its Pods as they ended
        except Unreachable:
            self.unknown += 1
            return None
        except Gone:
            return self._gone()
        codes = [p["exit_code"] for p in pods if p["exit_code"] is not None]
        return self._end(0 if "Complete" in ended else codes[-1] if codes else 1)

    def _end(self, code: int) -> int:
        self._code = code
        self.watch.close()
        return code

    def _gone(self) -> int | None:
        """The Job is deleted: once its Pods have stopped, killed when it was killed,
        preempted when it was asked to leave, else failed (someone else deleted it)."""
        try:
            if self.pods():
                return None  # still being stopped
        except Unreachable:
            self.unknown += 1
            return None
        if self._killed:
            return self._end(KILLED_EXIT_CODE)
        if self._asked_to_leave:
            return self._end(PREEMPTED_EXIT_CODE)
        self._log(f"Job {self.name} was deleted by someone else")
        return self._end(1)

    def _saw(self, pod: Any) -> None:
        """Note a Pod (from the watch's thread, or a read) when it is disrupted."""
        reason = _disruption(pod)
        if reason is None:
            return
        name = pod.metadata.name
        with self._seen:
            if name not in self._disrupted:
                taken = RiddenOut(worker=name, reason=reason, noticed=bool(_grace_s(pod)))
                self._disrupted[name] = taken

    def ridden_out(self) -> list[RiddenOut]:
        """The Pods seen disrupted (``DisruptionTarget``: a reclaim, a preemption, an eviction)
        since the last call, each once: the Job rode each out with a new Pod. Its notice was
        its SIGTERM, when its grace was over 0 s. The watch sees a Pod that is disrupted and
        deleted between two reads too (an eviction deletes it once it has ended)."""
        with self._seen:
            told = [taken for taken in self._disrupted.values() if taken is not None]
            self._disrupted = dict.fromkeys(self._disrupted)
        return told

    def waiting(self, running_s: float) -> str | None:
        """What the supervisor waits for while no Pod has sent output (None: one has)."""
        if self._lines or self._code is not None:
            return None
        return (
            f"Job {self.name} has no running Pod after {running_s:.0f} s (a spot node may be "
            f"coming up); `kubectl -n {self._ns} describe job {self.name}` says why"
        )

    def notice(self) -> None:
        """Ask it to leave: the Job is deleted, its Pod gets SIGTERM and checkpoints within
        its grace; once gone, it was preempted."""
        self._asked_to_leave = True
        self._delete(grace=None)

    def kill(self) -> None:
        """End it now: the Job deleted, its Pod killed without a grace."""
        self._killed = True
        self._delete(grace=0)

    def process_group(self) -> None:
        """It runs on a node of the cluster."""
        return None

    def quiet_s(self) -> None:
        """Not known from here: the step heartbeat stays in the Pod."""
        return None

    def terminate(self) -> None:
        """Release its objects: the Job and its Pods; stop watching them."""
        self.watch.close()
        self._delete(grace=None)

    def _delete(self, *, grace: int | None) -> None:
        from kubernetes import client

        options = client.V1DeleteOptions(
            propagation_policy="Background", grace_period_seconds=grace
        )
        self.launcher._quietly(
            lambda: self.launcher.batch.delete_namespaced_job(
                self.name, self._ns, body=options, _request_timeout=self.launcher.timeout_s
            )
        )

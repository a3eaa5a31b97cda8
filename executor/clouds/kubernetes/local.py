"""Kubernetes on this machine, for ``spotwise try kubernetes`` and the tests: the loopback fake
kube-apiserver with its scheduler and Job controller, and the node player running each Pod's
command as a process here (:class:`~executor.clouds.kubernetes.fake.local_cluster.LocalCluster`),
with GKE Spot nodes that come and go as a node pool's do.

There is no image and no container here: a Pod's ``python`` is this machine's Python, with the
Spotwise installed here, standing in for the image's (which carries the code and
``spotwise[instance]`` on a real cluster). The claim is a host folder, which the node player
mounts where the Pod mounts the claim. The official client comes with
``spotwise[kubernetes]``, kubernetes-validate (the fake's schemas) with ``spotwise[try]``; each
is looked for only here, when a local cluster is started."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Self

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.executor.clouds.kubernetes.platforms import PLATFORMS
from spotwise.executor.clouds.kubernetes.target import CHECKPOINT_MOUNT
from spotwise.executor.errors import ExecutorError
from spotwise.executor.local_clouds.base import PlayedCloud, only_local, require

if TYPE_CHECKING:
    from spotwise.executor.clouds.kubernetes.fake.local_cluster import LocalCluster

EXTRAS = "pip install 'spotwise[kubernetes,try]' (in a checkout: make dev)"
ELSEWHERE_PREFIXES = ("KUBERNETES_",)
"""The in-cluster service variables (``KUBERNETES_SERVICE_HOST``: a Pod's own apiserver)."""
ELSEWHERE = {"KUBECONFIG", "SPOTWISE_OPERATIONAL_STORE"}
"""The user's kubeconfig (the local cluster's is set instead), and what could point a try at
its user's own ledger."""
PLATFORM = "gke"
CLAIM = "checkpoints"
IMAGE = "spotwise.local/try:1"
"""The image ``run`` names: none is pulled, the node player runs this machine's Python."""
PRICES = ("--spot-price", "1.15", "--on-demand-price", "3.67")
"""About an a2-highgpu-1g's (one A100) GKE prices in USD/h: what the ledger prices the played
hours at."""
GUARD_STARTS = ("fresh", "resumed")
"""The guard's first event in a Pod's log: it started, fresh or resumed from a checkpoint."""


def guard_start(log: Path) -> dict[str, object] | None:
    """The guard's first event in the Pod log ``log`` (None: it has not started)."""
    text = log.read_text(errors="replace") if log.is_file() else ""
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("event") in GUARD_STARTS:
            return event
    return None


def require_local_kubernetes() -> None:
    """The official client and kubernetes-validate, or one line naming how to install them.

    Raises:
        ExecutorError: when one is missing (how to install it).
    """

    def client() -> None:
        import importlib.util

        if importlib.util.find_spec("kubernetes") is None:
            raise ExecutorError("no kubernetes client")

    require(
        client,
        "The Kubernetes client",
        {"kubernetes_validate": "checks each object the fake apiserver takes"},
        EXTRAS,
    )


class Reclaimer:
    """Takes back the spot node of the first Pod ``notice_after_s`` after its guard started
    (its first event in the Pod's log), then brings a new spot node up, as a node pool scales
    back; on a thread, until :meth:`close`."""

    def __init__(
        self, local: LocalCluster, notice_after_s: float, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.local, self.notice_after_s, self.clock = local, notice_after_s, clock
        self.errors: list[BaseException] = []
        self.said: list[str] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _first_pod(self) -> tuple[str, str] | None:
        """The first Pod whose guard has started, and its node."""
        from spotwise.executor.clouds.kubernetes.fake.local_cluster import NAMESPACE

        for pod in self.local.cluster.items("pods", NAMESPACE):
            name, node = pod["metadata"]["name"], pod["spec"].get("nodeName")
            log = self.local.folder / "logs" / NAMESPACE / f"{name}.log"
            if node and guard_start(log) is not None:
                return name, node
        return None

    def _run(self) -> None:
        from spotwise.executor.clouds.kubernetes.fake.local_cluster import spot_node

        try:
            while (first := self._first_pod()) is None:
                if self._done.wait(0.1):
                    return
            if self._done.wait(self.notice_after_s):
                return
            pod, node = first
            began = self.clock.monotonic()
            self.local.player.take_back(node)
            self.local.player.wait_gone(node, timeout_s=150)
            took = self.clock.monotonic() - began
            self.said.append(
                f"node {node} taken back under Pod {pod} (tainted, DisruptionTarget, SIGTERM): "
                f"its Pod ended {took:.1f} s later (the grace: {PLATFORMS[PLATFORM].grace_s} s)"
            )
            labels, taints = spot_node(PLATFORM)
            self.local.player.add_node("spot-2", labels=labels, taints=taints, gpus=1)
            self.said.append("a new spot node, spot-2, came up")
        except BaseException as exc:  # said by stop_instances, not lost in the thread
            self.errors.append(exc)

    def close(self) -> None:
        self._done.set()
        self._thread.join(timeout=160)


class LocalKubernetes(PlayedCloud):
    """A Kubernetes cluster played on this machine while the ``with`` block runs (a
    :class:`~executor.local_clouds.base.LocalCloud`): GKE Spot nodes, a namespace, a claim;
    the Pods' folders and logs under ``folder``."""

    bucket = CLAIM
    bucket_url = CHECKPOINT_MOUNT
    instance = "a Pod of the local cluster"

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.local: LocalCluster | None = None
        self._reclaimer: Reclaimer | None = None

    def __enter__(self) -> Self:
        require_local_kubernetes()
        from spotwise.executor.clouds.kubernetes.fake.apiserver import MissingSchemas
        from spotwise.executor.clouds.kubernetes.fake.local_cluster import (
            LocalCluster,
            spot_node,
        )

        try:
            local = LocalCluster(self.folder / "cluster", claims=(CLAIM,))
        except MissingSchemas as exc:
            raise ExecutorError(f"the local cluster did not start: {exc}") from None
        self.local = local
        self._stack.callback(local.close)
        labels, taints = spot_node(PLATFORM)
        local.player.add_node("spot-1", labels=labels, taints=taints, gpus=1)
        self._stack.enter_context(
            only_local(
                {"KUBECONFIG": str(local.kubeconfig)},
                drop=lambda name: name.startswith(ELSEWHERE_PREFIXES) or name in ELSEWHERE,
            )
        )
        return self

    def _cluster(self) -> LocalCluster:
        if self.local is None:
            raise ExecutorError("the local cluster is not started (use it in a with block)")
        return self.local

    @property
    def where(self) -> tuple[str, ...]:
        """``--project CONTEXT/NAMESPACE`` and ``--region``: the local cluster's, through the
        kubeconfig it wrote (``KUBECONFIG`` while the block runs)."""
        from spotwise.executor.clouds.kubernetes.fake.local_cluster import CONTEXT, NAMESPACE

        return ("--project", f"{CONTEXT}/{NAMESPACE}", "--region", PLATFORM)

    @property
    def banner(self) -> str:
        """What plays the cluster, and that nothing reaches a real one or is billed."""
        local = self._cluster()
        return (
            f"Kubernetes is a loopback fake kube-apiserver on {local.server.url} (this machine; "
            f"each object checked against Kubernetes' published schemas), its scheduler and Job "
            f"controller, and GKE Spot nodes played here: each Pod is a process of this "
            f"machine, running this machine's Python and Spotwise in place of the image "
            f"{IMAGE}, the claim {CLAIM} a folder ({local.claims[CLAIM]}); your KUBECONFIG is "
            "set aside: no cluster is reached and nothing is billed (the $ are these hours at "
            "an A100 node's prices: simulated)"
        )

    def start_instances(self, notice_after_s: float) -> tuple[str, ...]:
        """Take back the node of the first Pod ``notice_after_s`` after its guard starts, then
        bring a new spot node up. ``run``'s flags for the image, the claim, a GPU and the
        prices."""
        self._reclaimer = Reclaimer(self._cluster(), notice_after_s)
        return (
            *("--image", IMAGE, "--bucket", CLAIM, "--instance-type", "+1gpu"),
            *PRICES,
        )

    def stop_instances(self) -> str:
        """Stop the reclaimer: what was played (Pods, nodes, exits, where each resumed from).

        Raises:
            ExecutorError: when the take-back could not be played.
        """
        reclaimer = self._reclaimer
        if reclaimer is None:
            return "nothing was played"
        reclaimer.close()
        local = self._cluster()
        if reclaimer.errors or local.player.errors:
            error = (reclaimer.errors or local.player.errors)[0]
            raise ExecutorError(
                f"{self.instance} could not be played (its folders: {self.folder}): {error!r}"
            )
        played = local.player.played
        lines = [f"played {len(played.started)} Pod(s) on spot nodes: {', '.join(played.started)}"]
        lines += reclaimer.said
        for pod in played.started:
            code = played.exits.get(pod)
            lines.append(f"Pod {pod}: {self._resumed(pod)}, exit {code}")
        if played.killed:
            lines.append(f"SIGKILLed at the end of their grace: {', '.join(played.killed)}")
        return "\n".join(lines)

    def _resumed(self, pod: str) -> str:
        """Where the guard in ``pod`` started from, as its first event says."""
        from spotwise.executor.clouds.kubernetes.fake.local_cluster import NAMESPACE

        event = guard_start(self._cluster().folder / "logs" / NAMESPACE / f"{pod}.log")
        if event is None:
            return "no guard started"
        if event["event"] == "fresh":
            return "started fresh"
        return f"resumed at step {event.get('step')}"

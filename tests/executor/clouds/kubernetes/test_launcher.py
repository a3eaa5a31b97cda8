"""The Kubernetes launcher on the local cluster, through the official client: a Job per
instance (no autoscaler takes it down, no budget holds back a drain), the Pods' output read back
(events, log lines per Pod), a reclaim the Job rides out on a new Pod without using a retry, a
real failure failing at once, a notice ending it preempted, and a status request that times out
never counting as the job failing."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kubernetes_validate")

from spotwise.core.clock import SYSTEM_CLOCK
from spotwise.executor.clouds.base import CloudOptions
from spotwise.executor.clouds.kubernetes.clients import api_client
from spotwise.executor.clouds.kubernetes.fake.local_cluster import (
    CCE_POOL,
    CONTEXT,
    NAMESPACE,
    LocalCluster,
    spot_node,
)
from spotwise.executor.clouds.kubernetes.launcher import (
    KubernetesInstance,
    KubernetesLauncher,
)
from spotwise.executor.clouds.kubernetes.platforms import PLATFORMS
from spotwise.executor.clouds.kubernetes.target import KubernetesTarget
from spotwise.executor.errors import ExecutorError
from spotwise.executor.launchers.base import Placement, RiddenOut
from tests.fakes.slow_proxy import SlowProxy

SPOT = {"cloud.google.com/gke-spot": "true"}
SPOT_PLACE = Placement(market="spot", pool="any", price=1.0)

# resumes from its claim: the first run waits for SIGTERM and saves, the next one finishes
RESUMING = textwrap.dedent(
    """
    import json, os, signal, sys, time
    state = os.path.join(sys.argv[1], "state")
    if os.path.exists(state):
        print(json.dumps({"event": "resumed", "step": int(open(state).read())}), flush=True)
        print("finished", flush=True)
        sys.exit(0)
    def stop(*_):
        os.makedirs(os.path.dirname(state), exist_ok=True)
        open(state, "w").write("7")
        time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0)  # the save's time
        sys.exit(75)
    signal.signal(signal.SIGTERM, stop)
    print(json.dumps({"event": "fresh"}), flush=True)
    print("training", flush=True)
    while True:
        time.sleep(0.05)
    """
)

RESUME = ["python", "-c", RESUMING, "/spotwise/checkpoints/run"]
"""The player puts the claim's host folder where the mount path starts an argument."""
TELL_WINDOW = [
    "python",
    "-c",
    "from spotwise.core.settings import current; print('notice window', current().notice_s)",
]
"""Says the SIGTERM window the guard reads in the Pod."""
SLOW_RESUME = [*RESUME, "1.0"]
"""One whose save on SIGTERM takes a second (a deleted Pod is gone once it has ended)."""


@pytest.fixture
def local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path / "cluster")
    monkeypatch.setenv("KUBECONFIG", str(cluster.kubeconfig))
    cluster.player.add_node("spot-a", labels=SPOT, gpus=1)
    yield cluster
    cluster.close()
    assert not cluster.player.errors


def target(region: str = "gke", **more: Any) -> KubernetesTarget:
    options = CloudOptions(
        project=f"{CONTEXT}/{NAMESPACE}",
        region=region,
        image="python:3.11",
        bucket="checkpoints",
        instance_type="+1gpu",
        **more,
    )
    return KubernetesTarget.from_options(options)


def launcher(
    chosen: KubernetesTarget, timeout_s: float = 10.0, poll_every_s: float = 0.2
) -> KubernetesLauncher:
    api = api_client(chosen, "test")
    return KubernetesLauncher(
        target=chosen,
        api=api,
        job_id="abc123def456",
        timeout_s=timeout_s,
        poll_every_s=poll_every_s,
    )


def until_ended(instance: KubernetesInstance, timeout_s: float = 60.0) -> int:
    deadline = SYSTEM_CLOCK.monotonic() + timeout_s
    while SYSTEM_CLOCK.monotonic() < deadline:
        code = instance.poll()
        if code is not None:
            return code
        SYSTEM_CLOCK.sleep(0.1)
    raise AssertionError(f"{instance.name} did not end within {timeout_s} s")


def until(check: Callable[[], Any], timeout_s: float = 30.0) -> Any:
    deadline = SYSTEM_CLOCK.monotonic() + timeout_s
    while SYSTEM_CLOCK.monotonic() < deadline:
        if found := check():
            return found
        SYSTEM_CLOCK.sleep(0.1)
    raise AssertionError(f"not true within {timeout_s} s")


def test_an_instance_is_a_job_labelled_with_its_id_no_autoscaler_takes_down(
    local: LocalCluster,
) -> None:
    lines: list[str] = []
    instance = launcher(target()).launch(
        SPOT_PLACE, ["python", "-c", "print('hello')"], {"A": "1"}, lines.append
    )
    assert until_ended(instance) == 0
    job = local.cluster.get("jobs", NAMESPACE, instance.name)
    assert job["metadata"]["labels"]["spotwise.dev/job"] == "abc123def456"
    annotations = job["spec"]["template"]["metadata"]["annotations"]
    assert annotations["karpenter.sh/do-not-disrupt"] == "true"
    assert annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"] == "false"
    # no disruption budget: on EKS a spot reclaim is a drain, which one would hold back
    assert not local.cluster.items("poddisruptionbudgets", NAMESPACE)
    assert lines[-1] == "hello"
    assert lines[0].startswith(f"Pod {instance.name}-") and lines[0].endswith("node spot-a")
    instance.terminate()
    assert not local.cluster.items("jobs", NAMESPACE)


def test_a_reclaim_is_ridden_out_by_a_new_pod_that_resumes(local: LocalCluster) -> None:
    lines: list[str] = []
    instance = launcher(target()).launch(SPOT_PLACE, RESUME, {}, lines.append)
    until(lambda: (instance.poll(), "training" in lines)[1])
    local.player.take_back("spot-a")
    local.player.add_node("spot-b", labels=SPOT, gpus=1)
    assert until_ended(instance) == 0
    assert [e["event"] for e in instance.events] == ["fresh", "resumed"]
    assert instance.events[1]["step"] == 7
    pods = instance.pods()
    assert [(p["node"], p["disrupted"], p["exit_code"]) for p in pods] == [
        ("spot-a", True, 75),
        ("spot-b", False, 0),
    ]
    logs = instance.pod_logs()
    assert list(logs.values()) == [
        '{"event": "fresh"}\ntraining\n',
        '{"event": "resumed", "step": 7}\nfinished\n',
    ]
    assert local.cluster.get("jobs", NAMESPACE, instance.name)["status"].get("failed", 0) == 0
    taken = RiddenOut(worker=pods[0]["name"], reason="TerminationByKubelet", noticed=True)
    assert instance.ridden_out() == [taken]
    assert instance.ridden_out() == []  # told once


def test_a_no_execute_reclaim_taint_evicts_the_pod_with_its_grace_and_it_is_ridden_out(
    local: LocalCluster,
) -> None:
    """CCE's reclaim notice is a NoExecute taint: the taint manager marks the Pod
    ``DisruptionTarget`` (``DeletionByTaintManager``) and deletes it with its grace."""
    lines: list[str] = []
    instance = launcher(target()).launch(SPOT_PLACE, SLOW_RESUME, {}, lines.append)
    until(lambda: (instance.poll(), "training" in lines)[1])
    (first,) = instance.pods()
    reclaim = {"key": "node-problem-controller.cce.io/SpotPriceNodeReclaimNotification"}
    local.player.take_back("spot-a", {**reclaim, "effect": "NoExecute"})
    local.player.add_node("spot-b", labels=SPOT, gpus=1)
    assert until_ended(instance) == 0
    assert [e["event"] for e in instance.events] == ["fresh", "resumed"]
    assert local.player.played.exits[first["name"]] == 75  # it checkpointed in its grace
    taken = RiddenOut(worker=first["name"], reason="DeletionByTaintManager", noticed=True)
    assert instance.ridden_out() == [taken]
    events = local.cluster.items("events", NAMESPACE)
    assert [e["reason"] for e in events] == ["TaintManagerEviction"]


def pod_of(local: LocalCluster, instance: KubernetesInstance, phase: str) -> str | None:
    for pod in local.cluster.items("pods", NAMESPACE, f"spotwise.dev/instance={instance.name}"):
        if pod.get("status", {}).get("phase") == phase:
            return str(pod["metadata"]["name"])
    return None


def names(local: LocalCluster) -> list[str]:
    return [p["metadata"]["name"] for p in local.cluster.items("pods", NAMESPACE)]


def training(local: LocalCluster, instance: KubernetesInstance) -> str | None:
    """The Pod whose command says it trains (its SIGTERM handler is set), read from the node
    player's log, not through the launcher."""
    name = pod_of(local, instance, "Running")
    log = local.folder / "logs" / NAMESPACE / f"{name}.log"
    return name if name and log.exists() and "training" in log.read_text() else None


def test_a_take_back_that_ends_and_goes_between_two_reads_is_seen_once(
    local: LocalCluster,
) -> None:
    """The reads (every ``poll_every_s``) never see the Pod: the taint manager deletes it, it
    checkpoints and ends, and it is gone before the next read; the watch saw it."""
    instance = launcher(target()).launch(SPOT_PLACE, RESUME, {}, None)  # not polled yet
    first = until(lambda: training(local, instance))
    reclaim = {"key": "node-problem-controller.cce.io/SpotPriceNodeReclaimNotification"}
    local.player.take_back("spot-a", {**reclaim, "effect": "NoExecute"})
    until(lambda: local.player.played.exits.get(first) == 75)
    # gone before any read; the Job's next Pod waits for a node
    until(lambda: names(local) and first not in names(local))
    assert instance.poll() is None  # the first read: only the new Pod is there
    taken = RiddenOut(worker=first, reason="DeletionByTaintManager", noticed=True)
    assert until(instance.ridden_out, timeout_s=10.0) == [taken]
    local.player.add_node("spot-b", labels=SPOT, gpus=1)
    assert until_ended(instance) == 0
    assert [e["event"] for e in instance.events] == ["resumed"]  # the first Pod's log is gone
    assert instance.ridden_out() == []  # told once
    assert not instance.watch.alive or until(lambda: not instance.watch.alive, 10.0)


def test_a_take_back_after_the_watch_history_is_compacted_is_seen_after_a_relist(
    local: LocalCluster,
) -> None:
    """The watch is reopened every window; one the apiserver cannot resume (410) lists the
    Pods again and watches on from there."""
    chosen = target()
    quick = KubernetesLauncher(
        target=chosen,
        api=api_client(chosen, "test"),
        job_id="abc123def456",
        poll_every_s=3600.0,
        watch_window_s=1,
    )
    instance = quick.launch(SPOT_PLACE, RESUME, {}, None)
    first = until(lambda: training(local, instance))
    local.player.add_node("plain", labels={})  # a change after the last the watch delivered
    local.cluster.compact()  # so its resourceVersion is compacted away
    until(lambda: instance.watch.relisted >= 1, timeout_s=10.0)
    local.player.take_back("spot-a")  # graceful node shutdown: the Pod stays, Failed
    until(lambda: local.player.played.exits.get(first) == 75)
    taken = RiddenOut(worker=first, reason="TerminationByKubelet", noticed=True)
    assert until(instance.ridden_out, timeout_s=10.0) == [taken]
    assert instance.watch.streams >= 2 and instance.watch.failures == 0
    instance.terminate()


def test_an_eks_reclaim_is_a_drain_whose_eviction_the_job_rides_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On EKS, Karpenter drains an interrupted spot node through the Eviction API: the Pod is
    marked ``EvictionByEvictionAPI``, checkpoints in its grace, and the Job resumes."""
    eks = LocalCluster(tmp_path / "eks")
    monkeypatch.setenv("KUBECONFIG", str(eks.kubeconfig))
    try:
        labels, taints = spot_node("eks")
        eks.player.add_node("spot-a", labels=labels, taints=taints, gpus=1)
        chosen = target(region="eks")
        instance = launcher(chosen).launch(SPOT_PLACE, RESUME, {}, None)
        first = until(lambda: training(eks, instance))
        eks.player.drain("spot-a")
        eks.player.add_node("spot-b", labels=labels, taints=taints, gpus=1)
        assert until_ended(instance) == 0
        assert [e["event"] for e in instance.events][-1] == "resumed"
        assert instance.events[-1]["step"] == 7
        assert eks.player.played.exits[first] == 75 and eks.player.played.killed == []
        grace = PLATFORMS["eks"].grace_s
        taken = RiddenOut(worker=first, reason="EvictionByEvictionAPI", noticed=grace > 0)
        assert instance.ridden_out() == [taken]
        assert not eks.player.played.refused  # no budget holds the drain back
    finally:
        eks.close()
    assert not eks.player.errors


def test_a_failing_command_fails_the_job_at_once(local: LocalCluster) -> None:
    instance = launcher(target()).launch(
        SPOT_PLACE, ["python", "-c", "raise SystemExit(3)"], {}, None
    )
    assert until_ended(instance) == 3
    assert len(instance.pods()) == 1


def test_a_notice_stops_the_pod_within_its_grace_and_ends_preempted(local: LocalCluster) -> None:
    lines: list[str] = []
    instance = launcher(target()).launch(SPOT_PLACE, RESUME, {}, lines.append)
    until(lambda: (instance.poll(), "training" in lines)[1])
    instance.notice()
    assert until_ended(instance) == 75
    assert (local.claims["checkpoints"] / "checkpoints" / "run" / "state").read_text() == "7"
    assert instance.ridden_out() == []  # asked to leave: no take-back


def test_a_status_request_that_times_out_is_unknown_never_a_failure(
    local: LocalCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = SlowProxy(
        local.server.url,
        lambda request: "job" if "/jobs/" in request.path and request.method == "GET" else None,
        delay_s=2.0,
    )
    try:
        slow = launcher(target(endpoint_url=proxy.url), timeout_s=0.5, poll_every_s=0.0)
        instance = slow.launch(SPOT_PLACE, ["python", "-c", "print('done')"], {}, None)
        until(lambda: local.player.played.exits)  # the command has ended, successfully
        assert [instance.poll() for _ in range(3)] == [None, None, None]
        assert instance.unknown == 3
    finally:
        proxy.close()
    instance.launcher.timeout_s = 10.0
    instance.launcher.core.api_client.configuration.host = local.server.url
    instance.launcher.batch.api_client.configuration.host = local.server.url
    assert until_ended(instance) == 0


def test_an_on_demand_placement_leaves_out_the_spot_selector(local: LocalCluster) -> None:
    local.player.add_node("plain", labels={})
    instance = launcher(target()).launch(
        Placement(market="on-demand", pool=None, price=3.0), ["python", "-c", "pass"], {}, None
    )
    assert until_ended(instance) == 0
    assert instance.pods()[0]["node"] == "plain"


@pytest.mark.parametrize("platform", ["gke", "eks", "aks", "cce"])
def test_each_platforms_pod_lands_on_its_spot_node_and_nowhere_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, platform: str
) -> None:
    cluster = LocalCluster(tmp_path / platform)
    monkeypatch.setenv("KUBECONFIG", str(cluster.kubeconfig))
    try:
        cluster.player.add_node("plain", labels={}, gpus=1)  # on demand: not to be used
        labels, taints = spot_node(platform)
        cluster.player.add_node("spot", labels=labels, taints=taints, gpus=1)
        chosen = KubernetesTarget.from_options(
            CloudOptions(
                project=f"{CONTEXT}/{NAMESPACE}",
                region=platform,
                image="python:3.11",
                bucket="checkpoints",
                instance_type="+1gpu",
                zones=(CCE_POOL,) if platform == "cce" else (),
            )
        )
        lines: list[str] = []
        instance = launcher(chosen).launch(SPOT_PLACE, TELL_WINDOW, {}, lines.append)
        assert until_ended(instance) == 0
        assert [p["node"] for p in instance.pods()] == ["spot"]
        # the guard in the Pod reads the grace the Pod has: the platform's window
        (pod,) = cluster.cluster.items("pods", NAMESPACE)
        grace = pod["spec"]["terminationGracePeriodSeconds"]
        assert grace == PLATFORMS[platform].grace_s
        assert lines[-1] == f"notice window {float(grace)}"
    finally:
        cluster.close()


def test_a_jobs_secrets_reach_the_command_from_a_secret_that_lives_as_long_as_the_launcher(
    local: LocalCluster,
) -> None:
    chosen = target()
    api = api_client(chosen, "test")
    with_secret = KubernetesLauncher(
        target=chosen, api=api, job_id="abc123def456", secrets={"HF_TOKEN": "s3cret"}
    )
    lines: list[str] = []
    show = "import os; print(os.environ['HF_TOKEN'][::-1])"
    instance = with_secret.launch(SPOT_PLACE, ["python", "-c", show], {}, lines.append)
    assert until_ended(instance) == 0
    assert lines[-1] == "terc3s"  # the value, reversed: no log shows it
    manifest = json.dumps(local.cluster.get("jobs", NAMESPACE, instance.name))
    assert "s3cret" not in manifest and "secretKeyRef" in manifest
    assert [s["metadata"]["name"] for s in local.cluster.items("secrets", NAMESPACE)] == [
        "spotwise-abc123def456"
    ]
    with_secret.close()
    assert local.cluster.items("secrets", NAMESPACE) == []
    with pytest.raises(ExecutorError, match="not an environment variable"):
        KubernetesLauncher(target=chosen, api=api, job_id="x", secrets={"not a name!": "x"})
    assert local.cluster.items("secrets", NAMESPACE) == []


def test_a_poll_soon_after_the_last_asks_the_apiserver_nothing(local: LocalCluster) -> None:
    patient = launcher(target(), poll_every_s=60.0)
    waits = ["python", "-c", "import time; time.sleep(60)"]
    instance = patient.launch(SPOT_PLACE, waits, {}, None)
    assert instance.poll() is None  # the first read: its Pod runs (or is about to)
    asked = len(local.server.requests)
    assert [instance.poll() for _ in range(5)] == [None] * 5
    assert len(local.server.requests) == asked


def test_a_request_rbac_forbids_fails_in_one_line_naming_the_role(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = LocalCluster(tmp_path / "c", denied=frozenset({("create", "jobs")}))
    monkeypatch.setenv("KUBECONFIG", str(cluster.kubeconfig))
    try:
        with pytest.raises(ExecutorError, match="forbidden by the cluster's RBAC; grant the Role"):
            launcher(target()).launch(SPOT_PLACE, ["python", "-c", "pass"], {}, None)
        assert cluster.cluster.items("jobs", NAMESPACE) == []
    finally:
        cluster.close()

"""The node player: a Pod's command run as a process with its env and its claim's folder, its
output the Pod's log, and a take-back as a spot reclaim does it (taint, DisruptionTarget,
SIGTERM, SIGKILL after the grace), with the Job controller's podFailurePolicy deciding what a
disrupted Pod costs."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kubernetes_validate")

from spotwise.core.clock import SYSTEM_CLOCK
from spotwise.executor.clouds.kubernetes.fake.apiserver import FakeApiServer
from spotwise.executor.clouds.kubernetes.fake.cluster import Cluster
from spotwise.executor.clouds.kubernetes.fake.node_player import NodePlayer

SPOT = {"cloud.google.com/gke-spot": "true"}

# traps SIGTERM: writes where it got to in its claim, then exits 75 (the guard's preempted code)
TRAPPING = textwrap.dedent(
    """
    import os, signal, sys, time
    out = os.path.join(os.environ["CKPT"], os.environ["POD"])
    def stop(*_):
        open(out, "w").write("saved on SIGTERM")
        sys.exit(75)
    signal.signal(signal.SIGTERM, stop)
    print("running on", os.environ["NODE"], flush=True)
    while True:
        time.sleep(0.05)
    """
)
DEAF = textwrap.dedent(
    """
    import signal, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print("deaf", flush=True)
    time.sleep(600)
    """
)


@pytest.fixture
def played(tmp_path: Path) -> Iterator[tuple[FakeApiServer, NodePlayer]]:
    cluster = Cluster()
    server = FakeApiServer(cluster, logs=tmp_path / "logs")
    player = NodePlayer(
        cluster, tmp_path / "nodes", logs=tmp_path / "logs", claims={"ckpt": tmp_path / "pvc"}
    )
    yield server, player
    player.close()
    server.close()
    assert not player.errors


def until(check: Callable[[], Any], timeout_s: float = 30.0) -> Any:
    deadline = SYSTEM_CLOCK.monotonic() + timeout_s
    while SYSTEM_CLOCK.monotonic() < deadline:
        if found := check():
            return found
        SYSTEM_CLOCK.sleep(0.05)
    raise AssertionError(f"not true within {timeout_s} s: {check}")


def spec(script: str, grace: int = 5) -> dict[str, Any]:
    return {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": grace,
        "nodeSelector": SPOT,
        "containers": [
            {
                "name": "train",
                "image": "python:3.11",
                "command": ["python", "-c", script],
                "env": [
                    {"name": "CKPT", "value": "/ckpt/run"},
                    {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                ],
                "volumeMounts": [{"name": "ckpt", "mountPath": "/ckpt"}],
            }
        ],
        "volumes": [{"name": "ckpt", "persistentVolumeClaim": {"claimName": "ckpt"}}],
    }


def make_pod(cluster: Cluster, name: str, script: str, grace: int = 5) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": spec(script, grace),
    }
    cluster.create("pods", "train", body)


def logged(folder: Path, pod: str) -> str:
    log = folder / "logs" / "train" / f"{pod}.log"
    return log.read_text() if log.exists() else ""


def phase(cluster: Cluster, name: str) -> str | None:
    return cluster.get("pods", "train", name).get("status", {}).get("phase")


def test_a_bound_pod_runs_with_its_env_and_its_output_is_its_log(
    played: tuple[FakeApiServer, NodePlayer], tmp_path: Path
) -> None:
    server, player = played
    player.add_node("spot-a", labels=SPOT, gpus=1)
    make_pod(server.cluster, "p1", "import os; print(os.environ['NODE'], os.environ['CKPT'])")
    until(lambda: phase(server.cluster, "p1") == "Succeeded")
    log = (tmp_path / "logs" / "train" / "p1.log").read_text()
    assert log == f"spot-a {tmp_path / 'pvc'}/run\n"
    node = server.cluster.get("nodes", "", "spot-a")
    assert node["status"]["capacity"]["nvidia.com/gpu"] == "1"


def test_a_take_back_disrupts_sigterms_and_deletes_the_node(
    played: tuple[FakeApiServer, NodePlayer], tmp_path: Path
) -> None:
    server, player = played
    (tmp_path / "pvc" / "run").mkdir(parents=True)
    player.add_node("spot-a", labels=SPOT)
    make_pod(server.cluster, "p1", TRAPPING)
    until(lambda: "running on" in logged(tmp_path, "p1"))
    player.take_back("spot-a")
    player.wait_gone("spot-a", timeout_s=20)
    pod = server.cluster.get("pods", "train", "p1")
    assert pod["status"]["phase"] == "Failed"
    disruption = [c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert disruption[0]["reason"] == "TerminationByKubelet"
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 75
    assert (tmp_path / "pvc" / "run" / "p1").read_text() == "saved on SIGTERM"
    assert player.played.killed == []
    assert [e["reason"] for e in server.cluster.items("events", "train")] == ["PreemptingNode"]


def test_a_process_deaf_to_sigterm_is_killed_after_its_grace(
    played: tuple[FakeApiServer, NodePlayer], tmp_path: Path
) -> None:
    server, player = played
    player.add_node("spot-a", labels=SPOT)
    make_pod(server.cluster, "deaf", DEAF, grace=1)
    until(lambda: "deaf" in logged(tmp_path, "deaf"))
    began = SYSTEM_CLOCK.monotonic()
    player.take_back("spot-a")
    player.wait_gone("spot-a", timeout_s=20)
    assert 1.0 <= SYSTEM_CLOCK.monotonic() - began < 10
    assert player.played.killed == ["deaf"]
    assert player.played.exits["deaf"] == -9


def test_a_pod_deleted_through_the_api_is_stopped_then_removed(
    played: tuple[FakeApiServer, NodePlayer], tmp_path: Path
) -> None:
    server, player = played
    (tmp_path / "pvc" / "run").mkdir(parents=True)
    player.add_node("spot-a", labels=SPOT)
    make_pod(server.cluster, "p1", TRAPPING)
    until(lambda: "running on" in logged(tmp_path, "p1"))
    assert server.end_pod("train", "p1")["metadata"]["deletionTimestamp"]
    until(lambda: not server.cluster.items("pods", "train"))
    assert player.played.exits["p1"] == 75


def job(policy: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train-j1"},
        "spec": {"backoffLimit": 0, "template": {"spec": spec(TRAPPING)}},
    }
    if policy:
        body["spec"]["podFailurePolicy"] = {
            "rules": [
                {
                    "action": "Ignore",
                    "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                }
            ]
        }
    return body


@pytest.mark.parametrize("policy", [True, False], ids=["ignore-disruption", "no-policy"])
def test_a_disrupted_pod_of_a_job_costs_a_retry_only_without_the_policy(
    played: tuple[FakeApiServer, NodePlayer], tmp_path: Path, policy: bool
) -> None:
    server, player = played
    (tmp_path / "pvc" / "run").mkdir(parents=True)
    player.add_node("spot-a", labels=SPOT)
    server.cluster.create("jobs", "train", job(policy))
    until(lambda: player.played.started)
    until(lambda: "running on" in logged(tmp_path, player.played.started[0]))
    player.take_back("spot-a")
    player.wait_gone("spot-a", timeout_s=20)
    player.add_node("spot-b", labels=SPOT)
    status = server.cluster.get("jobs", "train", "train-j1")["status"]
    if policy:
        second = until(lambda: player.played.started[1:])[0]
        until(lambda: "running on spot-b" in logged(tmp_path, second))
        assert status.get("failed", 0) == 0
        assert server.cluster.get("pods", "train", second)["spec"]["nodeName"] == "spot-b"
    else:
        assert status["failed"] == 1
        assert status["conditions"][0]["reason"] == "BackoffLimitExceeded"
        assert len(player.played.started) == 1


def test_a_drain_evicts_through_the_eviction_api_and_the_pod_saves_in_its_grace(
    played: tuple[FakeApiServer, NodePlayer], tmp_path: Path
) -> None:
    server, player = played
    (tmp_path / "pvc" / "run").mkdir(parents=True)
    player.add_node("spot-a", labels=SPOT)
    make_pod(server.cluster, "p1", TRAPPING)
    until(lambda: "running on" in logged(tmp_path, "p1"))
    player.drain("spot-a")
    taints = server.cluster.get("nodes", "", "spot-a")["spec"]["taints"]
    assert {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"} in taints
    marked = until(lambda: [c for c in server.cluster.changes("pods", "train", 0, 0.0)])
    reasons = [
        c["reason"]
        for change in marked
        for c in change.object.get("status", {}).get("conditions") or []
        if c["type"] == "DisruptionTarget"
    ]
    assert set(reasons) == {"EvictionByEvictionAPI"}
    player.wait_gone("spot-a", timeout_s=20)
    assert not server.cluster.items("pods", "train")  # an evicted Pod is deleted once ended
    assert player.played.exits["p1"] == 75 and player.played.killed == []
    assert (tmp_path / "pvc" / "run" / "p1").read_text() == "saved on SIGTERM"


def test_a_budget_holds_back_a_drain_and_the_pod_dies_with_the_instance_unsaved(
    played: tuple[FakeApiServer, NodePlayer], tmp_path: Path
) -> None:
    """Why the launcher writes no PodDisruptionBudget: a reclaim on EKS is a drain, which the
    budget of a one-Pod job refuses until EC2 takes the instance; no SIGTERM ever comes."""
    server, player = played
    (tmp_path / "pvc" / "run").mkdir(parents=True)
    player.add_node("spot-a", labels=SPOT)
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p1", "labels": {"app": "train"}},
        "spec": spec(TRAPPING),
    }
    server.cluster.create("pods", "train", body)
    server.cluster.create(
        "poddisruptionbudgets",
        "train",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "keep-one"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "train"}}},
        },
    )
    until(lambda: "running on" in logged(tmp_path, "p1"))
    player.drain("spot-a", within_s=1.5)
    player.wait_gone("spot-a", timeout_s=20)
    assert player.played.refused["p1"] >= 2  # tried again, refused each time
    assert player.played.killed == ["p1"] and player.played.exits["p1"] == -9
    assert not (tmp_path / "pvc" / "run" / "p1").exists()  # no SIGTERM: nothing saved
    with pytest.raises(ValueError, match="over 0 s"):
        player.drain("spot-a", within_s=0)

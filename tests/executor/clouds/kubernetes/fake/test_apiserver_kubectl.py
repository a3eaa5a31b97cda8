"""``kubectl`` against the local cluster over HTTPS (client-go sends a bearer token over HTTPS
only): discovery, get with a short name, logs, and a delete by label, as a user drives it. The
kubectl on the PATH is used; without one these tests are skipped."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("kubernetes_validate")
pytest.importorskip("cryptography")

from spotwise.core.clock import SYSTEM_CLOCK
from spotwise.executor.clouds.kubernetes.fake.cluster import Cluster
from spotwise.executor.clouds.kubernetes.fake.local_cluster import NAMESPACE, LocalCluster

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="no kubectl on the PATH")


def make_pod(cluster: Cluster, name: str, script: str) -> None:
    """A Pod on the spot node running ``script``, labelled ``a=b``."""
    container = {"name": "c", "image": "python:3.11", "command": ["python", "-c", script]}
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"a": "b"}},
        "spec": {"restartPolicy": "Never", "containers": [container]},
    }
    cluster.create("pods", NAMESPACE, body)


def until_done(cluster: Cluster, name: str) -> None:
    deadline = SYSTEM_CLOCK.monotonic() + 30
    while cluster.get("pods", NAMESPACE, name).get("status", {}).get("phase") != "Succeeded":
        assert SYSTEM_CLOCK.monotonic() < deadline, cluster.get("pods", NAMESPACE, name)
        SYSTEM_CLOCK.sleep(0.05)


@pytest.fixture
def local(tmp_path: Path) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path / "cluster", tls=True)
    cluster.player.add_node("spot-a", labels={"cloud.google.com/gke-spot": "true"})
    yield cluster
    cluster.close()


def kubectl(local: LocalCluster, *args: str) -> str:
    ran = subprocess.run(
        [str(KUBECTL), "--kubeconfig", str(local.kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def test_kubectl_reads_nodes_pods_and_logs_over_https(local: LocalCluster) -> None:
    assert local.server.url.startswith("https://127.0.0.1:")
    assert kubectl(local, "get", "nodes", "-o", "name") == "node/spot-a\n"
    make_pod(local.cluster, "p1", "print('hello from the fake')")
    until_done(local.cluster, "p1")
    pods = json.loads(kubectl(local, "get", "po", "-o", "json"))
    assert [p["spec"]["nodeName"] for p in pods["items"]] == ["spot-a"]
    assert kubectl(local, "logs", "p1") == "hello from the fake\n"
    assert kubectl(local, "get", "pdb", "-o", "name") == ""


def test_kubectl_deletes_by_label(local: LocalCluster) -> None:
    make_pod(local.cluster, "p1", "pass")
    until_done(local.cluster, "p1")
    assert kubectl(local, "delete", "pods", "-l", "a=b") == 'pod "p1" deleted\n'
    assert local.cluster.items("pods", NAMESPACE) == []


def test_kubectl_drain_cordons_and_evicts_through_the_eviction_api(local: LocalCluster) -> None:
    trap = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *_: (print('saved', flush=True), sys.exit(75)))\n"
        "print('up', flush=True)\n"
        "time.sleep(300)"
    )
    make_pod(local.cluster, "p1", trap)
    log = local.folder / "logs" / NAMESPACE / "p1.log"
    deadline = SYSTEM_CLOCK.monotonic() + 30
    while not (log.exists() and "up" in log.read_text()):
        assert SYSTEM_CLOCK.monotonic() < deadline
        SYSTEM_CLOCK.sleep(0.05)
    said = kubectl(local, "drain", "spot-a", "--force", "--timeout=30s")
    assert "evicting pod train/p1" in said and "node/spot-a drained" in said
    assert ("POST", f"/api/v1/namespaces/{NAMESPACE}/pods/p1/eviction") in local.server.requests
    assert local.cluster.get("nodes", "", "spot-a")["spec"]["unschedulable"] is True
    assert log.read_text() == "up\nsaved\n"  # its SIGTERM came, within its grace
    assert local.player.played.exits["p1"] == 75
    assert local.cluster.items("pods", NAMESPACE) == []

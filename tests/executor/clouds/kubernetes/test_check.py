"""``check kubernetes`` against the local cluster: each line decided by the apiserver (the
context, the namespace, RBAC through SelfSubjectAccessReview, the claim, spot nodes, the GPU
resource), and each missing one with its fix."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kubernetes_validate")

from spotwise.executor.clouds.base import CloudOptions
from spotwise.executor.clouds.kubernetes.check import KubernetesCheck
from spotwise.executor.clouds.kubernetes.clients import api_client
from spotwise.executor.clouds.kubernetes.fake.local_cluster import (
    CONTEXT,
    NAMESPACE,
    LocalCluster,
)
from spotwise.executor.clouds.kubernetes.target import KubernetesTarget

GKE_SPOT = {"cloud.google.com/gke-spot": "true"}


@pytest.fixture
def local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path / "cluster", denied=frozenset({("delete", "jobs")}))
    monkeypatch.setenv("KUBECONFIG", str(cluster.kubeconfig))
    yield cluster
    cluster.close()


def checked(
    project: str = f"{CONTEXT}/{NAMESPACE}", bucket: str | None = None
) -> dict[str, tuple[str, str]]:
    options = CloudOptions(project=project, region="gke", instance_type="+1gpu", bucket=bucket)
    target = KubernetesTarget.from_options(options)
    lines = KubernetesCheck(target, lambda: api_client(target, "check kubernetes")).run()
    return {c.what: (c.status, c.fix) for c in lines}


def test_a_ready_cluster_but_for_one_verb(local: LocalCluster) -> None:
    local.player.add_node("spot-a", labels=GKE_SPOT, gpus=1)
    found = checked(bucket="checkpoints")
    assert found["credentials"][0] == "ok"
    assert found["namespace"][0] == "ok"
    assert found["checkpoint claim"][0] == "ok"
    assert found["spot nodes"][0] == "ok"
    assert found["GPU resource"][0] == "ok"
    assert found["permission: create jobs"][0] == "ok"
    assert found["permission: get pods/log"][0] == "ok"
    assert found["permission: delete jobs"] == (
        "missing",
        "grant the Role of docs/kubernetes.md in train",
    )


def test_no_spot_node_and_no_claim_are_said_with_their_fix(local: LocalCluster) -> None:
    local.player.add_node("plain", labels={}, gpus=1)
    found = checked(bucket="other")
    assert found["checkpoint claim"][0] == "missing"
    assert found["spot nodes"][0] == "unknown"
    assert "spot-vms" in found["spot nodes"][1]
    assert found["GPU resource"][0] == "unknown"


def test_a_spot_node_without_the_gpu_resource_is_missing_it(local: LocalCluster) -> None:
    local.player.add_node("spot-cpu", labels=GKE_SPOT, gpus=0)
    assert checked(bucket="checkpoints")["GPU resource"][0] == "missing"


def test_an_unknown_context_stops_at_the_first_line(local: LocalCluster) -> None:
    found = checked(project="nowhere/train")
    assert list(found) == ["credentials"]
    assert found["credentials"][0] == "missing"


def test_a_missing_namespace_says_how_to_make_it(local: LocalCluster) -> None:
    found = checked(project=f"{CONTEXT}/absent")
    assert found["namespace"] == ("missing", "kubectl create ns absent")


def test_a_namespace_it_may_not_read_leaves_the_other_checks_to_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A namespaced Role seldom grants reading the namespace itself: that is not a stop."""
    cluster = LocalCluster(tmp_path / "c", denied=frozenset({("get", "namespaces")}))
    monkeypatch.setenv("KUBECONFIG", str(cluster.kubeconfig))
    try:
        found = checked(bucket="checkpoints")
    finally:
        cluster.close()
    assert found["namespace"][0] == "unknown"
    assert found["permission: create jobs"][0] == "ok"
    assert found["checkpoint claim"][0] == "ok"

"""The fake's Eviction API through the official client: an eviction marks the Pod
``DisruptionTarget`` (``EvictionByEvictionAPI``) and deletes it with the grace asked; a
PodDisruptionBudget that allows no disruption refuses it with 429; a body that is no policy/v1
Eviction, or one of another Pod, is refused naming why; a Pod that has ended goes at once."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kubernetes_validate")

from kubernetes import client, config

from spotwise.executor.clouds.kubernetes.fake.apiserver import FakeApiServer
from spotwise.executor.clouds.kubernetes.fake.cluster import NotFound, condition
from spotwise.executor.clouds.kubernetes.fake.eviction import budgets

NS = "train"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[FakeApiServer]:
    fake = FakeApiServer(logs=tmp_path / "logs")
    yield fake
    fake.close()


@pytest.fixture
def core(server: FakeApiServer, tmp_path: Path) -> Any:
    path = server.kubeconfig(tmp_path / "kubeconfig", namespace=NS)
    return client.CoreV1Api(config.new_client_from_config(config_file=str(path), context="fake"))


def running(server: FakeApiServer, name: str, app: str = "train", grace: int = 30) -> None:
    """A Pod of ``app`` on a node, Running and Ready (as its kubelet would report it)."""
    server.cluster.create(
        "pods",
        NS,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": app}},
            "spec": {
                "nodeName": "spot-1",
                "terminationGracePeriodSeconds": grace,
                "containers": [{"name": "train", "image": "python:3.11"}],
            },
        },
    )

    def run(obj: dict[str, Any]) -> None:
        at = server.cluster.stamp()
        obj["status"] = {"phase": "Running", "conditions": [condition("Ready", "True", "", at)]}

    server.cluster.update("pods", NS, name, run)


def budget(server: FakeApiServer, name: str, **spec: Any) -> None:
    server.cluster.create(
        "poddisruptionbudgets",
        NS,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": "train"}}, **spec},
        },
    )


def eviction(name: str, grace: int | None = None) -> Any:
    options = client.V1DeleteOptions(grace_period_seconds=grace) if grace is not None else None
    return client.V1Eviction(
        metadata=client.V1ObjectMeta(name=name, namespace=NS), delete_options=options
    )


def post(server: FakeApiServer, path: str, body: Any) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        server.url + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_an_eviction_marks_the_pod_and_deletes_it_with_the_grace_asked(
    server: FakeApiServer, core: Any
) -> None:
    running(server, "p1")
    core.create_namespaced_pod_eviction("p1", NS, eviction("p1", grace=7))
    pod = server.cluster.get("pods", NS, "p1")
    marked = [c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert [(c["status"], c["reason"]) for c in marked] == [("True", "EvictionByEvictionAPI")]
    assert pod["metadata"]["deletionTimestamp"]
    assert pod["metadata"]["deletionGracePeriodSeconds"] == 7  # its node stops it within 7 s
    running(server, "p2", grace=45)
    core.create_namespaced_pod_eviction("p2", NS, eviction("p2"))
    assert server.cluster.get("pods", NS, "p2")["metadata"]["deletionGracePeriodSeconds"] == 45


def test_a_budget_that_allows_no_disruption_refuses_with_429_until_it_does(
    server: FakeApiServer, core: Any
) -> None:
    running(server, "p1")
    budget(server, "one-left", minAvailable=1)
    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_pod_eviction("p1", NS, eviction("p1"))
    assert refused.value.status == 429
    assert "one-left" in json.loads(str(refused.value.body))["message"]
    pod = server.cluster.get("pods", NS, "p1")
    assert "deletionTimestamp" not in pod["metadata"]
    assert all(c["type"] != "DisruptionTarget" for c in pod["status"]["conditions"])
    running(server, "p2")  # two healthy, one needed: one may go
    core.create_namespaced_pod_eviction("p1", NS, eviction("p1"))
    with pytest.raises(client.ApiException) as again:  # p1 is going: p2 is the one left
        core.create_namespaced_pod_eviction("p2", NS, eviction("p2"))
    assert again.value.status == 429


def test_a_budget_counts_percentages_as_the_disruption_controller_rounds_them(
    server: FakeApiServer,
) -> None:
    for name in ("p1", "p2", "p3"):
        running(server, name)
    budget(server, "half", maxUnavailable="50%")  # 1.5 rounds down: 1 may be unavailable
    budget(server, "most", minAvailable="60%")  # 1.8 rounds up: 2 must stay
    pod = server.cluster.get("pods", NS, "p1")
    assert [(b.name, b.healthy, b.desired, b.allowed) for b in budgets(server.cluster, pod)] == [
        ("half", 3, 2, 1),
        ("most", 3, 2, 1),
    ]


def test_an_ended_pod_is_evicted_at_once_whatever_its_budget(
    server: FakeApiServer, core: Any
) -> None:
    running(server, "p1")
    budget(server, "one-left", minAvailable=1)

    def ended(obj: dict[str, Any]) -> None:
        obj["status"]["phase"] = "Failed"

    server.cluster.update("pods", NS, "p1", ended)
    core.create_namespaced_pod_eviction("p1", NS, eviction("p1"))
    with pytest.raises(NotFound):
        server.cluster.get("pods", NS, "p1")


def test_what_is_no_eviction_of_that_pod_is_refused_naming_why(
    server: FakeApiServer, core: Any
) -> None:
    running(server, "p1")
    path = f"/api/v1/namespaces/{NS}/pods/p1/eviction"
    meta = {"name": "p1", "namespace": NS}
    code, answer = post(
        server,
        path,
        {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": meta, "deleteOption": {}},
    )
    assert code == 422 and "deleteOption" in answer["message"]
    code, answer = post(server, path, {"apiVersion": "v1", "kind": "Pod", "metadata": meta})
    assert code == 422 and answer["details"]["causes"][0]["field"] == "kind"
    code, answer = post(
        server, path, {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p9"}}
    )
    assert code == 400 and "does not match" in answer["message"]
    with pytest.raises(client.ApiException) as missing:
        core.create_namespaced_pod_eviction("nope", NS, eviction("nope"))
    assert missing.value.status == 404
    pod = server.cluster.get("pods", NS, "p1")
    assert "deletionTimestamp" not in pod["metadata"]  # none of these touched it


def test_discovery_names_the_eviction_subresource_as_kubectl_drain_looks_for_it(
    server: FakeApiServer,
) -> None:
    request = urllib.request.Request(
        server.url + "/api/v1", headers={"Authorization": f"Bearer {server.token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        resources = {r["name"]: r for r in json.loads(answer.read())["resources"]}
    assert resources["pods/eviction"]["group"] == "policy"
    assert resources["pods/eviction"]["version"] == "v1"
    assert resources["pods/eviction"]["verbs"] == ["create"]

"""The fake apiserver through the official ``kubernetes`` client: objects checked against the
API's schema (a 422 naming the field), list with selectors, watch from a resourceVersion, the
Job controller's Pods, logs, SelfSubjectAccessReview and the bearer token."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

kubernetes = pytest.importorskip("kubernetes")
pytest.importorskip("kubernetes_validate")

from kubernetes import client, config, watch  # noqa: E402

from spotwise.executor.clouds.kubernetes.fake.apiserver import FakeApiServer  # noqa: E402


@pytest.fixture
def server(tmp_path: Path) -> Iterator[FakeApiServer]:
    fake = FakeApiServer(logs=tmp_path / "logs", denied=frozenset({("delete", "nodes")}))
    yield fake
    fake.close()


@pytest.fixture
def api(server: FakeApiServer, tmp_path: Path) -> client.ApiClient:
    path = server.kubeconfig(tmp_path / "kubeconfig", namespace="train")
    return config.new_client_from_config(config_file=str(path), context="fake")


def spot_node(name: str = "spot-1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"cloud.google.com/gke-spot": "true"}},
        "spec": {"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]},
    }


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"spotwise.dev/job": "j1"}},
        "spec": {"containers": [{"name": "train", "image": "python:3.11"}], **spec},
    }


def test_the_kubeconfig_is_private_and_reaches_the_server(
    server: FakeApiServer, tmp_path: Path
) -> None:
    path = server.kubeconfig(tmp_path / "kubeconfig")
    assert path.stat().st_mode & 0o077 == 0
    assert json.loads(path.read_text())["clusters"][0]["cluster"]["server"] == server.url


def test_a_request_without_the_token_is_unauthorized(server: FakeApiServer) -> None:
    other = client.Configuration()
    other.host = server.url
    with pytest.raises(client.ApiException) as refused:
        anonymous: Any = client.CoreV1Api(client.ApiClient(other))
        anonymous.list_node()
    assert refused.value.status == 401


def post(server: FakeApiServer, path: str, body: Any) -> tuple[int, Any]:
    """A raw POST with the kubeconfig's token (the client's own models refuse these bodies
    before they are sent, so a raw request shows what the server does)."""
    connection = http.client.HTTPConnection(server.url.removeprefix("http://"), timeout=10)
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}
    connection.request("POST", path, json.dumps(body), headers)
    answer = connection.getresponse()
    return answer.status, json.loads(answer.read())


def test_a_field_the_schema_lacks_is_refused_with_422_naming_it(server: FakeApiServer) -> None:
    body = pod("bad")
    body["spec"]["containers"][0]["imag"] = "typo"
    code, status = post(server, "/api/v1/namespaces/train/pods", body)
    assert (code, status["kind"], status["reason"]) == (422, "Status", "Invalid")
    assert status["details"]["causes"][0]["field"] == "spec.containers[0]"
    assert "'imag' was unexpected" in status["details"]["causes"][0]["message"]


def test_a_value_of_the_wrong_type_and_a_bad_name_are_refused(server: FakeApiServer) -> None:
    code, status = post(
        server, "/api/v1/namespaces/train/pods", pod("a", terminationGracePeriodSeconds="30")
    )
    assert code == 422
    assert status["details"]["causes"][0]["field"] == "spec.terminationGracePeriodSeconds"
    code, status = post(server, "/api/v1/namespaces/train/pods", pod("Not_A_Name"))
    assert (code, status["details"]["causes"][0]["field"]) == (422, "metadata.name")


def test_a_job_body_at_the_pods_endpoint_is_refused(server: FakeApiServer) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {}}
    code, status = post(server, "/api/v1/namespaces/train/pods", job)
    assert (code, status["details"]["causes"][0]["field"]) == (422, "kind")


def test_a_pod_is_scheduled_only_on_a_node_it_tolerates(api: client.ApiClient) -> None:
    core: Any = client.CoreV1Api(api)
    core.create_node(spot_node())
    core.create_namespaced_pod("train", pod("plain"))
    tolerating = pod(
        "tolerating",
        nodeSelector={"cloud.google.com/gke-spot": "true"},
        tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
    )
    core.create_namespaced_pod("train", tolerating)
    assert core.read_namespaced_pod("plain", "train").spec.node_name is None
    assert core.read_namespaced_pod("tolerating", "train").spec.node_name == "spot-1"
    scheduled = core.read_namespaced_pod("plain", "train").status.conditions[0]
    assert (scheduled.type, scheduled.reason) == ("PodScheduled", "Unschedulable")


def test_a_job_gets_a_pod_from_its_template_with_the_job_labels(api: client.ApiClient) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train-j1", "labels": {"spotwise.dev/job": "j1"}},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": {"spotwise.dev/job": "j1"}},
                "spec": pod("x")["spec"] | {"restartPolicy": "Never"},
            },
        },
    }
    batch: Any = client.BatchV1Api(api)
    batch.create_namespaced_job("train", job)
    core: Any = client.CoreV1Api(api)
    pods = core.list_namespaced_pod("train", label_selector="job-name=train-j1")
    assert len(pods.items) == 1
    assert pods.items[0].metadata.name.startswith("train-j1-")
    assert pods.items[0].metadata.labels["spotwise.dev/job"] == "j1"
    assert pods.items[0].metadata.owner_references[0].kind == "Job"


def test_a_list_filters_by_label_and_a_name_taken_twice_conflicts(api: client.ApiClient) -> None:
    core: Any = client.CoreV1Api(api)
    core.create_namespaced_pod("train", pod("one"))
    other = pod("two")
    other["metadata"]["labels"] = {"spotwise.dev/job": "j2"}
    core.create_namespaced_pod("train", other)
    found = core.list_namespaced_pod("train", label_selector="spotwise.dev/job=j2")
    assert [p.metadata.name for p in found.items] == ["two"]
    with pytest.raises(client.ApiException) as taken:
        core.create_namespaced_pod("train", pod("one"))
    assert taken.value.status == 409


def test_a_watch_from_a_resource_version_sees_only_later_changes(api: client.ApiClient) -> None:
    core: Any = client.CoreV1Api(api)
    core.create_namespaced_pod("train", pod("before"))
    version = core.list_namespaced_pod("train").metadata.resource_version
    core.create_namespaced_pod("train", pod("after"))
    core.delete_namespaced_pod("before", "train")
    seen = [
        (event["type"], event["object"].metadata.name)
        for event in watch.Watch().stream(
            core.list_namespaced_pod, "train", resource_version=version, timeout_seconds=1
        )
    ]
    # the scheduler's verdict on "after" (no node) is a change of its own
    assert seen == [("ADDED", "after"), ("MODIFIED", "after"), ("DELETED", "before")]


def test_a_deletions_event_carries_its_own_resource_version_to_resume_from(
    api: client.ApiClient,
) -> None:
    core: Any = client.CoreV1Api(api)
    core.create_namespaced_pod("train", pod("gone"))
    version = core.list_namespaced_pod("train").metadata.resource_version
    core.delete_namespaced_pod("gone", "train")
    stream = watch.Watch()
    events = stream.stream(
        core.list_namespaced_pod, "train", resource_version=version, timeout_seconds=1
    )
    (deleted,) = list(events)
    assert deleted["type"] == "DELETED"
    assert int(str(stream.resource_version)) > int(version)  # resumed after it: not seen twice
    again = watch.Watch().stream(
        core.list_namespaced_pod,
        "train",
        resource_version=stream.resource_version,
        timeout_seconds=1,
    )
    assert list(again) == []


def test_a_watch_from_a_compacted_resource_version_is_refused_410_expired(
    api: client.ApiClient, server: FakeApiServer
) -> None:
    core: Any = client.CoreV1Api(api)
    old = core.list_namespaced_pod("train").metadata.resource_version
    core.create_namespaced_pod("train", pod("p"))
    server.cluster.compact()
    with pytest.raises(client.ApiException) as refused:
        list(
            watch.Watch().stream(
                core.list_namespaced_pod, "train", resource_version=old, timeout_seconds=1
            )
        )
    assert refused.value.status == 410 and "Expired" in str(refused.value.reason)
    now = core.list_namespaced_pod("train").metadata.resource_version
    stream = watch.Watch().stream(
        core.list_namespaced_pod, "train", resource_version=now, timeout_seconds=1
    )
    assert list(stream) == []  # from a list after the compaction: resumed


def test_a_pods_log_is_served_from_its_file(api: client.ApiClient, server: FakeApiServer) -> None:
    core: Any = client.CoreV1Api(api)
    core.create_namespaced_pod("train", pod("logged"))
    (server.logs / "train").mkdir(parents=True)
    (server.logs / "train" / "logged.log").write_text("step 1\nstep 2\n")
    assert core.read_namespaced_pod_log("logged", "train") == "step 1\nstep 2\n"


def test_an_access_review_answers_no_for_what_rbac_denies(api: client.ApiClient) -> None:
    auth: Any = client.AuthorizationV1Api(api)

    def allowed(verb: str, resource: str) -> bool:
        review = client.V1SelfSubjectAccessReview(
            spec=client.V1SelfSubjectAccessReviewSpec(
                resource_attributes=client.V1ResourceAttributes(
                    verb=verb, resource=resource, namespace="train"
                )
            )
        )
        return bool(auth.create_self_subject_access_review(review).status.allowed)

    assert allowed("create", "pods")
    assert not allowed("delete", "nodes")


def test_a_merge_patch_is_checked_and_applied(api: client.ApiClient) -> None:
    core: Any = client.CoreV1Api(api)
    core.create_node(spot_node())
    core.patch_node("spot-1", {"metadata": {"labels": {"pool": "a"}}})
    assert core.read_node("spot-1").metadata.labels["pool"] == "a"
    with pytest.raises(client.ApiException) as refused:
        core.patch_node("spot-1", {"spec": {"unschedulable": "yes"}})
    assert refused.value.status == 422


def test_what_rbac_denies_is_refused_with_403(api: client.ApiClient) -> None:
    core: Any = client.CoreV1Api(api)
    core.create_node(spot_node())
    with pytest.raises(client.ApiException) as refused:
        core.delete_node("spot-1")
    assert refused.value.status == 403
    assert json.loads(refused.value.body or "{}")["reason"] == "Forbidden"
    assert core.read_node("spot-1").metadata.name == "spot-1"


def test_discovery_lists_the_groups_and_resources_it_serves(server: FakeApiServer) -> None:
    def get(path: str) -> Any:
        connection = http.client.HTTPConnection(server.url.removeprefix("http://"), timeout=10)
        connection.request("GET", path, headers={"Authorization": f"Bearer {server.token}"})
        return json.loads(connection.getresponse().read())

    groups = {g["name"] for g in get("/apis")["groups"]}
    assert groups == {"batch", "policy", "authorization.k8s.io"}
    core = {r["name"]: r for r in get("/api/v1")["resources"]}
    assert core["pods"]["shortNames"] == ["po"] and "pods/log" in core
    assert [r["name"] for r in get("/apis/batch/v1")["resources"]] == ["jobs"]
    assert get("/apis/apps/v1")["reason"] == "NotFound"


def test_without_its_schemas_the_fake_refuses_to_start_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    from spotwise.executor.clouds.kubernetes.fake.apiserver import MissingSchemas

    real = importlib.util.find_spec

    def lacking(name: str, *args: Any) -> Any:
        return None if name == "kubernetes_validate" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", lacking)
    with pytest.raises(MissingSchemas, match=r"pip install 'spotwise\[try\]'"):
        FakeApiServer(logs=tmp_path / "logs")

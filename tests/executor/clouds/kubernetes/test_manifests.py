"""The objects the launcher writes: each accepted by kubernetes-validate (strict, at the fake's
pinned Kubernetes) for every platform, with the platform's spot selector and tolerations, a
grace inside its window, the GPU request and toleration, do-not-disrupt, the job id on labels,
and a failure policy under which a disruption does not use a retry."""

from __future__ import annotations

import pytest

kubernetes_validate = pytest.importorskip("kubernetes_validate")

from spotwise.executor.clouds.base import CloudOptions  # noqa: E402
from spotwise.executor.clouds.kubernetes.fake.schema import KUBERNETES_VERSION  # noqa: E402
from spotwise.executor.clouds.kubernetes.manifests import (  # noqa: E402
    JOB_LABEL,
    NOTICE_ENV,
    job,
    label_value,
    secret,
)
from spotwise.executor.clouds.kubernetes.platforms import PLATFORMS  # noqa: E402
from spotwise.executor.clouds.kubernetes.target import KubernetesTarget  # noqa: E402


def target(platform: str, gpus: str = "+1gpu") -> KubernetesTarget:
    return KubernetesTarget.from_options(
        CloudOptions(
            region=platform,
            project="ctx/train",
            instance_type=f"a2-highgpu-1g{gpus}" if gpus else None,
            image="ghcr.io/acme/train:1.0",
            bucket="ckpt",
            zones=("pool-a",) if platform == "cce" else (),
        )
    )


def written(platform: str) -> tuple[dict, dict]:
    chosen = target(platform)
    command = ["python", "train.py"]
    return (
        job(chosen, "spotwise-abc-1", "abc123def456", command, {"A": "1"}, secrets=["HF_TOKEN"]),
        secret("abc123def456", {"HF_TOKEN": "s3cret"}),
    )


@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_manifest_is_valid_kubernetes_for_each_platform(platform: str) -> None:
    for manifest in written(platform):
        kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)


@pytest.mark.parametrize(
    ("platform", "selector", "toleration", "grace"),
    [
        ("gke", {"cloud.google.com/gke-spot": "true"}, "cloud.google.com/gke-spot", 15),
        ("eks", {"karpenter.sh/capacity-type": "spot"}, None, 120),
        (
            "aks",
            {"kubernetes.azure.com/scalesetpriority": "spot"},
            "kubernetes.azure.com/scalesetpriority",
            30,
        ),
    ],
)
def test_the_pod_selects_the_platforms_spot_nodes_within_its_window(
    platform: str, selector: dict[str, str], toleration: str | None, grace: int
) -> None:
    spec = written(platform)[0]["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {**selector, "node.kubernetes.io/instance-type": "a2-highgpu-1g"}
    keys = [t["key"] for t in spec["tolerations"]]
    assert keys == ([toleration] if toleration else []) + ["nvidia.com/gpu"]
    assert spec["terminationGracePeriodSeconds"] == grace
    assert spec["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "1"}}


@pytest.mark.parametrize(
    ("platform", "window_s"),
    # GKE: 15 s of its 30 s graceful node shutdown are the Pods'; AKS: Scheduled Events' 30 s;
    # EKS: EC2's two-minute notice; CCE: 120 s (uncertain, platforms.py); generic: Kubernetes'
    # default grace
    [("gke", 15), ("eks", 120), ("aks", 30), ("cce", 120), ("generic", 30)],
)
def test_the_pods_grace_and_the_guards_window_are_the_platforms_one_value(
    platform: str, window_s: int
) -> None:
    spec = written(platform)[0]["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in spec["containers"][0]["env"]}
    assert spec["terminationGracePeriodSeconds"] == window_s == PLATFORMS[platform].grace_s
    assert env[NOTICE_ENV] == str(window_s)
    assert env["A"] == "1"


def test_a_grace_given_is_both_the_pods_and_the_guards() -> None:
    chosen = KubernetesTarget(platform="eks", image="ghcr.io/acme/train:1.0", grace_s=90)
    spec = job(chosen, "spotwise-abc-1", "abc123def456", ["python"], {NOTICE_ENV: "5"})
    pod = spec["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert (pod["terminationGracePeriodSeconds"], env[NOTICE_ENV]) == (90, "90")


def test_cce_selects_its_spot_node_pools_by_name() -> None:
    spec = written("cce")[0]["spec"]["template"]["spec"]
    term = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    expression = term["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert expression == {
        "key": "cce.cloud.com/cce-nodepool",
        "operator": "In",
        "values": ["pool-a"],
    }


def test_a_disruption_is_ignored_and_a_real_failure_fails_the_job() -> None:
    manifest = written("eks")[0]
    rules = manifest["spec"]["podFailurePolicy"]["rules"]
    assert rules[0]["action"] == "Ignore"
    assert rules[0]["onPodConditions"] == [{"type": "DisruptionTarget", "status": "True"}]
    assert (rules[1]["action"], rules[1]["onExitCodes"]["values"]) == ("FailJob", [75])
    template = manifest["spec"]["template"]
    assert template["metadata"]["annotations"] == {
        "karpenter.sh/do-not-disrupt": "true",
        "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
    }
    assert template["metadata"]["labels"][JOB_LABEL] == "abc123def456"
    assert manifest["metadata"]["labels"][JOB_LABEL] == "abc123def456"


def test_no_gpu_asks_for_none_and_needs_no_gpu_toleration() -> None:
    spec = job(target("eks", gpus=""), "n", "j", ["true"], {})["spec"]["template"]["spec"]
    assert "resources" not in spec["containers"][0]
    assert "tolerations" not in spec


def test_a_host_name_becomes_a_valid_label_value() -> None:
    assert label_value("build box #7.local.") == "build-box--7.local"
    assert label_value("!!!") == "unknown"
    assert len(label_value("x" * 100)) == 63


def test_a_secret_reaches_the_pod_by_reference_never_by_value() -> None:
    manifest, stored = written("gke")
    env = manifest["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {
        "name": "HF_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "spotwise-abc123def456", "key": "HF_TOKEN"}},
    } in env
    assert "s3cret" not in str(manifest)
    assert stored["stringData"] == {"HF_TOKEN": "s3cret"}
    assert stored["metadata"]["labels"][JOB_LABEL] == "abc123def456"

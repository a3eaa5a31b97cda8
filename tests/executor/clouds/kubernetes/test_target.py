"""The Kubernetes settings from the shared options: what each flag means on a cluster, back
from JSON, and a refusal in one line naming the flag for what a cluster cannot take."""

from __future__ import annotations

import pytest

from spotwise.executor.clouds.base import CloudOptions
from spotwise.executor.clouds.kubernetes.target import KubernetesTarget
from spotwise.executor.errors import ExecutorError


def test_the_shared_flags_name_context_namespace_platform_shape_and_claim() -> None:
    target = KubernetesTarget.from_options(
        CloudOptions(
            project="gke_proj_us-central1_train/ml",
            region="gke",
            instance_type="a2-highgpu-1g",
            image="us-docker.pkg.dev/p/r/train:1",
            bucket="ckpt",
            identity="trainer",
            zones=("us-central1-a",),
        )
    )
    assert (target.context, target.namespace, target.platform) == (
        "gke_proj_us-central1_train",
        "ml",
        "gke",
    )
    assert (target.shape, target.gpus, target.grace) == ("a2-highgpu-1g", 1, 15)
    assert KubernetesTarget.from_dict(target.to_dict()) == target


def test_a_gpu_count_alone_and_the_defaults() -> None:
    target = KubernetesTarget.from_options(CloudOptions(instance_type="+8gpu"))
    assert (target.shape, target.gpus, target.namespace, target.context) == (
        None,
        8,
        "default",
        None,
    )
    assert target.platform == "generic"


@pytest.mark.parametrize(
    ("options", "flag"),
    [
        (CloudOptions(region="openshift"), "--region"),
        (CloudOptions(project="ctx/Not_Valid"), "--project"),
        (CloudOptions(bucket="s3://bucket"), "--bucket"),
        (CloudOptions(instance_type="a100;rm -rf"), "--instance-type"),
        (CloudOptions(image="$(whoami)"), "--image"),
        (CloudOptions(max_price=1.0), "--max-price"),
        (CloudOptions(region="cce"), "--pools"),
    ],
)
def test_what_a_cluster_cannot_take_is_refused_naming_the_flag(
    options: CloudOptions, flag: str
) -> None:
    with pytest.raises(ExecutorError, match=flag.replace("-", r"\-")):
        KubernetesTarget.from_options(options)


def test_a_grace_beyond_the_platforms_window_is_refused() -> None:
    with pytest.raises(ExecutorError, match="outside gke's window"):
        KubernetesTarget(platform="gke", grace_s=60).check()
    with pytest.raises(ExecutorError, match="give 1 s or more"):
        KubernetesTarget(platform="eks", grace_s=0).check()


def test_a_generic_cluster_sets_no_window_its_pods_grace_is_it() -> None:
    KubernetesTarget(platform="generic", grace_s=300).check()
    assert KubernetesTarget(platform="generic", grace_s=300).grace == 300
    assert KubernetesTarget(platform="generic").grace == 30


def test_a_launch_needs_an_image_and_a_claim() -> None:
    with pytest.raises(ExecutorError, match="--image and --bucket"):
        KubernetesTarget().require_complete()

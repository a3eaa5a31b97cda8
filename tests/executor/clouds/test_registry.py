"""``--ckpt`` as the supervisor sizes it: folders here for a job here, the bucket's folders for
a job on a cloud, and a clear refusal for anything it could not size."""

from __future__ import annotations

from pathlib import Path

import pytest

from spotwise.executor.checkpoint.places import LocalFolder
from spotwise.executor.clouds.base import BucketFolder, CloudOptions
from spotwise.executor.clouds.registry import CLOUDS, checkpoint_places, cloud_named
from spotwise.executor.errors import ExecutorError


def test_a_job_here_sizes_its_folders_and_refuses_a_bucket_url(tmp_path: Path) -> None:
    (tmp_path / "ck" / "step-3").mkdir(parents=True)
    (tmp_path / "ck" / "step-3" / "model.pt").write_bytes(b"1" * 1234)
    (place,) = checkpoint_places([str(tmp_path / "ck")], None)
    assert isinstance(place, LocalFolder) and place.nbytes() == 1234
    assert LocalFolder(tmp_path / "missing").nbytes() == 0
    with pytest.raises(ExecutorError, match="--launcher aws"):
        checkpoint_places(["s3://bucket/ck"], None)


@pytest.mark.parametrize("name", sorted(n for n, c in CLOUDS.items() if c.storage_scheme))
def test_a_cloud_job_sizes_its_buckets_folders_only(name: str) -> None:
    cloud = cloud_named(name)
    bucket = "acct/box" if name == "azure" else "box"
    project = {"aws": None, "gcp": "my-project", "huawei": "0" * 32}.get(
        name, f"{'0' * 8}-{'0' * 4}-{'0' * 4}-{'0' * 4}-{'0' * 12}/rg"
    )
    target = cloud.target(CloudOptions(bucket=bucket, project=project))
    url = cloud.checkpoint_url(target, "run1")
    (place,) = checkpoint_places([url], target)
    assert isinstance(place, BucketFolder) and place.where == url and place.cloud is cloud
    with pytest.raises(ExecutorError, match="a folder on the instance is lost"):
        checkpoint_places(["ckpt"], target)
    scheme = cloud.storage_scheme
    for elsewhere in (f"{scheme}://other/run1", f"{scheme}://boxes/run1", "file:///tmp/run1"):
        with pytest.raises(ExecutorError, match="is not in"):
            checkpoint_places([elsewhere], target)


def test_a_job_on_a_volume_names_folders_under_its_mount_and_is_not_sized_from_here() -> None:
    """Kubernetes: checkpoints on the claim every Pod mounts at /spotwise, which this machine
    cannot read; the supervisor says so (not sized) rather than guessing 0 bytes."""
    cloud = cloud_named("kubernetes")
    target = cloud.target(CloudOptions(bucket="checkpoints", project="train"))
    url = cloud.checkpoint_url(target, "run1")
    assert url == "/spotwise/checkpoints/run1"
    (place,) = checkpoint_places([url], target)
    assert isinstance(place, BucketFolder) and place.where == url
    with pytest.raises(ExecutorError, match=r"on the claim checkpoints in the cluster.*not sized"):
        place.nbytes()
    for elsewhere in ("ckpt", "/tmp/run1", "/spotwise", "/spotwise/../etc", "s3://box/run1"):
        with pytest.raises(ExecutorError, match="mounted at /spotwise in every instance"):
            checkpoint_places([elsewhere], target)

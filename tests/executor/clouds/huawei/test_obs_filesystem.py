"""``obs://`` for fsspec, found by the package's entry point: a checkpoint saved to an OBS
bucket (moto's S3 server standing in for OBS's S3 API) and loaded back bit-exactly."""

from __future__ import annotations

import uuid

import boto3
import fsspec
import pytest
import torch

from spotwise.executor.checkpoint.manager import CheckpointManager
from spotwise.executor.clouds.huawei.obs_filesystem import ObsFileSystem


@pytest.fixture
def bucket(moto_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"ckpt-{uuid.uuid4().hex[:10]}"
    boto3.client("s3", endpoint_url=moto_server, region_name="us-east-1").create_bucket(Bucket=name)
    monkeypatch.setenv("SPOTWISE_HUAWEI_OBS_URL", moto_server)
    monkeypatch.setenv("SPOTWISE_HUAWEI_REGION", "ap-southeast-1")
    monkeypatch.setenv("HUAWEICLOUD_SDK_AK", "testing")
    monkeypatch.setenv("HUAWEICLOUD_SDK_SK", "testing")
    return name


def test_obs_urls_are_fsspecs_through_the_entry_point(bucket: str) -> None:
    fs, root = fsspec.core.url_to_fs(f"obs://{bucket}/spotwise/checkpoints/run1")
    assert isinstance(fs, ObsFileSystem) and root == f"{bucket}/spotwise/checkpoints/run1"


def test_a_checkpoint_to_obs_loads_back_bit_exactly(bucket: str) -> None:
    url = f"obs://{bucket}/spotwise/checkpoints/run1"
    generator = torch.Generator().manual_seed(7)
    weights, rng = torch.randn(64, 64, generator=generator), generator.get_state()
    state = {"w": weights, "step": 5, "rng": rng}
    saving = CheckpointManager([url])
    saving.save(5, state, block=True)
    saving.close()
    loaded = CheckpointManager([url]).load()
    assert loaded is not None and loaded.step == 5
    assert torch.equal(loaded.state["w"], weights) and loaded.state["step"] == 5
    assert torch.equal(loaded.state["rng"], rng)


def test_without_a_region_or_endpoint_it_says_what_to_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SPOTWISE_HUAWEI_REGION", raising=False)
    monkeypatch.delenv("SPOTWISE_HUAWEI_OBS_URL", raising=False)
    with pytest.raises(ValueError, match="SPOTWISE_HUAWEI_REGION"):
        ObsFileSystem(skip_instance_cache=True)

"""The rules every cloud's options pass: a pool's name, and a checkpoint folder in the
bucket."""

from __future__ import annotations

from dataclasses import replace

import pytest

from spotwise.executor.clouds.base import CloudOptions, bucket_folder
from spotwise.executor.clouds.registry import CLOUDS
from spotwise.executor.errors import ExecutorError


@pytest.mark.parametrize("zone", ["us-central1-a;id", "us-east-1a id", "a/b", "", "x" * 41])
def test_a_pool_name_no_cloud_has_is_refused_by_the_options_every_cloud_reads(zone: str) -> None:
    with pytest.raises(ExecutorError, match=r"^--pools .* is not a zone name"):
        replace(CloudOptions(), zones=("us-central1-b", zone))


def test_every_clouds_zone_forms_pass() -> None:
    assert CloudOptions(zones=("us-east-1a", "use1-az1", "us-central1-a", "1", "eastus")).zones


@pytest.mark.parametrize("cloud", sorted(CLOUDS))
@pytest.mark.parametrize("key", ["../other", "run/../../other", "./run", "run/\x00x"])
def test_a_checkpoint_folder_climbing_out_of_its_place_is_refused_on_every_cloud(
    cloud: str, key: str
) -> None:
    scheme = CLOUDS[cloud].storage_scheme
    with pytest.raises(ExecutorError, match="a checkpoint folder is a plain path under"):
        bucket_folder(f"{scheme}://b-1/{key}", scheme, "b-1")


def test_a_plain_checkpoint_folder_is_its_key_prefix() -> None:
    assert bucket_folder("gs://b-1/spotwise/checkpoints/run-1/", "gs", "b-1") == (
        "spotwise/checkpoints/run-1/"
    )
    assert bucket_folder("gs://b-1", "gs", "b-1") == ""

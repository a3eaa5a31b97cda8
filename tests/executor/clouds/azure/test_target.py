"""The Azure settings of a job: what the shared options may name, each refusal one line."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from spotwise.executor.clouds.azure.cloud import AzureCloud
from spotwise.executor.clouds.azure.fake.servers import IMAGE, SUBSCRIPTION
from spotwise.executor.clouds.azure.target import AzureTarget
from spotwise.executor.clouds.base import CloudOptions
from spotwise.executor.errors import ExecutorError


def test_the_options_azure_cannot_take_are_refused_in_one_line() -> None:
    cloud = AzureCloud()
    good = CloudOptions(project=f"{SUBSCRIPTION}/rg", bucket="acct/ckpt", image=IMAGE)
    target = cloud.target(replace(good, zones=("1", "eastus"), max_price=0.5))
    assert AzureTarget.from_dict(json.loads(json.dumps(target.to_dict()))) == target
    for bad, flag in (
        (replace(good, project="my-sub/rg"), "--project"),
        (replace(good, project=SUBSCRIPTION), "--project"),
        (replace(good, bucket="Acct/ckpt"), "--bucket"),
        (replace(good, bucket="acct"), "--bucket"),
        (replace(good, image="ubuntu"), "--image"),
        (replace(good, region="East US"), "--region"),
        (replace(good, network=("sg-1",)), "--network"),
        (replace(good, identity="a/b"), "--identity"),
    ):
        with pytest.raises(ExecutorError, match=f"^{flag} ") as caught:
            cloud.target(bad)
        assert "\n" not in str(caught.value)

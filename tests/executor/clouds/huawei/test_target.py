"""Huawei Cloud's settings from the shared cloud options: through JSON and back, and each option
that is not what Huawei takes there refused by name before it reaches a request."""

from __future__ import annotations

import json

import pytest

from spotwise.executor.clouds.base import CloudOptions
from spotwise.executor.clouds.huawei.target import HuaweiTarget
from spotwise.executor.errors import ExecutorError

PROJECT = "0123456789abcdef0123456789abcdef"


def test_the_settings_survive_json_and_default_to_three_zones() -> None:
    target = HuaweiTarget.from_options(
        CloudOptions(
            region="cn-north-4",
            project=PROJECT,
            image="img-1",
            bucket="spotwise-ckpt",
            identity="spotwise-instance",
            network=("vpc-1/subnet-1",),
            setup=("pip install -r requirements.txt",),
        )
    )
    back = HuaweiTarget.from_dict(json.loads(json.dumps(target.to_dict())))
    assert back == target and back.cloud == "huawei"
    assert (back.vpc_id, back.subnet_id) == ("vpc-1", "subnet-1")
    assert back.zones_or_default == ("cn-north-4a", "cn-north-4b", "cn-north-4c")
    assert back.home_region == "cn-north-4"
    back.require_complete()


@pytest.mark.parametrize(
    ("option", "refused"),
    [
        ({"region": "ap-southeast-1.example.com"}, "--region"),
        ({"project": "my-project"}, "is not a project id"),
        ({"bucket": "Bad_Bucket"}, "is not an OBS bucket name"),
        ({"network": ("vpc-1",)}, "VPC_ID/SUBNET_ID"),
        ({"network": ("vpc-1/sub;rm -rf",)}, "is not a subnet id"),
        ({"instance_type": "p3.2xlarge.8 --x"}, "is not an ECS flavor"),
    ],
)
def test_an_option_huawei_cannot_take_is_refused_by_name(option: dict, refused: str) -> None:
    with pytest.raises(ExecutorError, match=refused):
        HuaweiTarget.from_options(CloudOptions(**option))


def test_incomplete_settings_name_every_missing_flag() -> None:
    target = HuaweiTarget.from_options(CloudOptions(project=PROJECT))
    with pytest.raises(ExecutorError) as missing:
        target.require_complete()
    assert "--image, --bucket, --identity (an ECS agency), --network VPC_ID/SUBNET_ID" in str(
        missing.value
    )
    with pytest.raises(ExecutorError, match="needs --project"):
        HuaweiTarget().require_account("check huawei")

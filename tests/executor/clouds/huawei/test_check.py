"""``spotwise check huawei`` against the ECS/CSMS fake and moto's S3 as OBS: credentials first,
each miss with its fix, a sold-out zone said as not known to sell, wrong keys stop at the first
line."""

from __future__ import annotations

import uuid

import pytest

from spotwise.executor.clouds.base import CloudOptions
from spotwise.executor.clouds.huawei.cloud import HuaweiCloud
from spotwise.executor.clouds.huawei.fake.api import ACCESS_KEY, SECRET_KEY, HuaweiApi
from tests.executor.clouds.huawei.conftest import A100, PROJECT, ZONE_A, ZONE_B


@pytest.fixture
def keys(moto_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUAWEICLOUD_SDK_AK", ACCESS_KEY)
    monkeypatch.setenv("HUAWEICLOUD_SDK_SK", SECRET_KEY)
    monkeypatch.setenv("SPOTWISE_HUAWEI_OBS_URL", moto_server)


def options(huawei: HuaweiApi, *zones: str) -> CloudOptions:
    return CloudOptions(
        project=PROJECT,
        bucket=f"check-{uuid.uuid4().hex[:8]}",
        identity="spotwise-instance",
        image="img-1",
        network=("vpc-1/subnet-1",),
        instance_type=A100,
        zones=zones,
        endpoint_url=huawei.url,
    )


@pytest.mark.usefixtures("keys")
def test_before_setup_the_bucket_is_missing_with_its_fix_and_after_it_is_there(
    huawei: HuaweiApi,
) -> None:
    cloud = HuaweiCloud()
    target = cloud.target(options(huawei, ZONE_A))
    before = {c.what: c for c in cloud.check(target)}
    assert next(iter(before)) == "credentials" and before["credentials"].status == "ok"
    assert before["bucket"].status == "missing"
    assert before["bucket"].fix.startswith(f"spotwise setup huawei --project {PROJECT}")
    assert before["spot capacity"].status == "ok" and before["secrets (CSMS)"].status == "ok"
    assert before["agency"].status == "unknown"  # IAM is not read
    cloud.set_up(target, say=lambda _: None)
    after = {c.what: c.status for c in cloud.check(target)}
    assert after["bucket"] == "ok" and "missing" not in after.values()


@pytest.mark.usefixtures("keys")
def test_zones_where_spot_is_sold_out_are_said_with_a_fix(huawei: HuaweiApi) -> None:
    cloud = HuaweiCloud()
    capacity = next(
        c for c in cloud.check(cloud.target(options(huawei, ZONE_B))) if c.what == "spot capacity"
    )
    assert capacity.status == "unknown" and "sells spot in none of" in capacity.detail
    assert "--pools" in capacity.fix


def test_wrong_keys_stop_at_the_credentials_line(
    huawei: HuaweiApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HUAWEICLOUD_SDK_AK", ACCESS_KEY)
    monkeypatch.setenv("HUAWEICLOUD_SDK_SK", "not-the-secret")
    cloud = HuaweiCloud()
    (only,) = list(cloud.check(cloud.target(options(huawei, ZONE_A))))
    assert (only.what, only.status) == ("credentials", "missing")
    assert "signature does not match" in only.detail and "HUAWEICLOUD_SDK_AK" in only.fix

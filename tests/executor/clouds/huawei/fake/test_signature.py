"""The AK/SK signature check, against requests the real SDK signed."""

from __future__ import annotations

import pytest

from spotwise.executor.clouds.huawei.fake.api import HuaweiApi
from spotwise.executor.clouds.huawei.fake.signature import problem
from spotwise.executor.local_clouds.http import Request
from tests.executor.clouds.huawei.conftest import ecs_client


def test_a_request_the_sdk_signed_with_the_right_secret_is_accepted(huawei: HuaweiApi) -> None:
    from huaweicloudsdkecs.v2 import ListFlavorSellPoliciesRequest

    answer = ecs_client(huawei).list_flavor_sell_policies(
        ListFlavorSellPoliciesRequest(sell_mode="spot", flavor_id="p3.2xlarge.8")
    )
    assert answer.count == 2


def test_a_wrong_secret_is_refused_with_401(huawei: HuaweiApi) -> None:
    from huaweicloudsdkcore.exceptions.exceptions import ClientRequestException
    from huaweicloudsdkecs.v2 import ShowJobRequest

    with pytest.raises(ClientRequestException) as refused:
        ecs_client(huawei, secret="not-the-secret").show_job(ShowJobRequest(job_id="j"))
    assert refused.value.status_code == 401
    assert "signature does not match" in refused.value.error_msg
    assert huawei.log == []


def test_an_unsigned_or_unknown_key_request_says_why() -> None:
    bare = Request(method="GET", path="/v1/p/jobs/j", query=(), headers={}, body=b"")
    assert "no SDK-HMAC-SHA256 Authorization" in (problem(bare, {"AK": "SK"}) or "")
    signed = "SDK-HMAC-SHA256 Access=OTHER, SignedHeaders=host;x-sdk-date, Signature=00ff"
    stranger = Request(
        method="GET", path="/", query=(), headers={"Authorization": signed}, body=b""
    )
    assert "access key 'OTHER' is unknown" in (problem(stranger, {"AK": "SK"}) or "")

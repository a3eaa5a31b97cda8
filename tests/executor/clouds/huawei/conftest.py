"""A Huawei Cloud project on this machine: the loopback ECS and BSS fake
(executor/clouds/huawei/fake/), and the real SDK clients pointed at it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from spotwise.executor.clouds.huawei.fake.api import ACCESS_KEY, SECRET_KEY, HuaweiApi
from spotwise.executor.clouds.huawei.fake.bss import PriceCatalog
from spotwise.executor.clouds.huawei.fake.ecs import SOLD, SOLD_OUT, EcsProject

PROJECT = "0123456789abcdef0123456789abcdef"
REGION = "ap-southeast-1"
ZONE_A, ZONE_B = f"{REGION}a", f"{REGION}b"
A100 = "p3.2xlarge.8"


@pytest.fixture
def huawei() -> Iterator[HuaweiApi]:
    """The fake, A100s selling spot in zone a and sold out in b, with their list price."""
    sell = {(ZONE_A, A100): SOLD, (ZONE_B, A100): SOLD_OUT}
    api = HuaweiApi(EcsProject(PROJECT, sell), PriceCatalog({(REGION, f"{A100}.linux"): 3.9}))
    try:
        yield api
    finally:
        api.close()


def ecs_client(api: HuaweiApi, secret: str = SECRET_KEY) -> Any:
    """The real ECS client, its endpoint the fake's."""
    from huaweicloudsdkcore.auth.credentials import BasicCredentials
    from huaweicloudsdkecs.v2 import EcsClient

    credentials = BasicCredentials(ACCESS_KEY, secret, PROJECT)
    return EcsClient.new_builder().with_credentials(credentials).with_endpoints([api.url]).build()


def bss_client(api: HuaweiApi) -> Any:
    """The real BSS client, its endpoint the fake's."""
    from huaweicloudsdkbss.v2 import BssClient
    from huaweicloudsdkcore.auth.credentials import GlobalCredentials

    credentials = GlobalCredentials(ACCESS_KEY, SECRET_KEY)
    return BssClient.new_builder().with_credentials(credentials).with_endpoints([api.url]).build()


def csms_client(api: HuaweiApi) -> Any:
    """The real CSMS client, its endpoint the fake's."""
    from huaweicloudsdkcore.auth.credentials import BasicCredentials
    from huaweicloudsdkcsms.v1 import CsmsClient

    credentials = BasicCredentials(ACCESS_KEY, SECRET_KEY, PROJECT)
    return CsmsClient.new_builder().with_credentials(credentials).with_endpoints([api.url]).build()

"""Huawei Cloud's SDK clients as ``collect huawei`` makes them: credentials from the SDK's own
chain (``HUAWEICLOUD_SDK_AK``/``_SK``/``_PROJECT_ID``/``_DOMAIN_ID``, its credentials file, an
ECS's agency), each service's endpoint its region's, or the ``SPOTWISE_HUAWEI_*_URL`` variable's
(a local server)."""

from __future__ import annotations

import os
import re
from typing import Any

from spotwise.core.settings import CloudEndpoint, endpoint_url
from spotwise.pricing.errors import FlagError, PricingError

ECS_VARIABLE = "SPOTWISE_HUAWEI_ECS_URL"
BSS_ENDPOINT = CloudEndpoint("SPOTWISE_HUAWEI_BSS_URL", "https://bss-intl.myhuaweicloud.com")
"""BSS of the international site (HUAWEI CLOUD's, prices in USD)."""
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$")
INSTALL = "pip install 'spotwise[huawei]'"


def _sdk() -> Any:
    try:
        from huaweicloudsdkcore.auth import provider
    except ImportError:
        raise PricingError(f"collect huawei needs Huawei Cloud's SDK: {INSTALL}") from None
    return provider


def region_name(region: str) -> str:
    """``region`` if it is written as Huawei's regions are (``ap-southeast-1``, ``cn-north-4``).

    Raises:
        FlagError: for anything else (it would land in an endpoint's host name).
    """
    if not _REGION.match(region):
        raise FlagError(
            f"--regions: {region[:40]!r} is not a Huawei Cloud region; write it as "
            "ap-southeast-1 or cn-north-4"
        )
    return region


def ecs_endpoint(region: str) -> str:
    """The ECS endpoint of ``region``: ``https://ecs.REGION.myhuaweicloud.com``, or
    ``$SPOTWISE_HUAWEI_ECS_URL``."""
    default = f"https://ecs.{region_name(region)}.myhuaweicloud.com"
    return endpoint_url(CloudEndpoint(ECS_VARIABLE, default))


def ecs_client(region: str) -> tuple[Any, str]:
    """An ECS client of ``region`` with the project's credentials, and the project's id.

    Raises:
        PricingError: the SDK is missing, or there are no credentials (what to set).
    """
    provider = _sdk()
    from huaweicloudsdkecs.v2 import EcsClient

    credentials = _credentials(provider.CredentialProviderChain.get_basic_credential_provider_chain)
    if not getattr(credentials, "project_id", None):
        raise PricingError(
            "collect huawei: no project id for the region's ECS; set HUAWEICLOUD_SDK_PROJECT_ID "
            f"(the project of {region}, on the console's My Credentials page)"
        )
    builder = EcsClient.new_builder().with_credentials(credentials)
    return builder.with_endpoints([ecs_endpoint(region)]).build(), credentials.project_id


def bss_client() -> Any:
    """A BSS client with the account's (domain's) credentials.

    Raises:
        PricingError: the SDK is missing, or there are no credentials (what to set).
    """
    provider = _sdk()
    from huaweicloudsdkbss.v2 import BssClient

    credentials = _credentials(
        provider.CredentialProviderChain.get_global_credential_provider_chain
    )
    builder = BssClient.new_builder().with_credentials(credentials)
    return builder.with_endpoints([endpoint_url(BSS_ENDPOINT)]).build()


def _credentials(chain: Any) -> Any:
    try:
        return chain().get_credentials()
    except Exception as missing:  # the SDK raises ValueError or its own when none is found
        found = ", ".join(
            v for v in ("HUAWEICLOUD_SDK_AK", "HUAWEICLOUD_SDK_SK") if v in os.environ
        )
        raise PricingError(
            "collect huawei: no Huawei Cloud credentials (set HUAWEICLOUD_SDK_AK and "
            "HUAWEICLOUD_SDK_SK, or write ~/.huaweicloud/credentials; "
            f"set now: {found or 'neither'}): {str(missing)[:160]}"
        ) from None

"""OBS, Huawei Cloud's object store, through its S3-compatible API with boto3: the region's
endpoint (``https://obs.REGION.myhuaweicloud.com``, or ``$SPOTWISE_HUAWEI_OBS_URL``), the
user's AK/SK (``HUAWEICLOUD_SDK_AK``/``_SK``, the SDK's variables) on this machine, and on a
server the agency's temporary keys (:mod:`.agency`).

This module imports only the standard library at the top: the on-instance agent imports it."""

from __future__ import annotations

import os
from typing import Any

OBS_VARIABLE = "SPOTWISE_HUAWEI_OBS_URL"


def obs_url(region: str) -> str:
    """The OBS endpoint of ``region`` (``$SPOTWISE_HUAWEI_OBS_URL`` overrides it)."""
    return os.environ.get(OBS_VARIABLE, "").rstrip("/") or f"https://obs.{region}.myhuaweicloud.com"


def user_client(region: str) -> Any:
    """An S3 client of OBS with the user's AK/SK.

    Raises:
        KeyError: naming the variable that is missing (the caller says it in its words).
    """
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=obs_url(region),
        region_name=region,
        aws_access_key_id=os.environ["HUAWEICLOUD_SDK_AK"],
        aws_secret_access_key=os.environ["HUAWEICLOUD_SDK_SK"],
    )


def server_client(region: str, metadata_url: str) -> Any:
    """An S3 client of OBS with the server's agency keys, read from its metadata."""
    import boto3

    from spotwise.executor.clouds.huawei.agency import agency_keys

    key = agency_keys(metadata_url)
    return boto3.client(
        "s3",
        endpoint_url=obs_url(region),
        region_name=region,
        aws_access_key_id=key["access"],
        aws_secret_access_key=key["secret"],
        aws_session_token=key.get("securitytoken"),
    )

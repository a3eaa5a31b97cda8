"""``obs://BUCKET/KEY`` for fsspec (so for checkpoints: ``--ckpt obs://...``): s3fs against OBS's
S3 API, registered by the package's ``fsspec.specs`` entry point. The endpoint is the region's
(``$SPOTWISE_HUAWEI_REGION``) or ``$SPOTWISE_HUAWEI_OBS_URL``; the keys are the user's
(``HUAWEICLOUD_SDK_AK``/``_SK``) where set, else the server's agency's, from its metadata."""

from __future__ import annotations

import os
from typing import Any

from s3fs import S3FileSystem

REGION_VARIABLE = "SPOTWISE_HUAWEI_REGION"


class ObsFileSystem(S3FileSystem):
    """s3fs with OBS's endpoint and Huawei Cloud's keys, under the ``obs`` protocol."""

    protocol = ("obs",)
    cachable = False
    """Its endpoint and keys come from the environment, which fsspec's instance cache does not
    see: a cached instance would outlive a change of them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from spotwise.executor.clouds.huawei.obs import obs_url

        region = os.environ.get(REGION_VARIABLE, "")
        if not region and not os.environ.get("SPOTWISE_HUAWEI_OBS_URL"):
            raise ValueError(
                f"obs:// needs the bucket's region: set {REGION_VARIABLE} (the boot script does "
                "on a server) or SPOTWISE_HUAWEI_OBS_URL"
            )
        client = dict(kwargs.pop("client_kwargs", None) or {})
        client.setdefault("endpoint_url", obs_url(region))
        client.setdefault("region_name", region or "us-east-1")
        if "key" not in kwargs:
            kwargs.update(_keys())
        super().__init__(*args, client_kwargs=client, **kwargs)


def _keys() -> dict[str, str | None]:
    """The user's keys where set, else the server's agency's."""
    if os.environ.get("HUAWEICLOUD_SDK_AK") and os.environ.get("HUAWEICLOUD_SDK_SK"):
        return {"key": os.environ["HUAWEICLOUD_SDK_AK"], "secret": os.environ["HUAWEICLOUD_SDK_SK"]}
    from spotwise.core.settings import endpoint_url
    from spotwise.executor.clouds.huawei.agency import agency_keys
    from spotwise.executor.clouds.huawei.notice import METADATA

    keys = agency_keys(endpoint_url(METADATA))
    return {"key": keys["access"], "secret": keys["secret"], "token": keys.get("securitytoken")}

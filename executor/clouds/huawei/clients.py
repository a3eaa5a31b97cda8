"""The ECS client a Huawei Cloud job uses: the user's credentials from the SDK's chain
(``HUAWEICLOUD_SDK_AK``/``_SK``, its credentials file), the target's project, the region's
endpoint or the target's ``endpoint_url`` (a local fake)."""

from __future__ import annotations

from typing import Any

from spotwise.executor.clouds.huawei.target import HuaweiTarget
from spotwise.executor.errors import ExecutorError

INSTALL = "pip install 'spotwise[huawei]'"


def ecs_client(target: HuaweiTarget, who: str) -> Any:
    """An ECS client of the target's project and region.

    Raises:
        ExecutorError: in one line, without the SDK, a project or credentials (``who`` says
            what needed them).
    """
    project = target.require_account(who)
    try:
        from huaweicloudsdkcore.auth.credentials import BasicCredentials
        from huaweicloudsdkcore.auth.provider import CredentialProviderChain
        from huaweicloudsdkecs.v2 import EcsClient
    except ImportError:
        raise ExecutorError(f"{who} needs Huawei Cloud's SDK: {INSTALL}") from None
    try:
        found = CredentialProviderChain.get_basic_credential_provider_chain().get_credentials()
    except Exception:  # the chain raises its own kinds when it finds none
        raise ExecutorError(
            f"{who}: no Huawei Cloud credentials; set HUAWEICLOUD_SDK_AK and HUAWEICLOUD_SDK_SK "
            "(an IAM user's access key: docs/huawei.md)"
        ) from None
    credentials = BasicCredentials(found.ak, found.sk, project)
    endpoint = target.endpoint_url or f"https://ecs.{target.region}.myhuaweicloud.com"
    return EcsClient.new_builder().with_credentials(credentials).with_endpoints([endpoint]).build()


def ecs_call(what: str, call: Any) -> Any:
    """``call()``, an ECS error said in one line naming ``what``.

    Raises:
        ExecutorError: with ECS's code and message.
    """
    from huaweicloudsdkcore.exceptions.exceptions import SdkException

    try:
        return call()
    except SdkException as failed:
        code = getattr(failed, "error_code", "") or ""
        message = getattr(failed, "error_msg", "") or str(failed)
        raise ExecutorError(f"{what}: ECS answered {code} {message}"[:400]) from None

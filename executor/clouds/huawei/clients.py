"""The ECS and CSMS clients a Huawei Cloud job uses: the user's credentials from the SDK's chain
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
    try:
        from huaweicloudsdkecs.v2 import EcsClient
    except ImportError:
        raise ExecutorError(f"{who} needs Huawei Cloud's SDK: {INSTALL}") from None
    return _client(EcsClient, "ecs", target, who)


def csms_client(target: HuaweiTarget, who: str) -> Any:
    """A CSMS (secrets) client of the target's project and region.

    Raises:
        ExecutorError: in one line, without the SDK, a project or credentials.
    """
    try:
        from huaweicloudsdkcsms.v1 import CsmsClient
    except ImportError:
        raise ExecutorError(f"{who} needs Huawei Cloud's SDK: {INSTALL}") from None
    return _client(CsmsClient, "csms", target, who)


def _client(kind: Any, service: str, target: HuaweiTarget, who: str) -> Any:
    project = target.require_account(who)
    from huaweicloudsdkcore.auth.credentials import BasicCredentials
    from huaweicloudsdkcore.auth.provider import CredentialProviderChain

    try:
        found = CredentialProviderChain.get_basic_credential_provider_chain().get_credentials()
    except Exception:  # the chain raises its own kinds when it finds none
        raise ExecutorError(
            f"{who}: no Huawei Cloud credentials; set HUAWEICLOUD_SDK_AK and HUAWEICLOUD_SDK_SK "
            "(an IAM user's access key: docs/huawei.md)"
        ) from None
    credentials = BasicCredentials(found.ak, found.sk, project)
    endpoint = target.endpoint_url or f"https://{service}.{target.region}.myhuaweicloud.com"
    return kind.new_builder().with_credentials(credentials).with_endpoints([endpoint]).build()


def sdk_call(what: str, call: Any) -> Any:
    """``call()``, an ECS or CSMS error said in one line naming ``what``.

    Raises:
        ExecutorError: with ECS's code and message.
    """
    from huaweicloudsdkcore.exceptions.exceptions import SdkException

    try:
        return call()
    except SdkException as failed:
        code = getattr(failed, "error_code", "") or ""
        message = getattr(failed, "error_msg", "") or str(failed)
        raise ExecutorError(f"{what}: Huawei Cloud answered {code} {message}"[:400]) from None

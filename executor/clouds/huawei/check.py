"""``spotwise check huawei``: is the project ready for ``--launcher huawei``, one check per
requirement as soon as it is decided: the credentials (ECS answers), the bucket, spot selling of
the flavor in the zones, CSMS, and what this cannot see (the agency's rights, the image's
Python), each with its fix."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from spotwise.executor.clouds.base import Check
from spotwise.executor.clouds.huawei.target import HuaweiTarget

DOCS = "docs/huawei.md"


def checks(
    target: HuaweiTarget, ecs: Callable[[], Any], obs: Callable[[], Any], csms: Callable[[], Any]
) -> Iterator[Check]:
    """The checks of ``target``, credentials first; the clients are made when first needed."""
    from huaweicloudsdkecs.v2 import ListFlavorSellPoliciesRequest

    try:
        client = ecs()
        policies = (
            client.list_flavor_sell_policies(
                ListFlavorSellPoliciesRequest(flavor_id=target.instance_type, sell_mode="spot")
            ).sell_policies
            or []
        )
    except Exception as failed:  # the SDK's errors, or no credentials (ExecutorError)
        yield Check(
            "credentials",
            "missing",
            str(getattr(failed, "error_msg", failed))[:200],
            fix=f"set HUAWEICLOUD_SDK_AK and _SK of a user with the rights of {DOCS}",
        )
        return
    yield Check("credentials", "ok", f"ECS answers in project {target.project_id}")
    yield _bucket(target, obs)
    selling = {p.availability_zone_id for p in policies if p.sell_status == "available"}
    zones = target.zones_or_default
    if selling & set(zones):
        yield Check(
            "spot capacity",
            "ok",
            f"{target.instance_type} sells spot in {', '.join(sorted(selling & set(zones)))}",
        )
    else:
        yield Check(
            "spot capacity",
            "unknown",
            f"{target.instance_type} sells spot in none of {', '.join(zones)} now",
            fix="try other --pools, or --market on-demand; spotwise collect huawei shows where",
        )
    yield _secrets(csms)
    yield Check(
        "agency",
        "unknown",
        f"{target.agency or 'none given'}: IAM's agencies are not read here",
        fix=f"give the agency OBS rights on the bucket and CSMS read ({DOCS})",
        flag="" if target.agency else "--identity",
    )


def _bucket(target: HuaweiTarget, obs: Callable[[], Any]) -> Check:
    if not target.bucket:
        return Check("bucket", "skipped", "no --bucket given", flag="--bucket")
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        obs().head_bucket(Bucket=target.bucket)
    except (ClientError, BotoCoreError) as exc:
        return Check(
            "bucket",
            "missing",
            f"obs://{target.bucket}: {str(exc)[:160]}",
            fix=f"spotwise setup huawei --project {target.project_id} --bucket {target.bucket}",
        )
    return Check("bucket", "ok", f"obs://{target.bucket} is there")


def _secrets(csms: Callable[[], Any]) -> Check:
    from huaweicloudsdkcsms.v1 import ListSecretsRequest

    try:
        csms().list_secrets(ListSecretsRequest(limit="1"))
    except Exception as failed:  # the SDK's errors
        return Check(
            "secrets (CSMS)",
            "missing",
            str(getattr(failed, "error_msg", failed))[:200],
            fix=f"give the user CSMS rights ({DOCS}); a job with --secret needs them",
        )
    return Check("secrets (CSMS)", "ok", "CSMS answers")

"""The job's OBS bucket through its S3 API: the shipped code uploaded once per content (the
bundles of :mod:`executor.clouds.code_bundle`), and a checkpoint folder's bytes."""

from __future__ import annotations

from typing import Any

from spotwise.executor.clouds.code_bundle import Bundle
from spotwise.executor.errors import ExecutorError


def upload(obs: Any, bucket: str, bundle: Bundle) -> bool:
    """Put ``bundle`` in the bucket unless its content is there already; whether it was put.

    Raises:
        ExecutorError: when the bucket cannot be reached, read or written (says which and why).
    """
    from boto3.exceptions import S3UploadFailedError
    from botocore.exceptions import BotoCoreError, ClientError

    where = f"obs://{bucket}/{bundle.key}"
    try:
        obs.head_object(Bucket=bucket, Key=bundle.key)
        return False
    except ClientError as exc:
        if exc.response["Error"]["Code"] not in ("404", "NoSuchKey", "NotFound"):
            raise ExecutorError(f"{where}: {exc}") from exc
    except BotoCoreError as exc:
        raise ExecutorError(f"{where}: {exc}; check --region and SPOTWISE_HUAWEI_OBS_URL") from exc
    try:
        obs.upload_file(str(bundle.path), bucket, bundle.key)
    except (ClientError, BotoCoreError, S3UploadFailedError) as exc:
        raise ExecutorError(f"cannot upload to {where}: {exc}") from exc
    return True


def folder_bytes(obs: Any, bucket: str, prefix: str, where: str) -> int:
    """The bytes of the objects under ``prefix`` (``where``: its URL, for the error).

    Raises:
        ExecutorError: when the bucket cannot be listed.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    pages = obs.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    try:
        return sum(item["Size"] for page in pages for item in page.get("Contents", ()))
    except (BotoCoreError, ClientError) as exc:
        raise ExecutorError(f"sizing {where[:120]}: {exc}") from None

"""The shipped code in the job's S3 bucket: the workdir tarball and the Spotwise wheel of
:mod:`executor.clouds.code_bundle`, each uploaded once per content."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from boto3.exceptions import S3UploadFailedError
from botocore.exceptions import BotoCoreError, ClientError

from spotwise.executor.clouds import code_bundle
from spotwise.executor.clouds.code_bundle import DEFAULT_MAX_MB, Bundle, ShippedCode
from spotwise.executor.errors import ExecutorError


def upload(s3: Any, bucket: str, bundle: Bundle) -> bool:
    """Put ``bundle`` in the bucket unless its content is there already; whether it was put.

    Raises:
        ExecutorError: when the bucket cannot be reached, read or written (says which and why).
    """
    where = f"s3://{bucket}/{bundle.key}"
    try:
        s3.head_object(Bucket=bucket, Key=bundle.key)
        return False
    except ClientError as exc:
        if exc.response["Error"]["Code"] not in ("404", "NoSuchKey", "NotFound"):
            raise ExecutorError(f"{where}: {exc}") from exc
    except BotoCoreError as exc:
        raise ExecutorError(f"{where}: {exc}; check --region and --endpoint-url") from exc
    try:
        s3.upload_file(str(bundle.path), bucket, bundle.key)
    except (ClientError, BotoCoreError, S3UploadFailedError) as exc:
        raise ExecutorError(f"cannot upload to {where}: {exc}") from exc
    return True


def ship(
    s3: Any,
    bucket: str,
    workdir: Path,
    *,
    ignore_file: Path | None = None,
    wheel: Path | None = None,
    max_mb: float = DEFAULT_MAX_MB,
    say: Callable[[str], None] = lambda _: None,
) -> ShippedCode:
    """Pack the workdir, build (or take) the wheel, upload what the bucket lacks."""
    return code_bundle.ship(
        lambda bundle: upload(s3, bucket, bundle),
        f"s3://{bucket}",
        workdir,
        ignore_file=ignore_file,
        wheel=wheel,
        max_mb=max_mb,
        say=say,
    )

"""``spotwise setup huawei``: the project's side of ``--launcher huawei``, made once by someone
allowed to: a private OBS bucket (through OBS's S3 API). The servers' agency (OBS on the bucket,
CSMS's secrets) is made in IAM by hand from docs/huawei.md: Spotwise does not hold IAM rights.
Running it again changes nothing and says "found"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spotwise.executor.errors import ExecutorError

CHECKPOINT_PREFIX = "spotwise/checkpoints"
"""Where in the bucket checkpoints go."""


def make_bucket(obs: Any, bucket: str, region: str, say: Callable[[str], None]) -> None:
    """The bucket, private (made, or found).

    Raises:
        ExecutorError: when OBS refuses, naming the bucket.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        try:
            obs.head_bucket(Bucket=bucket)
            made = "found"
        except ClientError as exc:
            if exc.response["Error"]["Code"] not in ("404", "NoSuchBucket", "NotFound"):
                raise
            obs.create_bucket(
                Bucket=bucket,
                ACL="private",
                CreateBucketConfiguration={"LocationConstraint": region},
            )
            made = "made"
    except (ClientError, BotoCoreError) as exc:
        raise ExecutorError(f"setup huawei: OBS bucket {bucket}: {exc}"[:400]) from None
    say(f"bucket obs://{bucket} in {region}: {made}, private")

"""AWS's side of the on-instance agent (:mod:`executor.clouds.agent`), which runs on a job's EC2
instance once the boot script (:mod:`executor.clouds.aws.boot_script`) has made its venv: the
log chunks and the exit code go to S3 and the secrets come from SSM, with the instance role;
the notice is IMDS's.

This module imports only the standard library at the top: ``python -m
spotwise.executor.clouds.aws.on_instance requirements`` runs before the instance's
requirements exist.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from spotwise.executor.clouds.agent import CloudAgent, main

if TYPE_CHECKING:
    from spotwise.executor.notices import NoticeSource


class AwsAgent(CloudAgent):
    """The job's S3 bucket, its SSM parameters and IMDS's notice, with the instance role
    (boto3 is in the ``instance`` extra)."""

    module = "spotwise.executor.clouds.aws.on_instance"
    store = "S3"
    secret_form = "NAME=SSM_PARAMETER"

    def __init__(self, args: argparse.Namespace) -> None:
        import boto3

        self.bucket = args.bucket
        self.s3 = boto3.client("s3")

    @classmethod
    def add_options(cls, runner: argparse.ArgumentParser) -> None:
        """``--bucket``, the job's."""
        runner.add_argument("--bucket", required=True)

    def put_object(self, key: str, body: bytes) -> None:
        """Put ``body`` at ``key`` in the bucket."""
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=body)

    def secret_reader(self) -> Callable[[str], str]:
        """An SSM parameter's decrypted value."""
        import boto3

        ssm = boto3.client("ssm")

        def read(parameter: str) -> str:
            return ssm.get_parameter(Name=parameter, WithDecryption=True)["Parameter"]["Value"]

        return read

    def notice_source(self) -> NoticeSource:
        """IMDS ($SPOTWISE_AWS_IMDS_URL overrides where it is asked)."""
        from spotwise.executor.clouds.aws.notice import AwsImds

        return AwsImds.from_env()


if __name__ == "__main__":
    sys.exit(main(AwsAgent))

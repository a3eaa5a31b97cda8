"""AWS through the cloud seam (:class:`~executor.clouds.base.Cloud`): EC2 instances tagged with
the ledger's job id, code and logs in S3, secrets in SSM Parameter Store, the IMDS two-minute
notice."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spotwise.executor.clouds.aws.notice import AwsImds
from spotwise.executor.clouds.aws.target import AwsTarget
from spotwise.executor.clouds.base import (
    Check,
    CloudOptions,
    CloudTarget,
    Say,
    SetUp,
    bucket_folder,
)
from spotwise.executor.errors import ExecutorError

if TYPE_CHECKING:
    from spotwise.executor.clouds.aws.gc import AwsSweep
    from spotwise.executor.clouds.aws.launcher import AwsLauncher
    from spotwise.executor.clouds.code_bundle import Code, ShippedCode


def _aws(target: CloudTarget) -> AwsTarget:
    if not isinstance(target, AwsTarget):
        raise ExecutorError(f"the aws cloud was given {target.cloud}'s settings")
    return target


class AwsCloud:
    """Amazon EC2, S3, SSM and IAM (boto3; ``endpoint_url`` reaches moto's server)."""

    name = "aws"
    storage_scheme = "s3"
    notice_kind = AwsImds
    notice_s = AwsImds.notice_s
    """Its notice source's window (its notice.py defines it, once)."""
    docs = "docs/aws.md"

    def target(self, options: CloudOptions) -> AwsTarget:
        """The AWS settings the shared options name."""
        return AwsTarget.from_options(options)

    def target_from_dict(self, data: Mapping[str, Any]) -> AwsTarget:
        """The AWS settings back from their JSON."""
        return AwsTarget.from_dict(data)

    def session(self, target: CloudTarget, who: str) -> Any:
        """A boto3 session with credentials (an ExecutorError in one line without)."""
        from spotwise.executor.clouds.aws.launcher import aws_session

        return aws_session(_aws(target).region, who)

    def _client(self, target: CloudTarget, service: str, who: str) -> Any:
        aws = _aws(target)
        session = self.session(aws, who)
        return session.client(service, region_name=aws.region, endpoint_url=aws.endpoint_url)

    def ship_code(
        self, target: CloudTarget, *, ignore_file: Path | None = None, wheel: Path | None = None
    ) -> ShippedCode:
        """Ship the workdir and a Spotwise wheel to the bucket, once for any number of jobs.

        Raises:
            ExecutorError: when the settings are incomplete, or the code cannot be shipped.
        """
        from spotwise.executor.clouds.aws.shipping import ship

        aws = _aws(target)
        aws.require_complete()
        return ship(
            self._client(aws, "s3", "--launcher aws"),
            str(aws.bucket),
            Path(aws.workdir),
            ignore_file=ignore_file,
            wheel=wheel,
            say=lambda line: print(f"shipping {line}", file=sys.stderr),
        )

    def launcher(
        self,
        target: CloudTarget,
        code: Code,
        secrets: dict[str, str] | None = None,
        *,
        job_id: str,
    ) -> AwsLauncher:
        """A launcher of job ``job_id``'s instances (the ledger's id: ``gc aws`` judges an
        instance by it).

        Raises:
            ExecutorError: without a job id.
        """
        from spotwise.executor.clouds.aws.launcher import AwsLauncher
        from spotwise.executor.clouds.code_bundle import shipped

        aws = _aws(target)
        if not job_id:
            raise ExecutorError("an AWS launcher needs the ledger's job id (new_job_id())")
        return AwsLauncher(
            session=self.session(aws, "--launcher aws"),
            region=aws.region,
            zones=list(aws.zones_or_default),
            instance_type=aws.instance_type,
            image_id=str(aws.image_id),
            bucket=str(aws.bucket),
            job_id=job_id,
            code=shipped(code, self.name),
            setup=aws.setup,
            python=aws.python,
            endpoint_url=aws.endpoint_url,
            instance_profile=aws.instance_profile,
            secrets=secrets or {},
            security_groups=aws.security_groups,
            max_price=aws.max_price,
        )

    def job_instances(self, target: CloudTarget, job_id: str) -> list[str]:
        """Job ``job_id``'s instances that are not terminated, by its tag."""
        from spotwise.executor.clouds.aws.gc import JOB_TAG, LIVE_STATES

        ec2 = self._client(target, "ec2", "jobs")
        pages = ec2.get_paginator("describe_instances").paginate(
            Filters=[
                {"Name": f"tag:{JOB_TAG}", "Values": [job_id]},
                {"Name": "instance-state-name", "Values": list(LIVE_STATES)},
            ]
        )
        return [
            i["InstanceId"] for page in pages for r in page["Reservations"] for i in r["Instances"]
        ]

    def checkpoint_url(self, target: CloudTarget, run: str) -> str:
        """``s3://BUCKET/spotwise/checkpoints/RUN``: where ``setup aws``'s role may write."""
        from spotwise.executor.clouds.aws.setup import CHECKPOINT_PREFIX

        return f"s3://{_aws(target).bucket}/{CHECKPOINT_PREFIX}/{run}"

    def checkpoint_bytes(self, target: CloudTarget, url: str) -> int:
        """The bytes of the objects under ``url``, a folder of the bucket (S3's listing).

        Raises:
            ExecutorError: for a URL outside the bucket, or when S3 cannot be listed.
        """
        from botocore.exceptions import BotoCoreError, ClientError

        aws = _aws(target)
        prefix = bucket_folder(url, self.storage_scheme, str(aws.bucket))
        pages = self._client(aws, "s3", "sizing checkpoints").get_paginator("list_objects_v2")
        try:
            return sum(
                item["Size"]
                for page in pages.paginate(Bucket=aws.bucket, Prefix=prefix)
                for item in page.get("Contents", ())
            )
        except (BotoCoreError, ClientError) as exc:
            raise ExecutorError(f"sizing {url[:120]}: {exc}") from None

    def set_up(self, target: CloudTarget, say: Say) -> SetUp:
        """A private bucket, the instances' role and profile, the nodes' security group.

        Raises:
            ExecutorError: without a bucket, or when AWS refuses a step.
        """
        from spotwise.executor.clouds.aws.setup import set_up

        aws = _aws(target)
        if not aws.bucket:
            raise ExecutorError("setup aws needs --bucket: the bucket to make (or reuse)")
        role = aws.instance_profile or "spotwise-instance"
        made: list[str] = []

        def tell(line: str) -> None:
            made.append(line)
            say(line)

        group = set_up(
            self.session(aws, "setup aws"),
            aws.region,
            aws.bucket,
            role,
            endpoint_url=aws.endpoint_url,
            say=tell,
        )
        return SetUp(
            made=tuple(made),
            next_steps=(
                "give the credentials spotwise runs with the policy for that machine "
                f"({self.docs}), then",
                f"  spotwise check aws --region {aws.region} --bucket {aws.bucket} "
                f"--instance-profile {role} --image-id AMI",
                "(an elastic job's nodes: spotwise run --launcher aws --nodes MIN:MAX "
                f"--security-group {group} ...)",
            ),
        )

    def check(self, target: CloudTarget) -> Iterator[Check]:
        """Credentials, bucket, AMI, instance profile, spot quota, every permission."""
        from spotwise.executor.clouds.aws.check import AwsCheck

        aws = _aws(target)
        return AwsCheck(
            self.session(aws, "check aws"),
            aws.region,
            bucket=aws.bucket,
            image_id=aws.image_id,
            instance_profile=aws.instance_profile,
            instance_type=aws.instance_type,
            endpoint_url=aws.endpoint_url,
        ).run()

    def sweep(self, target: CloudTarget) -> AwsSweep:
        """``gc aws``'s pass over the region: its EC2 and SSM clients, with credentials.

        Raises:
            ExecutorError: in one line, without credentials.
        """
        from spotwise.executor.clouds.aws.gc import AwsSweep

        aws = _aws(target)
        return AwsSweep(
            self._client(aws, "ec2", "gc aws"),
            self._client(aws, "ssm", "gc aws"),
            aws.region,
            aws.endpoint_url,
        )

"""``spotwise setup aws``: the account's side of ``--launcher aws``, made once by someone allowed
to: a private bucket, and the instances' role with its instance profile and least policy
(:func:`instance_role_policy`, the one ``docs/aws.md`` shows). Each step says whether it made
the resource or found it; running it again changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from spotwise.executor.errors import ExecutorError

ROLE_POLICY_NAME = "spotwise-instance"
PUBLIC_ACCESS_BLOCKS = (
    "BlockPublicAcls",
    "IgnorePublicAcls",
    "BlockPublicPolicy",
    "RestrictPublicBuckets",
)
TRUST_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "ec2.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}
"""Who may take the role: EC2 instances."""


def instance_role_policy(bucket: str, account: str) -> dict[str, Any]:
    """What an instance may do: read its job's secrets, fetch the code, send logs and exit
    codes."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "ReadJobSecrets",
                "Effect": "Allow",
                "Action": ["ssm:GetParameter"],
                "Resource": f"arn:aws:ssm:*:{account}:parameter/spotwise/*",
            },
            {
                "Sid": "FetchTheCode",
                "Effect": "Allow",
                "Action": ["s3:GetObject"],
                "Resource": f"arn:aws:s3:::{bucket}/spotwise/code/*",
            },
            {
                "Sid": "SendLogsAndExitCodes",
                "Effect": "Allow",
                "Action": ["s3:PutObject"],
                "Resource": f"arn:aws:s3:::{bucket}/spotwise/jobs/*",
            },
        ],
    }


def _make_or_find(make: Callable[[], object], exists: str) -> str:
    """Call ``make``: "made", or "found" when AWS answers ``exists`` (it was there already)."""
    try:
        make()
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != exists:
            raise
        return "found"
    return "made"


def set_up(
    session: Any,
    region: str,
    bucket: str,
    role: str,
    *,
    endpoint_url: str | None = None,
    say: Callable[[str], None] = lambda _: None,
) -> None:
    """Make the bucket (private), the role, its policy and its instance profile.

    Raises:
        ExecutorError: when AWS refuses a step (which, and why).
    """
    sts, s3, iam = (
        session.client(name, region_name=region, endpoint_url=endpoint_url)
        for name in ("sts", "s3", "iam")
    )
    step = "reading the account"
    try:
        account = sts.get_caller_identity()["Account"]
        step = f"making the bucket s3://{bucket}"
        where = {"LocationConstraint": region} if region != "us-east-1" else None
        made = _make_or_find(
            lambda: s3.create_bucket(
                Bucket=bucket, **({"CreateBucketConfiguration": where} if where else {})
            ),
            "BucketAlreadyOwnedByYou",
        )
        s3.put_public_access_block(
            Bucket=bucket,
            PublicAccessBlockConfiguration=dict.fromkeys(PUBLIC_ACCESS_BLOCKS, True),
        )
        say(f"bucket s3://{bucket} in {region}: {made}, public access blocked")
        step = f"making the role {role}"
        made = _make_or_find(
            lambda: iam.create_role(
                RoleName=role,
                AssumeRolePolicyDocument=json.dumps(TRUST_POLICY),
                Description="Spotwise job instances: fetch code, send logs, read job secrets",
            ),
            "EntityAlreadyExists",
        )
        iam.put_role_policy(
            RoleName=role,
            PolicyName=ROLE_POLICY_NAME,
            PolicyDocument=json.dumps(instance_role_policy(bucket, account)),
        )
        say(f"role {role}: {made}, policy {ROLE_POLICY_NAME} set (docs/aws.md)")
        step = f"making the instance profile {role}"
        made = _make_or_find(
            lambda: iam.create_instance_profile(InstanceProfileName=role), "EntityAlreadyExists"
        )
        profile = iam.get_instance_profile(InstanceProfileName=role)["InstanceProfile"]
        if role not in [r["RoleName"] for r in profile.get("Roles", [])]:
            iam.add_role_to_instance_profile(InstanceProfileName=role, RoleName=role)
        say(f"instance profile {role}: {made}, with the role {role}")
    except ClientError as exc:
        raise ExecutorError(f"setup aws: {step}: {exc}") from exc

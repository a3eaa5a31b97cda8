"""``spotwise setup aws``: the account's side of ``--launcher aws``, made once by someone allowed
to: a private bucket, the instances' role with its instance profile and least policy
(:func:`instance_role_policy`, the one ``docs/aws.md`` shows), and the security group an
elastic job's nodes share (:data:`NODES_GROUP`: every TCP port open to its own members only,
for the rendezvous, the workers' store and gloo/NCCL). Each step says whether it made the
resource or found it; running it again changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from spotwise.executor.errors import ExecutorError

ROLE_POLICY_NAME = "spotwise-instance"
CHECKPOINT_PREFIX = "spotwise/checkpoints"
"""Where in the bucket the instance role may write, list, read and delete checkpoints: every
checkpoint Spotwise picks on S3 (a sweep's trials') lies under it."""
NODES_GROUP = "spotwise-nodes"
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
            {
                "Sid": "Checkpoints",
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
                "Resource": f"arn:aws:s3:::{bucket}/{CHECKPOINT_PREFIX}/*",
            },
            {
                "Sid": "ListCheckpoints",
                "Effect": "Allow",
                "Action": ["s3:ListBucket"],
                "Resource": f"arn:aws:s3:::{bucket}",
                "Condition": {"StringLike": {"s3:prefix": f"{CHECKPOINT_PREFIX}/*"}},
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
) -> str:
    """Make the bucket (private), the role, its policy and its instance profile, and the nodes'
    security group in the default VPC; the group's id.

    Raises:
        ExecutorError: when AWS refuses a step (which, and why).
    """
    sts, s3, iam, ec2 = (
        session.client(name, region_name=region, endpoint_url=endpoint_url)
        for name in ("sts", "s3", "iam", "ec2")
    )
    step = "reading the account"
    try:
        account = sts.get_caller_identity()["Account"]
        step = f"making the bucket s3://{bucket}"
        made = _bucket(s3, bucket, region)
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
        step = f"making the security group {NODES_GROUP}"
        group, made = _nodes_group(ec2)
        say(f"security group {NODES_GROUP} ({group}): {made}, TCP open to its own members only")
    except ClientError as exc:
        raise ExecutorError(f"setup aws: {step}: {exc}") from exc
    return group


def _bucket(s3: Any, bucket: str, region: str) -> str:
    """The bucket: "found" when this account has it already (in us-east-1, CreateBucket of a
    bucket one owns succeeds again, so asking first is the only way to tell), else "made"."""
    try:
        s3.head_bucket(Bucket=bucket)
        return "found"
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket", "NotFound"):
            raise  # 403: a bucket of another account's, by that name
    where = {"LocationConstraint": region} if region != "us-east-1" else None
    return _make_or_find(
        lambda: s3.create_bucket(
            Bucket=bucket, **({"CreateBucketConfiguration": where} if where else {})
        ),
        "BucketAlreadyOwnedByYou",
    )


def _nodes_group(ec2: Any) -> tuple[str, str]:
    """The nodes' security group in the default VPC (made, or found by name), with its one
    rule: every TCP port from members of the group."""
    vpcs = ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"]
    if not vpcs:
        raise ExecutorError(
            f"setup aws: no default VPC in this region to put {NODES_GROUP} in; make a group "
            "that opens every TCP port to its own members and pass it with --security-group"
        )
    vpc = vpcs[0]["VpcId"]
    found = ec2.describe_security_groups(
        Filters=[
            {"Name": "group-name", "Values": [NODES_GROUP]},
            {"Name": "vpc-id", "Values": [vpc]},
        ]
    )["SecurityGroups"]
    if found:
        group, made = found[0]["GroupId"], "found"
    else:
        group = ec2.create_security_group(
            GroupName=NODES_GROUP,
            Description="Spotwise elastic job nodes: TCP between members only",
            VpcId=vpc,
        )["GroupId"]
        made = "made"
    _make_or_find(
        lambda: ec2.authorize_security_group_ingress(
            GroupId=group,
            IpPermissions=[
                {
                    "IpProtocol": "tcp",
                    "FromPort": 0,
                    "ToPort": 65535,
                    "UserIdGroupPairs": [{"GroupId": group}],
                }
            ],
        ),
        "InvalidPermission.Duplicate",
    )
    return group, made

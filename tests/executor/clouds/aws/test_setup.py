"""docs/aws.md's IAM policies allow every AWS call the code makes: read off the code, not a
list kept by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path

from spotwise.executor.clouds.aws.setup import instance_role_policy

ROOT = Path(__file__).resolve().parents[4]
CONTROLLER_CODE = [
    ROOT / "executor/clouds/aws/launcher.py",
    ROOT / "executor/clouds/aws/shipping.py",
    ROOT / "executor/clouds/aws/cloud.py",
    ROOT / "executor/clouds/aws/gc.py",
    ROOT / "pricing/clouds/aws/spot_prices.py",
    ROOT / "pricing/clouds/aws/price_list.py",
]
INSTANCE_CODE = [
    ROOT / "executor/clouds/aws/on_instance.py",
    ROOT / "executor/clouds/aws/boot_script.py",
]
CHECK_CODE = [ROOT / "executor/clouds/aws/check.py"]
SETUP_CODE = [ROOT / "executor/clouds/aws/setup.py"]
SERVICES = {
    "ec2": "ec2",
    "s3": "s3",
    "ssm": "ssm",
    "client": "ec2",
    "sts": "sts",
    "iam": "iam",
    "quotas": "servicequotas",
    "pricing": "pricing",
}
"""The name a boto3 client goes by in the code → its IAM service (the collector's ``client``
is EC2's)."""
IAM_NAMES = {
    "s3:HeadObject": "s3:GetObject",
    "s3:HeadBucket": "s3:ListBucket",
    "s3:PutPublicAccessBlock": "s3:PutBucketPublicAccessBlock",
    "s3:DownloadFile": "s3:GetObject",
    "s3:UploadFile": "s3:PutObject",
    "s3:ListObjectsV2": "s3:ListBucket",
}
"""boto3 calls whose IAM action has another name."""
CLI_CALLS = {r'aws s3 cp --quiet "s3://': "s3:GetObject", r'aws s3 cp --quiet "$3"': "s3:PutObject"}
"""What the boot script runs with the AWS CLI when the AMI's Python lacks boto3."""
CHECKPOINT_CODE = [
    ROOT / "executor/checkpoint/storage.py",
    ROOT / "executor/checkpoint/distributed.py",
]
FSSPEC_ACTIONS: dict[str, str | None] = {
    "cat_file": "s3:GetObject",
    "open": "s3:GetObject",
    "pipe_file": "s3:PutObject",
    "put_file": "s3:PutObject",
    "rm": "s3:DeleteObject",
    "ls": "s3:ListBucket",
    "find": "s3:ListBucket",
    "glob": "s3:ListBucket",
    "exists": "s3:ListBucket",
    "_strip_protocol": None,
    "invalidate_cache": None,
}
"""What the checkpoints' fsspec calls are on S3 (s3fs; a missing key's HEAD needs
``s3:ListBucket`` to answer 404 rather than 403); None: no call to S3."""


def _camel(snake: str) -> str:
    return "".join(part.capitalize() for part in snake.split("_"))


def boto3_actions(paths: list[Path]) -> set[str]:
    """IAM actions of every boto3 call in ``paths``, and what they imply."""
    actions = set()
    for path in paths:
        text = path.read_text()
        clients = "|".join(SERVICES)
        # a client by its name, or held as a private attribute (self._ssm)
        calls = re.findall(rf"(?<!\w)_?({clients})\.(?!get_paginator)(\w+)\(", text)
        calls += re.findall(rf'(?<!\w)_?({clients})\.get_paginator\("(\w+)"\)', text)
        for client, method in calls:
            action = f"{SERVICES[client]}:{_camel(method)}"
            actions.add(IAM_NAMES.get(action, action))
        if "TagSpecifications" in text:
            actions.add("ec2:CreateTags")  # tags at launch need it
        if "IamInstanceProfile" in text:
            actions.add("iam:PassRole")
        if re.search(r"put_parameter\([^)]*\bTags=", text):
            actions.add("ssm:AddTagsToResource")  # tags at creation need it
        actions |= {action for command, action in CLI_CALLS.items() if command in text}
    return actions


def fsspec_actions(paths: list[Path]) -> set[str]:
    """IAM actions of the fsspec calls (``fs.NAME(``) in ``paths``, and of DCP's fsspec
    writer and reader (write, list, read)."""
    actions = set()
    for path in paths:
        text = path.read_text()
        for method in re.findall(r"\bfs\.(\w+)\(", text):
            assert method in FSSPEC_ACTIONS, f"{path.name}: fs.{method}: add its IAM action"
            if (action := FSSPEC_ACTIONS[method]) is not None:
                actions.add(action)
        if "FsspecWriter" in text:
            actions |= {"s3:PutObject", "s3:GetObject", "s3:ListBucket"}
    return actions


def documented_policies() -> list[set[str]]:
    """The actions each JSON policy of docs/aws.md allows, in order."""
    doc = (ROOT / "docs/aws.md").read_text()
    policies = []
    for block in re.findall(r"```json\n(.*?)```", doc, flags=re.S):
        statements = json.loads(block)["Statement"]
        policies.append({a for s in statements if s["Effect"] == "Allow" for a in s["Action"]})
    return policies


def test_the_documented_policies_allow_every_call_and_nothing_unused() -> None:
    controller, instance, check, setup = documented_policies()
    called = boto3_actions(CONTROLLER_CODE)
    assert {"ec2:RunInstances", "ec2:DescribeSpotPriceHistory", "s3:PutObject"} <= called
    assert called == controller  # every call allowed, and nothing allowed that is not called
    on_instance = boto3_actions(INSTANCE_CODE) | fsspec_actions(CHECKPOINT_CODE)
    assert on_instance == instance  # the runner's calls, and the guard's checkpoints
    assert {"ssm:GetParameter", "s3:DeleteObject", "s3:ListBucket"} <= instance
    # `spotwise check aws` probes the controller's calls and reads a few things of its own.
    assert boto3_actions(CHECK_CODE) - controller == check
    assert "iam:GetInstanceProfile" in check
    # `spotwise setup aws` (an administrator, once) makes the bucket and the role.
    assert boto3_actions(SETUP_CODE) == setup
    assert {"iam:CreateRole", "s3:PutBucketPublicAccessBlock"} <= setup


def test_the_role_setup_aws_makes_is_the_one_the_docs_show() -> None:
    doc = (ROOT / "docs/aws.md").read_text()
    shown = json.loads(re.findall(r"```json\n(.*?)```", doc, flags=re.S)[1])
    assert shown == instance_role_policy("BUCKET", "ACCOUNT")


def test_a_sweep_trials_checkpoint_lies_where_the_instance_role_may_write_and_list() -> None:
    """An AWS sweep's trials checkpoint under the prefix the role of `setup aws` allows (they
    went to spotwise/sweeps/..., outside it: every checkpoint write would be denied)."""
    from fnmatch import fnmatchcase

    from spotwise.executor.clouds.aws.target import AwsTarget
    from spotwise.executor.sweeps.sweep import cloud_checkpoint

    folder = cloud_checkpoint(AwsTarget(bucket="BUCKET"), "lr-search", 3)
    key = folder.removeprefix("s3://BUCKET/")
    statements = {s["Sid"]: s for s in instance_role_policy("BUCKET", "ACCOUNT")["Statement"]}
    written = statements["Checkpoints"]
    assert {"s3:PutObject", "s3:GetObject", "s3:DeleteObject"} <= set(written["Action"])
    assert fnmatchcase(f"arn:aws:s3:::BUCKET/{key}/0/manifest.json", written["Resource"])
    listed = statements["ListCheckpoints"]["Condition"]["StringLike"]["s3:prefix"]
    assert fnmatchcase(f"{key}/", listed)

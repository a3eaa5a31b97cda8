"""`spotwise setup aws` and `spotwise check aws` against moto's server: setup makes a private
bucket, the instances' role and the nodes' security group once; check, with IAM enforced, shows
a user given docs/aws.md's policies less one permission that permission, and a missing bucket,
each with its fix."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import boto3
import httpx
import pytest

from spotwise.executor.clouds.aws.local import amazon_image
from tests.conftest import CliRun

ROOT = Path(__file__).resolve().parents[4]
REGION, BUCKET, ACCOUNT = "us-east-1", "spotwise-check", "123456789012"


def documented_policies() -> list[dict]:
    text = (ROOT / "docs/aws.md").read_text()
    text = text.replace("ACCOUNT", ACCOUNT).replace("BUCKET", BUCKET).replace("ROLE", "runner")
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", text, flags=re.S)]


def user_keys(moto_server: str, without: str) -> dict[str, str]:
    """A user with the controller's and the check's documented policies, less ``without``."""
    iam = boto3.client("iam", endpoint_url=moto_server, region_name=REGION)
    iam.create_user(UserName="runner")  # once per process: moto's state outlives a test
    controller, _, check, _ = documented_policies()
    for statement in controller["Statement"]:
        statement["Action"] = [a for a in statement["Action"] if a != without]
        if not all(a.startswith("s3:") for a in statement["Action"]):
            # moto matches only S3 requests to resource ARNs (others are "*"), and no conditions
            statement["Resource"] = "*"
            statement.pop("Condition", None)
    for name, policy in (("controller", controller), ("check", check)):
        iam.put_user_policy(UserName="runner", PolicyName=name, PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName="runner")["AccessKey"]
    return {
        "AWS_ACCESS_KEY_ID": key["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
        "AWS_SESSION_TOKEN": "",  # a user's own keys, not a session's
    }


def modern_image(ec2: object) -> str:
    """An image of this account built now (a Python 3.11+ image's stand-in: moto's own images
    are distribution releases of 2017-2018)."""
    made = ec2.run_instances(ImageId=amazon_image(ec2), MinCount=1, MaxCount=1)  # type: ignore[attr-defined]
    instance = made["Instances"][0]["InstanceId"]
    image = ec2.create_image(InstanceId=instance, Name=f"py312-torch-{uuid.uuid4().hex[:8]}")  # type: ignore[attr-defined]
    ec2.terminate_instances(InstanceIds=[instance])  # type: ignore[attr-defined]
    return str(image["ImageId"])


def checks(result: object) -> dict[str, dict[str, str]]:
    return {c["what"]: c for c in json.loads(result.stdout)}  # type: ignore[attr-defined]


@pytest.mark.slow  # CLI subprocesses
def test_check_lists_a_missing_permission_and_a_missing_bucket_with_their_fixes(
    moto_server: str, cli: CliRun
) -> None:
    ec2 = boto3.client("ec2", endpoint_url=moto_server, region_name=REGION)
    image = modern_image(ec2)
    iam = boto3.client("iam", endpoint_url=moto_server, region_name=REGION)
    name = f"check-{uuid.uuid4().hex[:8]}"  # moto's state outlives a test
    iam.create_role(RoleName=name, AssumeRolePolicyDocument="{}")
    iam.create_instance_profile(InstanceProfileName=name)
    iam.add_role_to_instance_profile(InstanceProfileName=name, RoleName=name)
    keys = user_keys(moto_server, without="ssm:DeleteParameter")
    args = [
        *("check", "aws", "--region", REGION, "--endpoint-url", moto_server),
        *("--image-id", image, "--instance-profile", name, "--bucket", BUCKET),
    ]

    # No bucket yet: the line says so and how to make it; the S3 probes wait for it.
    before = cli(*args, env=keys)
    assert before.returncode == 1, before.stderr
    text = cli(*args, "--json", env=keys)
    found = checks(text)
    assert found["bucket"]["status"] == "missing"
    assert found["bucket"]["fix"] == (  # the command Spotwise has, as on GCP and Azure
        f"spotwise setup aws --region {REGION} --bucket {BUCKET} --instance-profile {name}"
    )
    assert found["s3:PutObject"]["status"] == "skipped"
    assert f"✗ bucket: s3://{BUCKET} does not exist" in before.stdout

    boto3.client("s3", endpoint_url=moto_server, region_name=REGION).create_bucket(Bucket=BUCKET)
    httpx.post(f"{moto_server}/moto-api/reset-auth", content=b"0").raise_for_status()
    try:
        after = cli(*args, "--json", env=keys)
    finally:
        httpx.post(f"{moto_server}/moto-api/reset-auth", content=b"inf").raise_for_status()
    found = checks(after)
    assert after.returncode == 1
    assert found["credentials"]["detail"].startswith(f"arn:aws:iam::{ACCOUNT}:user/runner")
    assert found["bucket"]["status"] == "ok"
    assert found["image"]["status"] == "ok"
    assert found["instance profile"]["detail"] == f"{name} (role {name})"
    # The one permission taken away is the one reported missing, with its fix.
    missing = {what for what, c in found.items() if c["status"] == "missing"}
    assert missing == {"ssm:DeleteParameter"}, found
    assert "allow ssm:DeleteParameter" in found["ssm:DeleteParameter"]["fix"]
    for allowed in ("s3:PutObject", "s3:GetObject", "s3:ListBucket"):
        assert found[allowed]["status"] == "ok", found[allowed]
    assert found["ssm:PutParameter, ssm:AddTagsToResource"]["status"] == "ok"
    launch = found["ec2:RunInstances, ec2:CreateTags, iam:PassRole"]
    assert launch == {**launch, "status": "ok", "detail": "allowed (dry run)"}


@pytest.mark.slow  # CLI subprocesses
def test_setup_makes_a_private_bucket_and_the_role_once(moto_server: str, cli: CliRun) -> None:
    bucket, role = f"setup-{uuid.uuid4().hex[:8]}", f"role-{uuid.uuid4().hex[:8]}"
    args = ("setup", "aws", "--region", "eu-west-1", "--bucket", bucket, "--role", role)
    first = cli(*args, "--endpoint-url", moto_server)
    assert first.returncode == 0, first.stderr
    assert f"bucket s3://{bucket} in eu-west-1: made, public access blocked" in first.stdout
    assert f"instance profile {role}: made, with the role {role}" in first.stdout
    again = cli(*args, "--endpoint-url", moto_server)
    assert again.returncode == 0, again.stderr
    assert f"bucket s3://{bucket} in eu-west-1: found" in again.stdout
    assert f"role {role}: found" in again.stdout
    s3 = boto3.client("s3", endpoint_url=moto_server, region_name="eu-west-1")
    blocks = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
    assert all(blocks.values()) and len(blocks) == 4
    assert s3.get_bucket_location(Bucket=bucket)["LocationConstraint"] == "eu-west-1"
    iam = boto3.client("iam", endpoint_url=moto_server, region_name="eu-west-1")
    policy = iam.get_role_policy(RoleName=role, PolicyName="spotwise-instance")
    shown = json.loads(json.dumps(documented_policies()[1]).replace(BUCKET, bucket))
    assert policy["PolicyDocument"] == shown  # the role policy the docs show
    profile = iam.get_instance_profile(InstanceProfileName=role)
    assert [r["RoleName"] for r in profile["InstanceProfile"]["Roles"]] == [role]
    # the nodes' group: every TCP port, from its own members only; found the second time
    made = re.search(r"security group spotwise-nodes \((sg-\w+)\): made", first.stdout)
    assert made is not None, first.stdout
    assert f"security group spotwise-nodes ({made[1]}): found" in again.stdout
    assert f"--security-group {made[1]}" in again.stdout
    ec2 = boto3.client("ec2", endpoint_url=moto_server, region_name="eu-west-1")
    (group,) = ec2.describe_security_groups(GroupIds=[made[1]])["SecurityGroups"]
    (rule,) = group["IpPermissions"]
    assert (rule["IpProtocol"], rule["FromPort"], rule["ToPort"]) == ("tcp", 0, 65535)
    assert [pair["GroupId"] for pair in rule["UserIdGroupPairs"]] == [made[1]]
    assert rule["IpRanges"] == []  # nothing from outside the group


@pytest.mark.slow  # CLI subprocesses
def test_check_refuses_an_image_without_python_311_and_never_says_ready_for_what_it_skipped(
    moto_server: str, cli: CliRun
) -> None:
    ec2 = boto3.client("ec2", endpoint_url=moto_server, region_name=REGION)
    s3 = boto3.client("s3", endpoint_url=moto_server, region_name=REGION)
    trusty = ec2.describe_images(
        Owners=["099720109477"],
        Filters=[{"Name": "name", "Values": ["ubuntu/images/hvm-ssd/ubuntu-trusty-14.04-*"]}],
    )["Images"][0]["ImageId"]
    bucket = f"check-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    base = ("check", "aws", "--region", REGION, "--endpoint-url", moto_server)

    # Nothing given: it says what it did not check, exits 1, and does not claim ready.
    bare = cli(*base)
    assert bare.returncode == 1, bare.stderr
    lines = bare.stdout.splitlines()
    assert "ready" not in lines
    assert lines[-1].startswith("not ready to say: ")
    assert lines[-1].endswith(
        "(bucket, image, instance profile, ec2:RunInstances, ec2:CreateTags, iam:PassRole, "
        "s3:PutObject, s3:GetObject, s3:ListBucket): pass --bucket, --image-id, "
        "--instance-profile to check them"
    )
    assert not [line for line in lines if line.rstrip().endswith(":")], lines  # no dangling colon

    # Ubuntu 14.04 (Python 3.4, built 2017 by its name; moto dates every image today) is not
    # passed, with the fix; the probe object is gone.
    old = cli(*base, "--image-id", trusty, "--bucket", bucket, "--json")
    assert old.returncode == 1
    found = checks(old)
    assert found["image"]["status"] == "unknown"
    assert (
        "likely no Python 3.11+ (built 2017-07-27, before Python 3.11 existed"
        in (found["image"]["detail"])
    )
    assert "Python 3.11+" in found["image"]["fix"]
    assert "installed Python 3.11+ on it yourself" in found["image"]["fix"]
    assert found["s3:PutObject"]["status"] == "ok" and "probe object" not in found
    assert s3.list_objects_v2(Bucket=bucket, Prefix="spotwise/check/").get("KeyCount") == 0
    assert checks(cli(*base, "--image-id", modern_image(ec2), "--json"))["image"]["status"] == "ok"


def test_an_image_made_before_python_311_is_missing_one_whose_name_says_old_is_unknown() -> None:
    from spotwise.executor.clouds.aws.check import python_problem, surely_without_python

    trusty = {"Name": "ubuntu/images/hvm-ssd/ubuntu-trusty-14.04-amd64-server-20170727"}
    assert python_problem({**trusty, "CreationDate": "2017-07-27T10:00:00.000Z"})
    assert surely_without_python({**trusty, "CreationDate": "2017-07-27T10:00:00.000Z"})
    # rebuilt this year from an old release: its name says old, its making does not
    assert python_problem({**trusty, "CreationDate": "2026-11-01T10:00:00.000Z"})
    assert not surely_without_python({**trusty, "CreationDate": "2026-11-01T10:00:00.000Z"})


def test_a_deep_learning_ami_whose_name_dates_it_2017_is_missing_not_passed() -> None:
    from spotwise.executor.clouds.aws.check import python_problem, surely_without_python

    # moto's own copy: AWS's release, dated by its name only (moto says it was made today)
    dlami = {
        "Name": "Deep Learning AMI Amazon Linux - 3.3_Oct2017",
        "Description": "Deep Learning on Amazon Linux with MXNet, Tensorflow, Caffe, Theano, "
        "Torch, CNTK and Keras",
        "CreationDate": "2026-12-01T10:00:00.000Z",
    }
    why = python_problem(dlami)
    assert why == (
        "built 2017-10-01, before Python 3.11 existed (2022-10-24), with a torch older than "
        "2.3, the oldest Spotwise supports"
    )
    assert surely_without_python(dlami)
    pytorch = {
        "Name": "Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.5.1 (Ubuntu 22.04) 20241211",
        "CreationDate": "2024-12-11T10:00:00.000Z",
    }
    assert python_problem(pytorch) is None  # its torch lives in /opt/pytorch, not python3
    jammy = {"Name": "ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-20240207"}
    assert python_problem({**jammy, "CreationDate": "2024-02-07T10:00:00.000Z"}) == (
        "Ubuntu 22.04's python3 is 3.10 (Spotwise needs 3.11+)"
    )


@pytest.mark.slow  # CLI subprocesses
def test_check_refuses_motos_2017_deep_learning_ami_and_says_what_an_ok_image_lacks(
    moto_server: str, cli: CliRun
) -> None:
    ec2 = boto3.client("ec2", endpoint_url=moto_server, region_name=REGION)
    (dlami,) = ec2.describe_images(
        Filters=[{"Name": "name", "Values": ["Deep Learning AMI Amazon Linux - 3.3_Oct2017"]}]
    )["Images"]
    base = ("check", "aws", "--region", REGION, "--endpoint-url", moto_server, "--json")
    found = checks(cli(*base, "--image-id", dlami["ImageId"]))["image"]
    assert found["status"] == "missing", found
    assert "no Python 3.11+ (built 2017-10-01, before Python 3.11 existed" in found["detail"]
    assert "Deep Learning OSS Nvidia Driver AMI GPU PyTorch" in found["fix"]
    assert "spotwise run --python PATH" in found["fix"]
    plain = checks(cli(*base, "--image-id", modern_image(ec2)))["image"]
    assert plain["status"] == "ok"
    assert "no torch known on it: each boot installs it from PyPI" in plain["detail"]

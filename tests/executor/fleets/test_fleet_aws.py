"""`spotwise fleet run --launcher aws` against moto's EC2, S3 and IAM on 127.0.0.1: the code is
shipped once for every job, each job's supervisor launches its own tagged instances, and a
thread plays the instances' side (each reports its exit code and shuts down, as the boot
script does). The boot script itself runs for real in
tests/executor/clouds/aws/test_launcher_end_to_end.py."""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest

from spotwise.executor.clouds.aws.gc import JOB_TAG
from spotwise.executor.clouds.aws.local import amazon_image
from tests.conftest import CliRun

REGION, BUCKET = "us-east-1", "spotwise-fleet"
AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


def fleet_file(tmp_path: Path, **elastic: object) -> Path:
    """A fleet of three jobs in three tiers (with ``elastic``: the normal one on nodes)."""

    def job(name: str, tier: str, **more: object) -> dict[str, object]:
        command = ["python", "train.py", "--ckpt", f"s3://{BUCKET}/ckpt/{name}"]
        return {
            "name": name,
            "priority": tier,
            "compute_hours": 1.0,
            "deadline_hours": 3.0,
            "command": command,
            **more,
        }

    spec = {
        "name": f"aws-{uuid.uuid4().hex[:6]}",  # moto's state and the store outlive a test
        "budget_usd_per_hour": 8.0,
        "jobs": [job("eval", "high"), job("train", "normal", **elastic), job("fill", "low")],
    }
    path = tmp_path / "fleet.yaml"
    path.write_text(json.dumps(spec))
    return path


class Instances:
    """Plays the instances of Spotwise's jobs: each new one reports exit 0 and shuts down."""

    def __init__(self, ec2: Any, s3: Any) -> None:
        self.ec2, self.s3 = ec2, s3
        self.jobs: dict[str, str] = {}
        """Each instance's job."""
        self.errors: list[BaseException] = []
        self._done = threading.Event()
        self._before = {i for i, _ in self._running()}
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _running(self) -> list[tuple[str, str]]:
        answer = self.ec2.describe_instances(
            Filters=[
                {"Name": "instance-state-name", "Values": ["pending", "running"]},
                {"Name": "tag-key", "Values": [JOB_TAG]},
            ]
        )
        return [
            (i["InstanceId"], next(t["Value"] for t in i["Tags"] if t["Key"] == JOB_TAG))
            for r in answer["Reservations"]
            for i in r["Instances"]
        ]

    def _run(self) -> None:
        try:
            while not self._done.is_set():
                for instance_id, job in self._running():
                    if instance_id in self._before or instance_id in self.jobs:
                        continue
                    self.jobs[instance_id] = job
                    time.sleep(0.5)  # it runs a moment
                    key = f"spotwise/jobs/{job}/{instance_id}/exit"
                    self.s3.put_object(Bucket=BUCKET, Key=key, Body=b"0\n")
                    self.ec2.terminate_instances(InstanceIds=[instance_id])
                time.sleep(0.1)
        except BaseException as exc:  # surfaced by the test, not lost in the thread
            self.errors.append(exc)

    def close(self) -> None:
        self._done.set()
        self._thread.join(timeout=30)


@pytest.mark.slow
def test_a_fleet_runs_each_job_on_its_own_instances_with_the_code_shipped_once(
    moto_server: str, tmp_path: Path, cli: CliRun
) -> None:
    session = boto3.Session(region_name=REGION, **_keys())
    s3 = session.client("s3", endpoint_url=moto_server)
    s3.create_bucket(Bucket=BUCKET)
    ec2 = session.client("ec2", endpoint_url=moto_server)
    profile = f"profile-{uuid.uuid4().hex[:8]}"
    session.client("iam", endpoint_url=moto_server).create_instance_profile(
        InstanceProfileName=profile
    )
    workdir = tmp_path / "project"
    workdir.mkdir()
    (workdir / "train.py").write_text("print('training')\n")
    group = ec2.create_security_group(
        GroupName=f"nodes-{uuid.uuid4().hex[:6]}", Description="the nodes reach each other"
    )["GroupId"]
    path = fleet_file(tmp_path, nodes="1:2")  # the normal job is elastic
    instances = Instances(ec2, s3)
    try:
        ran = cli(
            *("fleet", "run", str(path), "--launcher", "aws", "--region", REGION),
            *("--pools", f"{REGION}a,{REGION}b", "--endpoint-url", moto_server),
            *("--image-id", amazon_image(ec2), "--bucket", BUCKET),
            *("--instance-profile", profile, "--workdir", str(workdir)),
            *("--security-group", group, "--json"),
            env=AWS,
        )
    finally:
        instances.close()
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert not instances.errors, instances.errors
    assert ran.stderr.count("(uploaded)") == 2, ran.stderr  # the workdir and the wheel, once
    status = json.loads(ran.stdout)
    assert not status["simulated"]  # real instances, billed at the price book's prices
    assert [(j["tier"], j["name"], j["status"]) for j in status["jobs"]] == [
        ("high", "eval", "completed"),
        ("normal", "train", "completed"),
        ("low", "fill", "completed"),
    ]
    # each job launched its own instances, all torn down
    assert len(set(instances.jobs.values())) == 3
    assert not [i for i, _ in instances._running() if i in instances.jobs]
    elastic = next(j["job_id"] for j in status["jobs"] if j["name"] == "train")
    nodes = json.loads(cli("jobs", "show", elastic, "--json").stdout)["nodes"]
    assert set(nodes["node-0"]) == {"on-demand"}  # its rendezvous host


@pytest.mark.slow
def test_an_elastic_fleet_job_on_aws_needs_a_security_group_before_any_aws_call(
    tmp_path: Path, cli: CliRun
) -> None:
    path = fleet_file(tmp_path, nodes="1:2")
    bare = cli("fleet", "run", str(path), "--launcher", "aws")  # no credentials at all
    assert bare.returncode == 1 and "need --network (--security-group)" in bare.stderr
    assert "['train']" in bare.stderr and "Traceback" not in bare.stderr
    plain = fleet_file(tmp_path)
    missing = cli("fleet", "run", str(plain), "--launcher", "aws", "--security-group", "sg-1")
    assert missing.returncode == 1 and "needs --image-id" in missing.stderr
    other = cli("fleet", "run", str(plain), "--launcher", "toy")
    assert other.returncode == 1 and "--launcher must be local or one of aws" in other.stderr
    assert "'toy'" in other.stderr
    unknown = cli("fleet", "run", str(plain), "--pools", "nope")
    assert unknown.returncode == 1 and "unknown pool(s) ['nope']" in unknown.stderr
    assert "Traceback" not in unknown.stderr


def _keys() -> dict[str, str]:
    return {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}

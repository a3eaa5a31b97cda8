"""On a new AWS account (moto's server on 127.0.0.1): `setup aws`, `plan` with the account's
settings, the `next:` command run as printed, `jobs logs` while it boots, `jobs cancel` from
another shell, and `gc aws` afterwards, all with the endpoint in the environment as a user
with their own AWS configuration would have it."""

from __future__ import annotations

import contextlib
import json
import shlex
import time
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from spotwise.executor.clouds.aws.gc import job_tags
from spotwise.executor.clouds.aws.local import amazon_image
from tests.conftest import DATA
from tests.journeys.conftest import Stranger

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]


def wait_for(what: str, check: Callable[[], Any], timeout_s: float = 180.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if answer := check():
            return answer
        time.sleep(0.5)
    raise AssertionError(f"waited {timeout_s:.0f} s for {what}")


def test_plan_run_logs_cancel_gc_on_a_new_account(stranger: Stranger, moto_server: str) -> None:
    aws = {
        "AWS_ENDPOINT_URL": moto_server,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    stranger.env.update(aws)
    ec2 = boto3.client("ec2", endpoint_url=moto_server, region_name="us-east-1")
    image = amazon_image(ec2)
    bucket = f"mine-{time.monotonic_ns() % 10**9}"
    setup = stranger.spotwise("setup", "aws", "--region", "us-east-1", "--bucket", bucket)
    assert setup.returncode == 0, setup.stderr
    price_csv = str(DATA / "prices/aws_spot_price_history_2019-12_2020-01.csv")
    assert stranger.spotwise("data", "load", price_csv).returncode == 0
    plan = stranger.spotwise(
        "plan", "--gpu-hours", "24", "--deadline-hours", "36", "--instance-type", "p3.2xlarge",
        "--image-id", image, "--bucket", bucket, "--instance-profile", "spotwise-instance",
        "--run", f"python my_train.py s3://{bucket}/spotwise/checkpoints/run1 out.txt",
    )  # fmt: skip
    assert plan.returncode == 0, plan.stderr
    (line,) = [ln for ln in plan.stdout.splitlines() if ln.startswith("next: ")]
    assert "fill in the capitals" not in plan.stdout
    words = shlex.split(line.removeprefix("next: "))
    assert words[:2] == ["spotwise", "run"]
    run = stranger.start(*words[1:], "--cancel-grace", "5")  # as printed, then a short grace
    try:
        job_id = wait_for("the job in `jobs list`", lambda: _job_id(stranger))
        logs = wait_for(
            "`jobs logs` saying what the instance waits for",
            lambda: (
                (r := stranger.spotwise("jobs", "logs", job_id)).returncode == 0
                and "no output yet" in r.stderr
                and r
            ),
        )
        assert "--- instance 1: spot in us-east-1" in logs.stdout
        beside = stranger.spotwise("gc", "aws", "--region", "us-east-1")  # docs/aws.md step 5
        assert beside.returncode == 0, beside.stderr
        assert f"(job {job_id}): its job runs under a live supervisor" in beside.stdout
        assert "ended" not in beside.stdout and run.poll() is None
        cancel = stranger.spotwise("jobs", "cancel", job_id)
        assert cancel.returncode == 0, cancel.stderr
        _, stderr = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode != 0 and "cancel" in stderr, stderr[-3000:]
    shown = json.loads(stranger.spotwise("jobs", "show", job_id, "--json").stdout)
    assert shown["status"] == "cancelled" and shown["simulated"] is False
    tagged = ec2.describe_instances(Filters=[{"Name": "tag:spotwise:job", "Values": [job_id]}])
    states = {i["State"]["Name"] for r in tagged["Reservations"] for i in r["Instances"]}
    assert states and states <= {"shutting-down", "terminated"}
    # a probe `check aws` could not delete is no job's secret (moto's accounts live as long
    # as the worker process: another test's probe may be there already)
    ssm = boto3.client("ssm", endpoint_url=moto_server, region_name="us-east-1")
    with contextlib.suppress(ssm.exceptions.ParameterNotFound):
        ssm.delete_parameter(Name="/spotwise/check/probe")
    ssm.put_parameter(
        Name="/spotwise/check/probe", Value="1", Type="SecureString", Tags=job_tags("check")
    )
    gc = stranger.spotwise("gc", "aws", "--region", "us-east-1")
    assert gc.returncode == 0, gc.stderr
    assert "no orphaned Spotwise instance or secret in us-east-1" in gc.stdout, gc.stdout


def _job_id(stranger: Stranger) -> str | None:
    listed = stranger.spotwise("jobs", "list", "--json")
    if listed.returncode != 0 or not listed.stdout.strip():
        return None
    jobs = json.loads(listed.stdout)
    return str(jobs[0]["job_id"]) if jobs else None

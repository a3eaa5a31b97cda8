"""A live `spotwise run --launcher aws` on moto's server, as a user has it: one job id on the
ledger, the instance's tags, its S3 prefix and its secret's path; `spotwise gc aws` beside it
ends nothing of it (with the right store, or a wrong one); and while the instance boots with
no output yet, the supervisor, `jobs logs` and `jobs show` say so; its 2020 spot price is
flagged stale, as `spotwise plan` flags it."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from spotwise.executor.clouds.aws.local import amazon_image
from spotwise.pricing.operational import open_operational
from spotwise.pricing.store import MarketStore
from tests.conftest import CliRun

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
REGION = "us-east-1"
AWS_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


def wait_for(what: str, check: Callable[[], Any], timeout_s: float = 120.0) -> Any:
    """``check()``'s first truthy answer (polled), or a failure naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if answer := check():
            return answer
        time.sleep(0.25)
    raise AssertionError(f"waited {timeout_s:.0f} s for {what}")


class LiveJob:
    """``spotwise run --launcher aws`` in its own process group, its stderr in a file."""

    def __init__(self, process: subprocess.Popen[bytes], stderr: Path, store: Path) -> None:
        self.process, self.stderr_path, self.store = process, stderr, store

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def job_id(self) -> str | None:
        if not self.store.exists():
            return None
        with open_operational(self.store, read_only=True) as market:
            rows = market.records("SELECT job_id FROM jobs")
        return str(rows[0]["job_id"]) if rows else None


@pytest.fixture
def live_job(moto_server: str, tmp_path: Path, store_file: Path) -> Iterator[LiveJob]:
    session = boto3.Session(region_name=REGION)
    bucket = f"live-{uuid.uuid4().hex[:8]}"
    session.client("s3", endpoint_url=moto_server).create_bucket(Bucket=bucket)
    ec2 = session.client("ec2", endpoint_url=moto_server)
    profile = f"profile-{uuid.uuid4().hex[:8]}"  # moto's state outlives a test
    session.client("iam", endpoint_url=moto_server).create_instance_profile(
        InstanceProfileName=profile
    )
    work = tmp_path / "project"
    work.mkdir()
    (work / "train.py").write_text("print('training')\n")
    wheel = tmp_path / "spotwise-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"not run: no instance boots in this test")
    store_file.parent.mkdir(parents=True, exist_ok=True)
    with MarketStore.open(store_file) as market:  # the user's last collect: years ago
        market.execute(
            "INSERT INTO prices (source, provider, region, zone, instance_type, market, ts, "
            "price) VALUES ('aws-price-history', 'aws', 'us-east-1', ?, "
            "'p3.2xlarge', 'spot', '2020-03-01 00:00:00+00', 0.918)",
            [f"{REGION}a"],
        )
    stderr = tmp_path / "run.stderr"
    env = {
        **os.environ,
        **AWS_ENV,
        "SPOTWISE_STORE": str(store_file),
        "LIVE_TOKEN": "s3cret",
        "COLUMNS": "200",
    }
    command = [
        *(sys.executable, "-m", "spotwise", "run", "--launcher", "aws", "--region", REGION),
        *("--pools", f"{REGION}a", "--endpoint-url", moto_server),
        *("--image-id", amazon_image(ec2), "--bucket", bucket, "--instance-profile", profile),
        *("--workdir", str(work), "--wheel", str(wheel), "--secret-env", "LIVE_TOKEN"),
        *("--on-demand-price", "3.06", "--stall-timeout", "0"),
        *("--cancel-grace", "5", "--waiting-report-s", "1"),
        *("--", "python", "train.py"),
    ]
    with stderr.open("wb") as err:
        process = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
        )
    job = LiveJob(process, stderr, store_file)
    try:
        yield job
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        tagged = ec2.describe_instances(
            Filters=[
                {"Name": "tag:spotwise:job", "Values": [job.job_id() or "-"]},
                {"Name": "instance-state-name", "Values": ["pending", "running"]},
            ]
        )
        ids = [i["InstanceId"] for r in tagged["Reservations"] for i in r["Instances"]]
        if ids:
            ec2.terminate_instances(InstanceIds=ids)


def instances_of(ec2: Any, job_id: str) -> list[dict[str, Any]]:
    answer = ec2.describe_instances(Filters=[{"Name": "tag:spotwise:job", "Values": [job_id]}])
    return [i for r in answer["Reservations"] for i in r["Instances"]]


def test_gc_beside_a_live_aws_job_ends_nothing_of_it_with_the_right_store_or_a_wrong_one(
    live_job: LiveJob, moto_server: str, cli: CliRun, tmp_path: Path
) -> None:
    session = boto3.Session(region_name=REGION)
    ec2 = session.client("ec2", endpoint_url=moto_server)
    ssm = session.client("ssm", endpoint_url=moto_server)
    job_id = wait_for("the job in the ledger", live_job.job_id)
    (instance,) = wait_for("its instance", lambda: instances_of(ec2, job_id))
    instance_id = instance["InstanceId"]
    # One id: the ledger's is the instance's tag, its S3 prefix and its secret's path.
    assert {t["Key"]: t["Value"] for t in instance["Tags"]}["spotwise:job"] == job_id
    data = ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
    assert f"spotwise/jobs/{job_id}" in base64.b64decode(data["UserData"]["Value"]).decode()
    secret = f"/spotwise/{job_id}/LIVE_TOKEN"
    assert ssm.get_parameter(Name=secret, WithDecryption=True)["Parameter"]["Value"] == "s3cret"

    def alive() -> None:
        state = instances_of(ec2, job_id)[0]["State"]["Name"]
        assert state == "running", state
        assert ssm.get_parameter(Name=secret)["Parameter"]["Name"] == secret
        assert live_job.process.poll() is None, live_job.stderr[-2000:]

    right = cli("gc", "aws", "--endpoint-url", moto_server, env=AWS_ENV)
    assert right.returncode == 0, right.stderr
    assert f"left {instance_id} (job {job_id}): its job runs under a live supervisor" in (
        right.stdout
    )
    assert f"left secret {secret}" in right.stdout
    alive()
    typo = tmp_path / "markte.duckdb"  # a mistyped --store: no ledger there
    wrong = cli("gc", "aws", "--endpoint-url", moto_server, "--store", str(typo), env=AWS_ENV)
    assert wrong.returncode == 0, wrong.stderr
    assert f"left {instance_id} (job {job_id}): job {job_id} is not in" in wrong.stdout
    assert f"add --job {job_id}" in wrong.stdout
    assert f"no ledger at {typo}" in wrong.stderr
    assert not typo.exists()
    alive()
    # Named against that store, it is refused: no ledger there can show its live supervisor.
    named = cli(
        *("gc", "aws", "--endpoint-url", moto_server, "--store", str(typo)),
        *("--job", job_id),
        env=AWS_ENV,
    )
    assert named.returncode == 1
    assert named.stderr.strip().splitlines() == [
        f"error: --job {job_id}: the store {typo} does not exist, so nothing shows whether a "
        "supervisor still runs the job (a wrong --store hides them); give the --store the jobs "
        "ran with (nothing was ended)"
    ]
    assert named.stdout == "" and not typo.exists()
    alive()

    # While it boots with no output: the supervisor says what it waits for, `jobs logs` says
    # there is no output yet, `jobs show` counts the running instance.
    wait_for(
        "the supervisor's booting line",
        lambda: f"instance {instance_id} booting for" in live_job.stderr,
    )
    assert "no output yet" in live_job.stderr
    logs = cli("jobs", "logs", job_id)
    assert logs.returncode == 0, logs.stderr
    assert logs.stdout.splitlines() == [f"--- instance 1: spot in {REGION}a ({instance_id}) ---"]
    assert f"instance 1 ({instance_id}) on spot in {REGION}a" in logs.stderr
    assert "no output yet" in logs.stderr
    shown = cli("jobs", "show", job_id)
    assert shown.returncode == 0, shown.stderr
    assert "1 instance," in shown.stdout, shown.stdout
    # The 2020 price it was quoted is flagged, at the start and in the report.
    assert (
        f"warning: stale spot prices ({REGION}a; the newest of 2020-03-01), older than 7 days"
        in live_job.stderr
    )
    assert f"spot {REGION}a: $0.918/h (store: aws-price-history" in shown.stdout
    assert "(stale: older than 7 days when the job was priced)" in shown.stdout

    # Cancelled, its supervisor gone: now gc may judge it, and there is nothing left to end.
    os.killpg(live_job.process.pid, signal.SIGTERM)
    live_job.process.wait(120)
    assert instances_of(ec2, job_id)[0]["State"]["Name"] in ("shutting-down", "terminated")
    after = cli("gc", "aws", "--endpoint-url", moto_server, env=AWS_ENV)
    assert instance_id not in after.stdout and secret not in after.stdout

"""`spotwise run --launcher aws` end to end against moto's EC2 and S3 on 127.0.0.1 and a fake
IMDS: the workdir and a wheel built from this checkout are shipped to S3, and each "instance"
is the boot script the launcher rendered, executed for real in a fresh folder as EC2 would: it
fetches the code, builds a venv, runs the setup and the training script, streams the output
back and reports the exit code. The supervisor prints and keeps the logs and tears the
instance down in moto."""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path

import boto3
import pytest

from spotwise.executor.clouds.aws.ec2_player import Ec2Player
from spotwise.executor.clouds.aws.launcher import AwsLauncher
from spotwise.executor.clouds.aws.local import amazon_image
from spotwise.executor.clouds.code_bundle import ShippedCode
from spotwise.executor.launchers.base import Placement
from spotwise.executor.local_clouds.metadata import FakeMetadata
from tests.conftest import CliRun

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]
REGION, BUCKET = "us-east-1", "spotwise-e2e"
TRAIN = """\
import sys
from spotwise.executor.examples.train_mlp import main

print("user script: training starts", flush=True)
print("user script: a warning", file=sys.stderr, flush=True)
main()
"""


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A user's project: a training script, its .gitignore, and data that must not ship."""
    root = tmp_path / "project"
    (root / "data").mkdir(parents=True)
    (root / "train.py").write_text(TRAIN)
    (root / ".gitignore").write_text("data/\n*.log\n")
    (root / "data" / "shards.bin").write_bytes(b"\0" * 1024)
    (root / "debug.log").write_text("local only\n")
    return root


def test_spotwise_run_ships_a_script_that_runs_on_the_instance_and_its_logs_come_back(
    moto_server: str, metadata: FakeMetadata, tmp_path: Path, workdir: Path, cli: CliRun
) -> None:
    session = boto3.Session(region_name=REGION)
    session.client("s3", endpoint_url=moto_server).create_bucket(Bucket=BUCKET)
    ec2 = session.client("ec2", endpoint_url=moto_server)
    image = amazon_image(ec2)
    iam = session.client("iam", endpoint_url=moto_server)
    profile = f"profile-{uuid.uuid4().hex[:8]}"  # moto's state outlives a test
    iam.create_instance_profile(InstanceProfileName=profile)
    (tmp_path / "instances").mkdir()
    ec2_boots = Ec2Player(session, moto_server, metadata, tmp_path / "instances")
    aws = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    try:
        ran = cli(
            *("run", "--launcher", "aws", "--region", REGION, "--pools", f"{REGION}a"),
            *("--endpoint-url", moto_server, "--image-id", image, "--bucket", BUCKET),
            *("--instance-profile", profile),
            *("--workdir", str(workdir), "--spot-price", "0.9", "--on-demand-price", "3.06"),
            *("--setup", "python -c 'import sys; print(\"setup ran in\", sys.prefix)'"),
            *("--json", "--", "python", "train.py", "--ckpt", "ckpt", "--epochs", "1"),
            *("--out", "result.json"),
            env=aws,
        )
    finally:
        ec2_boots.close()  # its script goes on a moment after reporting: log upload, shutdown
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert not ec2_boots.errors, ec2_boots.errors
    report = json.loads(ran.stdout)
    assert report["status"] == "completed" and report["instances"] == 1
    assert not report["simulated"]
    ((instance_id, boot_code),) = ec2_boots.booted
    assert boot_code == 0
    # Shipped: the workdir and the wheel, once each.
    assert ran.stderr.count("(uploaded)") == 2, ran.stderr
    # Printed live, prefixed by where it ran, and kept: `spotwise jobs logs` shows the same.
    instance_root = tmp_path / "instances" / instance_id
    for line in (
        f"running from {instance_root}/venv/",  # the shipped wheel, not this checkout
        f"setup ran in {instance_root}/venv",
        "user script: training starts",
        "user script: a warning",
    ):
        shown = rf"^\[(spot in {REGION}a|on-demand)\] .*{re.escape(line)}"
        assert re.search(shown, ran.stderr, re.MULTILINE), line
    logs = cli("jobs", "logs", report["job_id"])
    assert "user script: training starts" in logs.stdout, logs.stdout
    # The guard's JSON event lines came back as events (the step accounting), not as log lines.
    assert '"event"' not in logs.stdout
    assert report["hours_needed"] > 0
    # The workdir arrived without what its .gitignore lists; the run wrote its result there.
    work = instance_root / "work"
    assert (work / "train.py").is_file() and not (work / "data").exists()
    assert not (work / "debug.log").exists()
    assert json.loads((work / "result.json").read_text())["steps"] > 0
    assert instance_id not in ec2_boots.live()  # torn down


def test_a_boot_that_fails_before_the_command_says_why_in_the_job_log(
    moto_server: str, metadata: FakeMetadata, tmp_path: Path
) -> None:
    session = boto3.Session(region_name=REGION)
    session.client("s3", endpoint_url=moto_server).create_bucket(Bucket=BUCKET)
    ec2 = session.client("ec2", endpoint_url=moto_server)
    missing = ShippedCode(
        "spotwise/code/00/workdir.tar.gz", "spotwise/code/00/spotwise-0.1.0-py3-none-any.whl"
    )
    launcher = AwsLauncher(
        session=session,
        region=REGION,
        zones=[f"{REGION}a"],
        instance_type="p3.2xlarge",
        image_id=amazon_image(ec2),
        bucket=BUCKET,
        job_id="boot1",
        code=missing,
        endpoint_url=moto_server,
    )
    (tmp_path / "instances").mkdir()
    ec2_boots = Ec2Player(session, moto_server, metadata, tmp_path / "instances")
    lines: list[str] = []
    placement = Placement(market="on-demand", pool=None, price=3.06)
    instance = launcher.launch(placement, ["python", "train.py"], {}, log=lines.append)
    deadline = time.monotonic() + 60
    while (code := instance.poll()) is None and time.monotonic() < deadline:
        time.sleep(0.2)
    ec2_boots.close()
    assert code == 1
    assert any(
        line.startswith("boot: spotwise boot: cannot fetch s3://spotwise-e2e/spotwise/code/00/")
        for line in lines
    ), lines


def test_a_sweep_on_aws_runs_each_trial_on_an_instance_and_checkpoints_to_the_bucket(
    moto_server: str, metadata: FakeMetadata, tmp_path: Path, workdir: Path, cli: CliRun
) -> None:
    """Two trials, each on its own instance, with the code shipped once for both."""
    session = boto3.Session(region_name=REGION)
    s3 = session.client("s3", endpoint_url=moto_server)
    s3.create_bucket(Bucket=BUCKET)
    ec2 = session.client("ec2", endpoint_url=moto_server)
    image = amazon_image(ec2)
    profile = f"profile-{uuid.uuid4().hex[:8]}"
    session.client("iam", endpoint_url=moto_server).create_instance_profile(
        InstanceProfileName=profile
    )
    name = f"aws-{uuid.uuid4().hex[:6]}"
    spec = tmp_path / "sweep.toml"
    spec.write_text(
        f'name = "{name}"\n'
        'command = ["python", "train.py", "--ckpt", "{ckpt}", "--epochs", "1", '
        '"--samples", "512", "--hidden", "{hidden}"]\n'
        '[sampler]\ntype = "grid"\n'
        '[params]\nhidden = { type = "categorical", choices = [16, 32] }\n'
    )
    (tmp_path / "instances").mkdir()
    ec2_boots = Ec2Player(session, moto_server, metadata, tmp_path / "instances")
    try:
        ran = cli(
            *("sweep", "run", str(spec), "--launcher", "aws", "--region", REGION),
            *("--pools", f"{REGION}a", "--endpoint-url", moto_server, "--image-id", image),
            *("--bucket", BUCKET, "--instance-profile", profile, "--workdir", str(workdir)),
            *("--spot-price", "0.9", "--on-demand-price", "3.06", "--json"),
            env={"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"},
        )
    finally:
        ec2_boots.close()
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert not ec2_boots.errors, ec2_boots.errors
    report = json.loads(ran.stdout)
    trials = report["trials"]
    assert len(trials) == 2 and not report["simulated"]
    for trial in trials:
        assert trial["state"] == "complete" and isinstance(trial["value"], float)
        assert trial["cost_usd"] > 0
    assert len(ec2_boots.booted) == 2
    shipped = [
        line for line in ran.stderr.splitlines() if "] shipping wheel: " in line and "→" in line
    ]
    assert len(shipped) == 1, ran.stderr[-3000:]  # once for the worker, not once per trial
    # each trial's checkpoints went to the bucket, under the sweep's prefix
    for number in (0, 1):
        prefix = f"spotwise/checkpoints/sweeps/{name}/trial-{number:05d}/ckpt/"
        assert s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("KeyCount", 0) > 0

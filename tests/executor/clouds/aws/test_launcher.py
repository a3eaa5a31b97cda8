"""The AWS launcher against moto's EC2 and S3 server on 127.0.0.1, alone and under the
supervisor."""

from __future__ import annotations

import base64
import socket
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import boto3
import pytest

from spotwise.executor.clouds.aws.launcher import AwsInstance, AwsLauncher
from spotwise.executor.clouds.aws.local import amazon_image
from spotwise.executor.clouds.code_bundle import ShippedCode
from spotwise.executor.errors import ExecutorError
from spotwise.executor.launchers.base import Placement
from spotwise.executor.ledger.ledger import JobInfo, Ledger, job_report
from spotwise.executor.ledger.liveness import process_started
from spotwise.executor.supervise.supervisor import Supervisor, SupervisorConfig
from spotwise.policy.service.client import in_process_for
from spotwise.policy.service.schemas import JobTerms
from spotwise.pricing.operational import open_operational
from tests.conftest import CliRun

REGION, BUCKET = "us-east-1", "spotwise-ckpt"
CODE = ShippedCode(
    "spotwise/code/aa11/workdir.tar.gz", "spotwise/code/bb22/spotwise-0.1.0-py3-none-any.whl"
)
R = TypeVar("R")
COMMAND = ["python", "-m", "spotwise.executor.examples.train_mlp", "--ckpt", f"s3://{BUCKET}/ckpt"]


@pytest.fixture
def launcher(moto_server: str) -> AwsLauncher:
    session = boto3.Session(region_name=REGION)
    s3 = session.client("s3", endpoint_url=moto_server)
    s3.create_bucket(Bucket=BUCKET)
    ec2 = session.client("ec2", endpoint_url=moto_server)
    image = amazon_image(ec2)
    return AwsLauncher(
        session=session,
        region=REGION,
        zones=["us-east-1a", "us-east-1b"],
        instance_type="p3.2xlarge",
        image_id=image,
        bucket=BUCKET,
        job_id="job42",
        code=CODE,
        endpoint_url=moto_server,
    )


def aws_ledger(store: Path) -> Ledger:
    """The ledger of a 1-hour job (3 h deadline) supervised on AWS."""
    info = JobInfo(
        name="aws",
        command=" ".join(COMMAND),
        launcher="aws",
        compute_hours=1,
        deadline_hours=3,
        on_demand_price=3.06,
        simulated=False,
    )
    return Ledger(store, info)


def report_exit(launcher: AwsLauncher, instance_id: str, code: int) -> None:
    """What the instance's user data does at the end: write the exit code, shut down."""
    key = f"{launcher.prefix}/{instance_id}/exit"
    launcher.s3.put_object(Bucket=BUCKET, Key=key, Body=f"{code}\n".encode())
    launcher.ec2.terminate_instances(InstanceIds=[instance_id])


def beside_the_cloud(cloud: Callable[[threading.Event], None], run: Callable[[], R]) -> R:
    """``run()`` while ``cloud(finished)`` plays the instances' side on a thread (until
    ``finished`` is set); an error there fails the test instead of being lost."""
    errors: list[BaseException] = []
    finished = threading.Event()

    def play() -> None:
        try:
            cloud(finished)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=play, daemon=True)
    thread.start()
    try:
        result = run()
    finally:
        finished.set()
        thread.join(10)
    assert not errors, errors
    return result


@pytest.mark.slow
def test_secrets_reach_the_instance_through_ssm_and_are_deleted_at_the_end(
    moto_server: str,
) -> None:
    session = boto3.Session(region_name=REGION)
    session.client("s3", endpoint_url=moto_server).create_bucket(Bucket=BUCKET)
    ec2 = session.client("ec2", endpoint_url=moto_server)
    image = amazon_image(ec2)
    iam = session.client("iam", endpoint_url=moto_server)
    iam.create_instance_profile(InstanceProfileName="spotwise-job")
    launcher = AwsLauncher(
        session=session,
        region=REGION,
        zones=["us-east-1a"],
        instance_type="p3.2xlarge",
        image_id=image,
        bucket=BUCKET,
        job_id="job7",
        code=CODE,
        endpoint_url=moto_server,
        instance_profile="spotwise-job",
        secrets={"WANDB_API_KEY": "wb-789"},
        python="/opt/conda/envs/pytorch/bin/python",
    )
    ssm = launcher.ssm
    stored = ssm.get_parameter(Name="/spotwise/job7/WANDB_API_KEY", WithDecryption=True)
    assert stored["Parameter"]["Type"] == "SecureString"
    assert stored["Parameter"]["Value"] == "wb-789"
    instance = launcher.launch(Placement(market="on-demand", pool=None, price=3.06), COMMAND, {})
    attribute = ec2.describe_instance_attribute(
        InstanceId=instance.instance_id, Attribute="userData"
    )
    script = base64.b64decode(attribute["UserData"]["Value"]).decode()
    assert "wb-789" not in script
    assert "--secret WANDB_API_KEY=/spotwise/job7/WANDB_API_KEY" in script
    assert "\nASKED=/opt/conda/envs/pytorch/bin/python\n" in script  # --python, tried first
    instance.terminate()
    launcher.close()
    with pytest.raises(ssm.exceptions.ParameterNotFound):
        ssm.get_parameter(Name="/spotwise/job7/WANDB_API_KEY")


def test_secrets_without_an_instance_role_are_refused(moto_server: str) -> None:
    with pytest.raises(ExecutorError, match="instance profile"):
        AwsLauncher(
            session=boto3.Session(region_name=REGION),
            region=REGION,
            zones=["us-east-1a"],
            instance_type="p3.2xlarge",
            image_id="ami-1",
            bucket=BUCKET,
            job_id="job8",
            code=CODE,
            endpoint_url=moto_server,
            secrets={"TOKEN": "x"},
        )


@pytest.mark.slow
def test_a_spot_launch_is_a_tagged_spot_instance_in_its_zone(launcher: AwsLauncher) -> None:
    placement = Placement(market="spot", pool="us-east-1b", price=0.9)
    instance = launcher.launch(placement, COMMAND, {"SPOTWISE_MARKET": "spot"})
    described = launcher.ec2.describe_instances(InstanceIds=[instance.instance_id])
    ec2_instance = described["Reservations"][0]["Instances"][0]
    assert ec2_instance["Placement"]["AvailabilityZone"] == "us-east-1b"
    assert ec2_instance["InstanceType"] == "p3.2xlarge"
    assert ec2_instance.get("InstanceLifecycle") == "spot"
    tags = {t["Key"]: t["Value"] for t in ec2_instance["Tags"]}
    assert tags == {
        "spotwise:job": "job42",
        "spotwise:host": socket.gethostname(),
        "spotwise:market": "spot",
    }
    assert instance.poll() is None  # running, nothing reported yet
    report_exit(launcher, instance.instance_id, 0)
    assert instance.poll() == 0
    assert launcher.running_instances() == []


def test_a_spot_request_bids_the_policys_price_never_above_the_users_cap(
    moto_server: str, launcher: AwsLauncher
) -> None:
    """The policy's bid is the request's MaxPrice; --max-price caps it; none: no MaxPrice."""
    sent: list[dict] = []
    launcher.ec2.meta.events.register(
        "provide-client-params.ec2.RunInstances", lambda params, **_: sent.append(params)
    )
    for bid, cap in ((0.95, None), (0.95, 0.8), (None, None)):
        launcher.max_price = cap
        placement = Placement(market="spot", pool="us-east-1a", price=0.9, bid=bid)
        launcher.launch(placement, COMMAND, {}).kill()
    prices = [p["InstanceMarketOptions"]["SpotOptions"].get("MaxPrice") for p in sent]
    assert prices == ["0.9500", "0.8000", None]


def test_an_instance_that_vanishes_without_reporting_is_a_failure(launcher: AwsLauncher) -> None:
    instance = launcher.launch(Placement(market="on-demand", pool=None, price=3.0), COMMAND, {})
    launcher.ec2.terminate_instances(InstanceIds=[instance.instance_id])
    assert instance.poll() == 1


def test_an_instance_asked_to_leave_that_is_gone_without_reporting_was_preempted(
    launcher: AwsLauncher,
) -> None:
    """A notice (a migration or a drill) shuts the instance down; if it is gone before its exit
    code reached S3, the job still had its chance to checkpoint: a preemption, not a failure."""
    instance = launcher.launch(Placement(market="spot", pool="us-east-1a", price=0.9), COMMAND, {})
    instance.notice()
    assert instance.poll() == 75


def test_an_exit_reported_just_before_shutdown_is_not_taken_for_a_failure(
    launcher: AwsLauncher,
) -> None:
    class ReportsBetweenReads(AwsInstance):
        """The instance reports 0 and shuts down right after the launcher's first read."""

        reads = 0

        def _exit_code(self) -> int | None:
            code = super()._exit_code()
            self.reads += 1
            if self.reads == 1:
                report_exit(launcher, self.instance_id, 0)
            return code

    launched = launcher.launch(Placement(market="spot", pool="us-east-1a", price=0.9), COMMAND, {})
    instance = ReportsBetweenReads(launcher, launched.instance_id, launched.placement, print)
    assert instance.poll() == 0


def test_the_supervisor_relaunches_on_aws_after_a_preemption_and_tears_down(
    launcher: AwsLauncher, tmp_path: Path
) -> None:
    job = JobTerms(compute_hours=1, deadline_hours=3, spot_price=0.9, on_demand_price=3.06)
    store = tmp_path / "store.duckdb"
    ledger = aws_ledger(store)
    supervisor = Supervisor(launcher, in_process_for, SupervisorConfig(job=job), ledger)
    outcomes = [75, 0]  # the first instance is preempted (its job exits 75), the second finishes

    def cloud(finished: threading.Event) -> None:
        """Plays the instances' side: each new one reports the next outcome (then 0)."""
        seen: set[str] = set()
        try:
            while not finished.is_set():
                for instance_id in launcher.running_instances():
                    if instance_id not in seen:
                        seen.add(instance_id)
                        time.sleep(0.3)
                        report_exit(launcher, instance_id, outcomes.pop(0) if outcomes else 0)
                time.sleep(0.1)
        except BaseException:  # end the job too, so the test fails rather than hangs
            for instance_id in launcher.running_instances():
                report_exit(launcher, instance_id, 1)
            raise

    report = beside_the_cloud(cloud, lambda: supervisor.run(COMMAND))
    assert report.completed and report.preemptions == 1 and report.instances == 2
    assert report.placements[0].startswith("spot in us-east-1")
    assert launcher.running_instances() == []
    with open_operational(store) as market:
        ledger_report = job_report(market, ledger.job_id)
    assert ledger_report.markets["spot"].hours > 0
    assert ledger_report.preemptions == 1 and not ledger_report.simulated


def test_a_cancelled_job_on_aws_leaves_no_instance_running(
    launcher: AwsLauncher, tmp_path: Path
) -> None:
    from spotwise.executor.errors import Cancelled

    job = JobTerms(compute_hours=1, deadline_hours=3, spot_price=0.9, on_demand_price=3.06)
    ledger = aws_ledger(tmp_path / "store.duckdb")
    config = SupervisorConfig(job=job, cancel_grace_s=1.0)
    supervisor = Supervisor(launcher, in_process_for, config, ledger)

    def cancel_once_launched() -> None:
        deadline = time.monotonic() + 30
        while not launcher.running_instances() and time.monotonic() < deadline:
            time.sleep(0.1)
        supervisor.cancel()

    threading.Thread(target=cancel_once_launched, daemon=True).start()
    with pytest.raises(Cancelled):
        supervisor.run(COMMAND)
    assert launcher.running_instances() == []
    with open_operational(tmp_path / "store.duckdb") as market:
        assert job_report(market, ledger.job_id).status == "cancelled"


@pytest.mark.slow  # CLI subprocesses, four of them
@pytest.mark.parametrize(
    ("who", "args"),
    [
        (
            "--launcher aws",
            [
                *("run", "--launcher", "aws", "--image-id", "ami-1", "--bucket", "b"),
                *("--instance-profile", "r", "--", "true"),
            ],
        ),
        ("check aws", ["check", "aws"]),
        ("setup aws", ["setup", "aws", "--bucket", "b"]),
        ("gc aws", ["gc", "aws"]),
        ("collect aws", ["collect", "aws", "--region", "us-east-1"]),  # botocore's words
        ("collect aws", ["collect", "aws", "--region", "us-east-1", "--on-demand"]),
    ],
)
def test_without_credentials_every_aws_command_says_so_in_one_line(
    who: str, args: list[str], tmp_path: Path, store_file: Path
) -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        AWS_EC2_METADATA_DISABLED="true",
        SPOTWISE_STORE=str(store_file),
    )
    result = subprocess.run(
        [sys.executable, "-m", "spotwise", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"error: {who}: no AWS credentials found; set AWS_PROFILE, or AWS_ACCESS_KEY_ID "
        "and AWS_SECRET_ACCESS_KEY, or run `aws configure`, then run again"
    ]
    assert not store_file.exists()  # refused before any store is made


@pytest.mark.slow  # CLI subprocesses
def test_gc_ends_only_the_instances_the_ledger_proves_orphaned(
    moto_server: str, store_file: Path, cli: CliRun
) -> None:
    import socket
    import subprocess
    import sys

    session = boto3.Session(region_name=REGION)
    ec2 = session.client("ec2", endpoint_url=moto_server)
    ssm = session.client("ssm", endpoint_url=moto_server)
    image = amazon_image(ec2)
    here = socket.gethostname()

    def start(job: str | None, host: str = here) -> str:
        tags = [{"Key": "spotwise:job", "Value": job}, {"Key": "spotwise:host", "Value": host}]
        extra = {"TagSpecifications": [{"ResourceType": "instance", "Tags": tags}]} if job else {}
        made = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1, **extra)
        if job:  # and a secret of the job, tagged the same way
            ssm.put_parameter(
                Name=f"/spotwise/{job}/KEY", Value="s", Type="SecureString", Tags=tags
            )
        return str(made["Instances"][0]["InstanceId"])

    store_file.parent.mkdir(parents=True, exist_ok=True)
    live, dead = aws_ledger(store_file), aws_ledger(store_file)
    # a live supervisor (its command line names spotwise), and one that has exited
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "spotwise"])
    exited = subprocess.Popen([sys.executable, "-c", "pass"])
    exited.wait()
    with open_operational(store_file) as market:
        for job, pid in ((live.job_id, sleeper.pid), (dead.job_id, exited.pid)):
            market.execute(
                "UPDATE jobs SET supervisor_pid = ?, supervisor_started = ? WHERE job_id = ?",
                [pid, process_started(pid), job],
            )
    other = f"other-{uuid.uuid4().hex[:6]}"  # a colleague's machine, with a ledger of its own
    gone, theirs = f"gone-{uuid.uuid4().hex[:6]}", f"theirs-{uuid.uuid4().hex[:6]}"
    try:
        ids = {
            "live": start(live.job_id),
            "dead": start(dead.job_id),
            "unknown": start(gone),
            "untagged": start(None),
            "other host": start(theirs, host=other),
        }
        listed = cli("gc", "aws", "--endpoint-url", moto_server, "--dry-run")
        assert listed.returncode == 0, listed.stderr
        would_end = {line.split()[2] for line in listed.stdout.splitlines() if "would end" in line}
        # (moto's state is per process: other tests' instances may be there too)
        assert would_end & set(ids.values()) == {ids["dead"]}
        assert f"(job {dead.job_id}): its job's supervisor (pid {exited.pid} on {here})" in (
            listed.stdout
        )
        # a job the ledger has never seen is reported, not ended
        assert f"left {ids['unknown']} (job {gone}): job {gone} is not in the ledger" in (
            listed.stdout
        )
        deletes = {
            line.split("/")[2] for line in listed.stdout.splitlines() if "would delete" in line
        }
        assert dead.job_id in deletes and not deletes & {live.job_id, theirs, gone}
        ended = cli("gc", "aws", "--endpoint-url", moto_server)
        assert ended.returncode == 0, ended.stderr
        states = {
            name: ec2.describe_instances(InstanceIds=[i])["Reservations"][0]["Instances"][0][
                "State"
            ]["Name"]
            for name, i in ids.items()
        }
        assert states == {
            "live": "running",
            "dead": "terminated",
            "unknown": "running",
            "untagged": "running",
            "other host": "running",
        }
        left = {p["Name"].split("/")[2] for p in ssm.describe_parameters()["Parameters"]}
        assert {live.job_id, gone} <= left and dead.job_id not in left
        again = cli("gc", "aws", "--endpoint-url", moto_server)
        assert "no orphaned Spotwise instance or secret in us-east-1 started from" in again.stdout
        # The unknown job goes when the user names it.
        named = cli("gc", "aws", "--endpoint-url", moto_server, "--job", gone)
        assert f"ended {ids['unknown']} (job {gone}): named with --job" in named.stdout
        assert f"deleted secret /spotwise/{gone}/KEY" in named.stdout
        # The colleague's instance is listed only when asked for every host, and not ended.
        everywhere = cli("gc", "aws", "--endpoint-url", moto_server, "--any-host", "--dry-run")
        assert f"left {ids['other host']} (job {theirs})" in everywhere.stdout
        assert f"would end {ids['other host']}" not in everywhere.stdout
        assert f"{ids['live']} (job {live.job_id}): its job runs under a live" in (
            everywhere.stdout
        )
    finally:
        sleeper.kill()
        sleeper.wait()


def user_data(launcher: AwsLauncher, instance_id: str) -> str:
    answer = launcher.ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
    return base64.b64decode(answer["UserData"]["Value"]).decode()


@pytest.mark.slow
def test_an_elastic_job_on_aws_joins_its_spot_nodes_to_the_hosts_address_and_replaces_one(
    moto_server: str, tmp_path: Path
) -> None:
    """An on-demand host and a spot node on EC2: the spot node's torchrun joins the host at its
    private address, both carry the nodes' security group, and a spot node taken back (its job
    exits 75 after the notice) is counted as a preemption and replaced alone; a spot node whose
    training ended before the host's is not replaced."""
    from spotwise.executor.supervise.elastic import NodePlan, NodeSupervisor

    session = boto3.Session(region_name=REGION)
    ec2 = session.client("ec2", endpoint_url=moto_server)
    vpc = ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"][0]
    group = ec2.create_security_group(
        GroupName=f"nodes-{uuid.uuid4().hex[:8]}", Description="nodes", VpcId=vpc["VpcId"]
    )["GroupId"]
    session.client("s3", endpoint_url=moto_server).create_bucket(Bucket=BUCKET)
    launcher = AwsLauncher(
        session=session,
        region=REGION,
        zones=["us-east-1a"],
        instance_type="p3.2xlarge",
        image_id=amazon_image(ec2),
        bucket=BUCKET,
        job_id=f"nodes{uuid.uuid4().hex[:6]}",
        code=CODE,
        endpoint_url=moto_server,
        security_groups=[group],
    )
    job = JobTerms(compute_hours=1, deadline_hours=3, spot_price=0.9, on_demand_price=3.06)
    ledger = aws_ledger(tmp_path / "store.duckdb")
    plan = NodePlan(min_nodes=1, max_nodes=2, floor=1, rdzv_endpoint="127.0.0.1:29511")
    config = SupervisorConfig(job=job, no_capacity_s=0.5)
    supervisor = NodeSupervisor(launcher, in_process_for, config, ledger, plan, plan_every_s=0.1)
    launched: list[str] = []

    def cloud(finished: threading.Event) -> None:
        """The first spot node is taken back; once its replacement runs, it and then the host
        finish."""
        while not finished.is_set():
            for instance_id in launcher.running_instances():
                if instance_id not in launched:
                    launched.append(instance_id)
            if len(launched) == 2:
                time.sleep(0.3)
                report_exit(launcher, launched[1], 75)
                launched.append("reported")
            if len(launched) == 4:
                time.sleep(0.3)
                report_exit(launcher, launched[3], 0)  # a worker's training ends first
                time.sleep(0.5)  # several plans: none may replace the finished node
                report_exit(launcher, launched[0], 0)
                return
            time.sleep(0.1)

    report = beside_the_cloud(cloud, lambda: supervisor.run(COMMAND))
    host, first_spot, _, second_spot = launched
    assert report.completed and report.preemptions == 1 and report.instances == 3
    assert report.placements == [
        "node-0: on-demand",
        "node-1: spot in us-east-1a",
        "node-2: spot in us-east-1a",
    ]
    address = launcher.ec2.describe_instances(InstanceIds=[host])["Reservations"][0]["Instances"][
        0
    ]["PrivateIpAddress"]
    host_boot = user_data(launcher, host)
    assert "--rdzv-endpoint=127.0.0.1:29511" in host_boot and "is_host=true" in host_boot
    for spot in (first_spot, second_spot):
        boot = user_data(launcher, spot)
        assert f"--rdzv-endpoint={address}:29511" in boot and "is_host=false" in boot
        assert "--forward-notices" in boot  # its torchrun leaves on the notice
        assert "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1" in boot
        assert "python -m torch.distributed.run" in boot  # the instance's, not this one's
    for instance_id in (host, first_spot, second_spot):
        described = launcher.ec2.describe_instances(InstanceIds=[instance_id])
        groups = described["Reservations"][0]["Instances"][0]["SecurityGroups"]
        assert [g["GroupId"] for g in groups] == [group]
    with open_operational(tmp_path / "store.duckdb") as market:
        ledger_report = job_report(market, ledger.job_id)
    assert ledger_report.preemptions == 1 and not ledger_report.simulated
    assert launcher.running_instances() == []

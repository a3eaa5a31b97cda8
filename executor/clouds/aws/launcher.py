"""The AWS launcher: each instance is an EC2 instance (spot or on-demand) started with boto3.

Its user data is the boot script (:mod:`executor.clouds.aws.boot_script`): it fetches the
shipped workdir and wheel (:mod:`executor.clouds.code_bundle`), runs the command with the AWS
notice watcher on (IMDS),
streams its output to ``s3://BUCKET/spotwise/jobs/JOB/INSTANCE/log/`` and writes the exit code
next to it, then shuts the instance down (``InstanceInitiatedShutdownBehavior=terminate``).
The launcher reads the output back as the job's log and events. A spot launch that AWS refuses
for capacity or price raises :class:`NoCapacity`, so the supervisor can choose again (or go on
demand).
Asking an instance to move terminates it: the OS shutdown sends SIGTERM, on which the job
checkpoints and exits with the preempted code.

User data is readable by every process on the instance, so it carries no secret: secrets
(``secrets=``) go to SSM Parameter Store as SecureStrings under ``/spotwise/JOB/NAME``; the
instance reads them with its role into the command's environment, and
:meth:`AwsLauncher.close` deletes them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from botocore.exceptions import ClientError

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.executor.clouds.aws.boot_script import BOOT_LOG, boot_script
from spotwise.executor.clouds.aws.gc import job_tags
from spotwise.executor.clouds.aws.on_instance import EXIT_NAME, LOG_FOLDER
from spotwise.executor.clouds.code_bundle import ShippedCode
from spotwise.executor.errors import PREEMPTED_EXIT_CODE, ExecutorError, NoCapacity
from spotwise.executor.launchers.base import Placement, Preemption
from spotwise.executor.supervise.job_log import echo
from spotwise.policy.observe import ObserveMode

CAPACITY_ERRORS = {
    "InsufficientInstanceCapacity",
    "SpotMaxPriceTooLow",
    "MaxSpotInstanceCountExceeded",
    "InsufficientCapacity",
    "Unsupported",
}
HISTORY_TICK_S = 300
SPOT_TERMINATION = "Server.SpotInstanceTermination"
SECRET_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


def aws_session(region: str, who: str) -> Any:
    """A boto3 session for ``region`` with credentials.

    Raises:
        ExecutorError: in one line, when no credentials are found (``who`` says what needed
            them).
    """
    import boto3

    session = boto3.Session(region_name=region)
    if session.get_credentials() is None:
        raise ExecutorError(
            f"{who}: no AWS credentials found; set AWS_PROFILE, or AWS_ACCESS_KEY_ID "
            "and AWS_SECRET_ACCESS_KEY, or run `aws configure`, then run again"
        )
    return session


class AwsInstance:
    """One EC2 instance running the command; its output comes back from S3 in chunks."""

    def __init__(
        self,
        launcher: AwsLauncher,
        instance_id: str,
        placement: Placement,
        log: Callable[[str], None],
        address: str | None = None,
    ) -> None:
        self.launcher, self.instance_id, self.placement = launcher, instance_id, placement
        self.address = address
        self.events: list[dict[str, Any]] = []
        self.started_hours = launcher.now_hours()
        self._log = log
        self._code: int | None = None
        self._asked_to_leave = False
        self._last_chunk = ""
        self._lines_read = 0
        self._state = "pending"
        """Its EC2 state when last asked."""

    def _key(self, name: str) -> str:
        return f"{self.launcher.prefix}/{self.instance_id}/{name}"

    def _read(self, name: str) -> str | None:
        """An object of this instance's folder as text, None while it is not there."""
        try:
            body = self.launcher.s3.get_object(Bucket=self.launcher.bucket, Key=self._key(name))
        except ClientError as exc:
            if exc.response["Error"]["Code"] in ("NoSuchKey", "404"):
                return None
            raise
        return str(body["Body"].read().decode(errors="replace"))

    def _exit_code(self) -> int | None:
        text = self._read(EXIT_NAME)
        return None if text is None else int(text.strip() or "1")

    def read_output(self) -> None:
        """Pass the log chunks the instance sent since the last call on: the command's JSON
        event lines on stdout become events, every other line goes to the job's log."""
        pages = self.launcher.s3.get_paginator("list_objects_v2").paginate(
            Bucket=self.launcher.bucket,
            Prefix=self._key(LOG_FOLDER) + "/",
            StartAfter=self._last_chunk or self._key(LOG_FOLDER) + "/",
        )
        for page in pages:
            for item in page.get("Contents", []):
                body = self.launcher.s3.get_object(Bucket=self.launcher.bucket, Key=item["Key"])
                for record in body["Body"].read().decode(errors="replace").splitlines():
                    self._line(json.loads(record))
                self._last_chunk = item["Key"]

    def _line(self, record: dict[str, str]) -> None:
        self._lines_read += 1
        line = record.get("line", "")
        if record.get("stream") == "out":
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            if isinstance(event, dict):
                event["cloud_hours"] = self.launcher.now_hours()
                self.events.append(event)
                return
        self._log(line)

    def _boot_failure(self) -> None:
        """When the command never ran, the boot script's own log says why."""
        if self._lines_read == 0:
            for line in (self._read(BOOT_LOG) or "").splitlines()[-40:]:
                self._log(f"boot: {line}")

    def poll(self) -> int | None:
        """The command's exit code once it has ended, else None."""
        if self._code is not None:
            return self._code
        self.read_output()
        self._code = self._exit_code()
        if self._code is None:
            reservations = self.launcher.ec2.describe_instances(InstanceIds=[self.instance_id])
            instance = reservations["Reservations"][0]["Instances"][0]
            self._state = str(instance["State"]["Name"])
            if self._state not in ("shutting-down", "terminated"):
                return None
            # It writes its exit code before it shuts down, so one that is gone may have
            # reported between the two reads above: read the report once more.
            self._code = self._exit_code()
            if self._code is None:
                # Gone without reporting: a spot reclaim, or a shutdown we asked for (a notice:
                # the job had its chance to checkpoint), is a preemption; anything else fails.
                reason = instance.get("StateReason", {}).get("Code", "")
                taken = reason == SPOT_TERMINATION or self._asked_to_leave
                self._code = PREEMPTED_EXIT_CODE if taken else 1
        self.read_output()  # the last chunks go up before the exit code
        if self._code != 0:
            self._boot_failure()
        return self._code

    def waiting(self, running_s: float) -> str | None:
        """What the supervisor waits for, ``running_s`` after the launch, while the instance
        has sent no output yet (None: it has, or it has ended)."""
        if self._lines_read or self._code is not None:
            return None
        took = f"{running_s / 60:.0f} min" if running_s >= 90 else f"{running_s:.0f} s"
        return (
            f"instance {self.instance_id} booting for {took} (EC2: {self._state}), no output "
            f"yet; `spotwise jobs logs {self.launcher.job_id}` shows it once it comes"
        )

    def notice(self) -> None:
        """Ask it to leave: a terminate is an OS shutdown, i.e. SIGTERM to the job."""
        self._asked_to_leave = True
        self.launcher.ec2.terminate_instances(InstanceIds=[self.instance_id])

    def kill(self) -> None:
        """End the instance now, without a notice."""
        self.launcher.ec2.terminate_instances(InstanceIds=[self.instance_id])

    def process_group(self) -> None:
        """It runs on its own machine."""
        return None

    def quiet_s(self) -> None:
        """Not known from here: the step heartbeat stays on the instance."""
        return None

    def terminate(self) -> None:
        """End the instance: the supervisor's teardown of it."""
        self.launcher.ec2.terminate_instances(InstanceIds=[self.instance_id])


class AwsLauncher:
    """Starts EC2 instances in the zones of one region (the pools)."""

    name = "aws"
    simulated = False
    simulation = None
    observe: ObserveMode = "probe"
    python = "python"
    """The boot script's venv, first on the command's PATH."""

    def __init__(
        self,
        *,
        session: Any,
        region: str,
        zones: Sequence[str],
        instance_type: str,
        image_id: str,
        bucket: str,
        job_id: str,
        code: ShippedCode,
        setup: Sequence[str] = (),
        endpoint_url: str | None = None,
        instance_profile: str | None = None,
        secrets: dict[str, str] | None = None,
        security_groups: Sequence[str] = (),
        max_price: float | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """``code`` is the shipped workdir and wheel (:func:`executor.clouds.aws.shipping.ship`);
        ``setup`` commands run in the workdir before the command. ``secrets`` (variable name →
        value) reach the command through SSM SecureStrings, which the instance profile must be
        allowed to read (``ssm:GetParameter``). ``security_groups`` go on every instance (an
        elastic job's nodes need one that lets them reach each other). ``max_price`` is every spot
        request's MaxPrice in USD/h (None: up to the on-demand price)."""
        self.ec2 = session.client("ec2", region_name=region, endpoint_url=endpoint_url)
        self.s3 = session.client("s3", region_name=region, endpoint_url=endpoint_url)
        self.ssm = session.client("ssm", region_name=region, endpoint_url=endpoint_url)
        self.pools = tuple(zones)
        self.instance_type, self.image_id = instance_type, image_id
        self.region, self.bucket, self.code, self.setup = region, bucket, code, tuple(setup)
        self.prefix = f"spotwise/jobs/{job_id}"
        self.job_id = job_id
        self.instance_profile = instance_profile
        self.security_groups = tuple(security_groups)
        self.max_price = max_price
        self.clock = clock
        self._began = clock.monotonic()
        self.secret_parameters = self._store_secrets(secrets or {})

    def _store_secrets(self, secrets: dict[str, str]) -> dict[str, str]:
        """Put each secret in SSM Parameter Store; the parameter name of each variable."""
        if secrets and not self.instance_profile:
            raise ExecutorError(
                "secrets reach instances through SSM with the instance role: pass an instance "
                "profile allowed ssm:GetParameter on /spotwise/*"
            )
        names = {}
        for name, value in secrets.items():
            if not SECRET_NAME.match(name):
                raise ExecutorError(f"secret name {name[:40]!r}: use letters, digits and _")
            parameter = f"/spotwise/{self.job_id}/{name}"
            try:
                self.ssm.put_parameter(
                    Name=parameter, Value=value, Type="SecureString", Tags=job_tags(self.job_id)
                )
            except ClientError as exc:
                raise ExecutorError(f"cannot store secret {name} in SSM: {exc}") from exc
            names[name] = parameter
        return names

    def close(self) -> None:
        """Delete the job's secrets from SSM (the instances are gone by now)."""
        for parameter in self.secret_parameters.values():
            try:
                self.ssm.delete_parameter(Name=parameter)
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "ParameterNotFound":
                    raise ExecutorError(
                        f"cannot delete {parameter} from SSM: {exc}; delete it by hand"
                    ) from exc
        self.secret_parameters = {}

    def now_hours(self) -> float:
        """Hours since the launcher started, on its clock."""
        return (self.clock.monotonic() - self._began) / 3600.0

    def wait(self, seconds: float) -> None:
        """Sleep ``seconds`` on the launcher's clock."""
        self.clock.sleep(seconds)

    def available(self) -> dict[str, bool]:
        """AWS does not publish spot capacity: every zone counts as available until a launch
        there is refused (the supervisor, in probe mode, goes by what launches taught)."""
        return dict.fromkeys(self.pools, True)

    def history(self) -> tuple[np.ndarray, int]:
        """No past to show: one tick of five minutes, the scale of a launch and of a spot
        notice. (An hour-long tick made a changeover an hour, so a job with an hour of slack
        went on demand at once.)"""
        return np.ones((len(self.pools), 1), dtype=bool), HISTORY_TICK_S

    def launch(
        self,
        placement: Placement,
        command: Sequence[str],
        env: dict[str, str],
        log: Callable[[str], None] | None = None,
    ) -> AwsInstance:
        """run_instances in the placement's zone and market; the instance's output goes to
        ``log`` (default: printed, prefixed by where it runs).

        Raises:
            NoCapacity: when AWS refuses the spot request for capacity or price.
        """
        request = self._request(placement, command, env)
        try:
            response = self.ec2.run_instances(**request)
        except ClientError as exc:
            code = exc.response["Error"]["Code"]
            if placement.market == "spot" and code in CAPACITY_ERRORS:
                raise NoCapacity(f"{placement.pool}: {code}") from exc
            raise ExecutorError(f"run_instances in {placement.pool or 'any zone'}: {exc}") from exc
        started = response["Instances"][0]
        return AwsInstance(
            self,
            started["InstanceId"],
            placement,
            log or echo(placement),
            address=started.get("PrivateIpAddress"),
        )

    def _request(
        self, placement: Placement, command: Sequence[str], env: dict[str, str]
    ) -> dict[str, Any]:
        """The run_instances request of one instance at ``placement``: its boot script, tags,
        zone, spot options (capped by :meth:`_cap`), instance profile and security groups."""
        request: dict[str, Any] = {
            "ImageId": self.image_id,
            "InstanceType": self.instance_type,
            "MinCount": 1,
            "MaxCount": 1,
            "UserData": boot_script(
                command,
                env,
                code=self.code,
                region=self.region,
                bucket=self.bucket,
                prefix=self.prefix,
                setup=self.setup,
                secret_parameters=self.secret_parameters,
            ),
            "InstanceInitiatedShutdownBehavior": "terminate",
            "TagSpecifications": [
                {
                    "ResourceType": "instance",
                    "Tags": [
                        *job_tags(self.job_id),
                        {"Key": "spotwise:market", "Value": placement.market},
                    ],
                }
            ],
        }
        if placement.pool:
            request["Placement"] = {"AvailabilityZone": placement.pool}
        if placement.market == "spot":
            request["InstanceMarketOptions"] = {
                "MarketType": "spot",
                "SpotOptions": {
                    "SpotInstanceType": "one-time",
                    "InstanceInterruptionBehavior": "terminate",
                    **({"MaxPrice": f"{cap:.4f}"} if (cap := self._cap(placement)) else {}),
                },
            }
        if self.instance_profile:
            request["IamInstanceProfile"] = {"Name": self.instance_profile}
        if self.security_groups:
            request["SecurityGroupIds"] = list(self.security_groups)
        return request

    def _cap(self, placement: Placement) -> float | None:
        """The spot request's MaxPrice: the policy's bid, never above the user's --max-price."""
        caps = [c for c in (placement.bid, self.max_price) if c is not None]
        return min(caps) if caps else None

    def preemption(self, instance: Any) -> Preemption | None:
        """Unknown from outside: the job itself watches IMDS for the two-minute notice."""
        return None

    def running_instances(self) -> list[str]:
        """This job's instances that are not terminated (for teardown checks)."""
        pages = self.ec2.get_paginator("describe_instances").paginate(
            Filters=[
                {"Name": "tag:spotwise:job", "Values": [self.job_id]},
                {"Name": "instance-state-name", "Values": ["pending", "running", "stopping"]},
            ]
        )
        return [
            i["InstanceId"] for page in pages for r in page["Reservations"] for i in r["Instances"]
        ]

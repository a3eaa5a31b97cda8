"""The AWS launcher: each instance is an EC2 instance (spot or on-demand) started with boto3.

User data installs Spotwise, runs the command with the AWS notice watcher on (IMDS), writes the
exit code to ``s3://BUCKET/spotwise/jobs/JOB/INSTANCE/exit`` and shuts the instance down
(``InstanceInitiatedShutdownBehavior=terminate``). A spot launch that AWS refuses for capacity
or price raises :class:`NoCapacity`, so the supervisor can choose again (or go on demand).
Asking an instance to move terminates it: the OS shutdown sends SIGTERM, on which the job
checkpoints and exits with the preempted code.

User data is readable by every process on the instance and through ``DescribeInstanceAttribute``,
so it carries only the non-secret settings of :data:`PLAIN_ENV`. Secrets (``secrets=``) go to
SSM Parameter Store as SecureStrings under ``/spotwise/JOB/NAME``; the boot script reads them
with the instance role into the command's environment, and :meth:`AwsLauncher.close` deletes
them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from botocore.exceptions import ClientError

from spotwise.executor.clock import SYSTEM_CLOCK, Clock
from spotwise.executor.endpoints import AWS_IMDS_URL
from spotwise.executor.errors import PREEMPTED_EXIT_CODE, ExecutorError, NoCapacity
from spotwise.executor.launchers.base import Placement, Preemption
from spotwise.policy.observe import ObserveMode

CAPACITY_ERRORS = {
    "InsufficientInstanceCapacity",
    "SpotMaxPriceTooLow",
    "MaxSpotInstanceCountExceeded",
    "InsufficientCapacity",
    "Unsupported",
}
SPOT_TERMINATION = "Server.SpotInstanceTermination"
PLAIN_ENV = ("SPOTWISE_POOL", "SPOTWISE_MARKET", "SPOTWISE_MTBF_S", "SPOTWISE_NOTICES")
"""The only variables user data may carry: none of them is a secret."""
SECRET_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


def user_data(
    command: Sequence[str],
    env: dict[str, str],
    *,
    package: str,
    bucket: str,
    prefix: str,
    secret_parameters: dict[str, str] | None = None,
) -> str:
    """The boot script: install, read the secrets from SSM, run the command, report its exit
    code to S3, shut down. ``env`` is filtered to :data:`PLAIN_ENV`; ``secret_parameters``
    maps a variable name to the SSM parameter holding its value."""
    plain = {k: v for k, v in env.items() if k in PLAIN_ENV}
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(plain.items()))
    secrets = [
        f"export {name}=$(aws ssm get-parameter --with-decryption --name "
        f"{shlex.quote(parameter)} --query Parameter.Value --output text)"
        for name, parameter in sorted((secret_parameters or {}).items())
    ]
    return "\n".join(
        [
            "#!/bin/bash",
            "set -u",
            f"python3 -m pip install --quiet {shlex.quote(package)}",
            *secrets,
            f"TOKEN=$(curl -s -X PUT {AWS_IMDS_URL}/latest/api/token "
            "-H 'X-aws-ec2-metadata-token-ttl-seconds: 300')",
            'ID=$(curl -s -H "X-aws-ec2-metadata-token: $TOKEN" '
            f"{AWS_IMDS_URL}/latest/meta-data/instance-id)",
            f"env SPOTWISE_NOTICES=aws {exports} {shlex.join(command)}",
            "CODE=$?",
            f'echo "$CODE" | aws s3 cp - "s3://{bucket}/{prefix}/$ID/exit"',
            "shutdown -h now",
            "",
        ]
    )


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
    """One EC2 instance running the command."""

    def __init__(self, launcher: AwsLauncher, instance_id: str, placement: Placement) -> None:
        self.launcher, self.instance_id, self.placement = launcher, instance_id, placement
        self.events: list[dict[str, Any]] = []
        self.started_hours = launcher.now_hours()
        self._code: int | None = None

    def _exit_code(self) -> int | None:
        key = f"{self.launcher.prefix}/{self.instance_id}/exit"
        try:
            body = self.launcher.s3.get_object(Bucket=self.launcher.bucket, Key=key)["Body"]
        except ClientError as exc:
            if exc.response["Error"]["Code"] in ("NoSuchKey", "404"):
                return None
            raise
        return int(body.read().decode().strip() or "1")

    def poll(self) -> int | None:
        if self._code is None:
            self._code = self._exit_code()
        if self._code is None:
            reservations = self.launcher.ec2.describe_instances(InstanceIds=[self.instance_id])
            instance = reservations["Reservations"][0]["Instances"][0]
            if instance["State"]["Name"] not in ("shutting-down", "terminated"):
                return None
            # It writes its exit code before it shuts down, so one that is gone may have
            # reported between the two reads above: read the report once more.
            self._code = self._exit_code()
            if self._code is None:
                # Gone without reporting: a spot reclaim is a preemption, anything else fails.
                reason = instance.get("StateReason", {}).get("Code", "")
                self._code = PREEMPTED_EXIT_CODE if reason == SPOT_TERMINATION else 1
        return self._code

    def notice(self) -> None:
        """Ask it to leave: a terminate is an OS shutdown, i.e. SIGTERM to the job."""
        self.launcher.ec2.terminate_instances(InstanceIds=[self.instance_id])

    def kill(self) -> None:
        self.launcher.ec2.terminate_instances(InstanceIds=[self.instance_id])

    def process_group(self) -> None:
        """It runs on its own machine."""
        return None

    def quiet_s(self) -> None:
        """Not known from here: the instance reports only its exit code."""
        return None

    def terminate(self) -> None:
        self.launcher.ec2.terminate_instances(InstanceIds=[self.instance_id])


class AwsLauncher:
    """Starts EC2 instances in the zones of one region (the pools)."""

    name = "aws"
    simulated = False
    simulation = None
    observe: ObserveMode = "probe"

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
        package: str = "spotwise",
        endpoint_url: str | None = None,
        instance_profile: str | None = None,
        secrets: dict[str, str] | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """``secrets`` (variable name → value) reach the command through SSM SecureStrings,
        which the instance profile must be allowed to read (``ssm:GetParameter``)."""
        self.ec2 = session.client("ec2", region_name=region, endpoint_url=endpoint_url)
        self.s3 = session.client("s3", region_name=region, endpoint_url=endpoint_url)
        self.ssm = session.client("ssm", region_name=region, endpoint_url=endpoint_url)
        self.pools = tuple(zones)
        self.instance_type, self.image_id = instance_type, image_id
        self.bucket, self.package = bucket, package
        self.prefix = f"spotwise/jobs/{job_id}"
        self.job_id = job_id
        self.instance_profile = instance_profile
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
                    Name=parameter, Value=value, Type="SecureString", Overwrite=True
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
        return (self.clock.monotonic() - self._began) / 3600.0

    def wait(self, seconds: float) -> None:
        self.clock.sleep(seconds)

    def available(self) -> dict[str, bool]:
        """AWS does not publish spot capacity: every zone counts as available until a launch
        there is refused (the supervisor, in probe mode, goes by what launches taught)."""
        return dict.fromkeys(self.pools, True)

    def history(self) -> tuple[np.ndarray, int]:
        return np.ones((len(self.pools), 1), dtype=bool), 3600

    def launch(
        self,
        placement: Placement,
        command: Sequence[str],
        env: dict[str, str],
        log: Callable[[str], None] | None = None,
    ) -> AwsInstance:
        """run_instances in the placement's zone and market (the instance's output does not
        come back yet: ``log`` is unused).

        Raises:
            NoCapacity: when AWS refuses the spot request for capacity or price.
        """
        request: dict[str, Any] = {
            "ImageId": self.image_id,
            "InstanceType": self.instance_type,
            "MinCount": 1,
            "MaxCount": 1,
            "UserData": user_data(
                command,
                env,
                package=self.package,
                bucket=self.bucket,
                prefix=self.prefix,
                secret_parameters=self.secret_parameters,
            ),
            "InstanceInitiatedShutdownBehavior": "terminate",
            "TagSpecifications": [
                {
                    "ResourceType": "instance",
                    "Tags": [
                        {"Key": "spotwise:job", "Value": self.job_id},
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
                },
            }
        if self.instance_profile:
            request["IamInstanceProfile"] = {"Name": self.instance_profile}
        try:
            response = self.ec2.run_instances(**request)
        except ClientError as exc:
            code = exc.response["Error"]["Code"]
            if placement.market == "spot" and code in CAPACITY_ERRORS:
                raise NoCapacity(f"{placement.pool}: {code}") from exc
            raise ExecutorError(f"run_instances in {placement.pool or 'any zone'}: {exc}") from exc
        instance_id = response["Instances"][0]["InstanceId"]
        return AwsInstance(self, instance_id, placement)

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

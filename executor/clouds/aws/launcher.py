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

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from botocore.exceptions import ClientError

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.executor.clouds.aws.boot_script import boot_script
from spotwise.executor.clouds.aws.gc import job_tags
from spotwise.executor.clouds.cloud_launcher import CloudLauncher
from spotwise.executor.clouds.code_bundle import ShippedCode
from spotwise.executor.clouds.instance import BucketInstance
from spotwise.executor.errors import ExecutorError, NoCapacity
from spotwise.executor.launchers.base import Placement, echo

CAPACITY_ERRORS = {
    "InsufficientInstanceCapacity",
    "SpotMaxPriceTooLow",
    "MaxSpotInstanceCountExceeded",
    "InsufficientCapacity",
    "Unsupported",
}
SPOT_TERMINATION = "Server.SpotInstanceTermination"
SECRET_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


def aws_session(region: str, who: str) -> Any:
    """A boto3 session for ``region`` with credentials.

    Raises:
        ExecutorError: in one line, when no credentials are found (``who`` says what needed
            them).
    """
    import boto3

    from spotwise.pricing.clouds.aws.spot_prices import no_credentials

    session = boto3.Session(region_name=region)
    if session.get_credentials() is None:
        raise ExecutorError(no_credentials(who))
    return session


class AwsInstance(BucketInstance["AwsLauncher"]):
    """One EC2 instance running the command; its output comes back from S3 in chunks."""

    noun = "instance"
    service = "EC2"
    first_state = "pending"
    _reason = ""
    """Why EC2 last changed its state (its StateReason code), when last asked."""

    def _read(self, name: str) -> str | None:
        """An object of this instance's folder as text, None while it is not there."""
        try:
            body = self.launcher.s3.get_object(Bucket=self.launcher.bucket, Key=self._key(name))
        except ClientError as exc:
            if exc.response["Error"]["Code"] in ("NoSuchKey", "404"):
                return None
            raise
        return str(body["Body"].read().decode(errors="replace"))

    def _chunks_after(self, folder: str, after: str) -> Iterator[tuple[str, str]]:
        """The chunks S3 lists after ``after``, page by page, each read as it comes."""
        pages = self.launcher.s3.get_paginator("list_objects_v2").paginate(
            Bucket=self.launcher.bucket, Prefix=folder, StartAfter=after or folder
        )
        for page in pages:
            for item in page.get("Contents", []):
                body = self.launcher.s3.get_object(Bucket=self.launcher.bucket, Key=item["Key"])
                yield item["Key"], body["Body"].read().decode(errors="replace")

    def _gone(self) -> bool:
        """Whether EC2 shuts it down or has terminated it."""
        reservations = self.launcher.ec2.describe_instances(InstanceIds=[self.instance_id])
        instance = reservations["Reservations"][0]["Instances"][0]
        self._state = str(instance["State"]["Name"])
        self._reason = instance.get("StateReason", {}).get("Code", "")
        return self._state in ("shutting-down", "terminated")

    def _taken_back(self) -> bool:
        """A spot reclaim is EC2's reason."""
        return self._reason == SPOT_TERMINATION

    def _end(self) -> None:
        """Terminate it: an OS shutdown, i.e. SIGTERM to the job."""
        self.launcher.ec2.terminate_instances(InstanceIds=[self.instance_id])


class AwsLauncher(CloudLauncher):
    """Starts EC2 instances in the zones of one region (the pools)."""

    name = "aws"

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
        python: str | None = None,
        endpoint_url: str | None = None,
        instance_profile: str | None = None,
        secrets: dict[str, str] | None = None,
        security_groups: Sequence[str] = (),
        max_price: float | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """``code`` is the shipped workdir and wheel (:func:`executor.clouds.aws.shipping.ship`);
        ``setup`` commands run in the workdir before the command, under ``python`` (the user's
        ``--python``, else the image's found at boot). ``secrets`` (variable name →
        value) reach the command through SSM SecureStrings, which the instance profile must be
        allowed to read (``ssm:GetParameter``). ``security_groups`` go on every instance (an
        elastic job's nodes need one that lets them reach each other). ``max_price`` is every spot
        request's MaxPrice in USD/h (None: up to the on-demand price)."""
        super().__init__(pools=zones, job_id=job_id, prefix=f"spotwise/jobs/{job_id}", clock=clock)
        self.ec2 = session.client("ec2", region_name=region, endpoint_url=endpoint_url)
        self.s3 = session.client("s3", region_name=region, endpoint_url=endpoint_url)
        self.ssm = session.client("ssm", region_name=region, endpoint_url=endpoint_url)
        self.instance_type, self.image_id = instance_type, image_id
        self.region, self.bucket, self.code, self.setup = region, bucket, code, tuple(setup)
        self.image_python = python
        self.instance_profile = instance_profile
        self.security_groups = tuple(security_groups)
        self.max_price = max_price
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
                python=self.image_python,
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

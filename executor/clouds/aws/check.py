"""``spotwise check aws``: is this account ready for ``spotwise run --launcher aws``?

Each check is one line with its fix: credentials, the bucket, the AMI, the instances' profile,
the spot vCPU quota of the instance type's family, and every permission the code needs. A
permission is probed with the call itself where that is harmless (EC2's ``DryRun``, a probe
object under ``spotwise/check/`` in the bucket, a probe parameter in SSM), so the answer
includes service control policies and permission boundaries that a simulation would miss.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import date
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from botocore.parsers import ResponseParserError

from spotwise.executor.clouds.aws.gc import PROBE_PARAMETER, job_tags
from spotwise.executor.clouds.base import Check
from spotwise.executor.clouds.image_python import python_note

DENIED = {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "403", "Forbidden"}
DOCS = "docs/aws.md"
PROBE_KEY = "spotwise/check/probe"
SPOT_QUOTAS = {
    "p": ("L-7212CCBC", "All P Spot Instance Requests"),
    "g": ("L-3819A6DF", "All G and VT Spot Instance Requests"),
    "vt": ("L-3819A6DF", "All G and VT Spot Instance Requests"),
    "inf": ("L-B5D1601B", "All Inf Spot Instance Requests"),
    "f": ("L-88CF9481", "All F Spot Instance Requests"),
    "x": ("L-E3A00192", "All X Spot Instance Requests"),
    **dict.fromkeys(
        "acdhimrtz",
        ("L-34B43A08", "All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests"),
    ),
}
"""EC2's spot vCPU quota (Service Quotas code and name) per instance family letter."""
PYTHON_311 = date(2022, 10, 24)
"""Python 3.11's release: an image built before it cannot have it."""
MONTH_BUILT = re.compile(
    r"(?<![A-Za-z])(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*[ _-]?(20\d{2})(?!\d)"
)
"""A build month in an image's name (``3.3_Oct2017``)."""
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
BUILT = re.compile(r"(?<!\d)(20\d{2})[.-]?(0[1-9]|1[0-2])[.-]?(0[1-9]|[12]\d|3[01])(?!\d)")


def spot_quota(instance_type: str) -> tuple[str, str] | None:
    """The spot vCPU quota (code, name) that ``instance_type`` counts against."""
    family = re.match(r"[a-z]+", instance_type)
    return SPOT_QUOTAS.get(family.group(0)) if family else None


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _first_line(exc: Exception) -> str:
    """An error's first line, whole: botocore ends it with a colon before a raw body."""
    line = (str(exc).splitlines() or [type(exc).__name__])[0].strip().rstrip(":").strip()
    return line[:200]


def _built(image: dict[str, Any]) -> date | None:
    """When ``image`` was built, the earliest of its creation date and a date in its name or
    description (a copy's creation date is the copy's; its name keeps the build's)."""
    found = []
    created = str(image.get("CreationDate") or "")[:10]
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", created):
        found.append(date.fromisoformat(created))
    return min([*found, *_named_dates(image)], default=None)


def _named_dates(image: dict[str, Any]) -> list[date]:
    """The build dates an image's name and description say (a day, or a month's first)."""
    found = []
    for text in (image.get("Name") or "", image.get("Description") or ""):
        for year, month, day in BUILT.findall(text):
            try:
                found.append(date(int(year), int(month), int(day)))
            except ValueError:
                continue
        for month, year in MONTH_BUILT.findall(text):
            found.append(date(int(year), MONTHS.index(month) + 1, 1))
    return found


def _text(image: dict[str, Any]) -> str:
    return f"{image.get('Name') or ''} {image.get('Description') or ''}"


def with_pytorch(image: dict[str, Any]) -> bool:
    """Whether ``image`` is a Deep Learning AMI with PyTorch (its torch in its own environment,
    ``/opt/pytorch`` or a conda env, which the boot script finds)."""
    text = _text(image)
    return "Deep Learning" in text and "PyTorch" in text


def python_problem(image: dict[str, Any]) -> str | None:
    """Why ``image`` cannot have the Python 3.11+ the boot script needs (None: it may): built
    before Python 3.11 existed, or a distribution release whose python3 is older. A Deep
    Learning AMI with PyTorch brings its own Python: only its age counts."""
    built = _built(image)
    if built is not None and built < PYTHON_311:
        why = f"built {built:%Y-%m-%d}, before Python 3.11 existed ({PYTHON_311:%Y-%m-%d})"
        if "Deep Learning" in _text(image):
            why += ", with a torch older than 2.3, the oldest Spotwise supports"
        return why
    if with_pytorch(image):
        return None
    note = python_note(_text(image))
    return note[1] if note and note[0] else None


def surely_without_python(image: dict[str, Any]) -> bool:
    """Whether ``image`` itself was made before Python 3.11 existed: its creation says so, or
    it is a Deep Learning AMI whose name dates it (AWS's release names say what they ship).
    Otherwise its name or description only suggest it: a custom build may have added Python
    3.11 to an old release."""
    created = str(image.get("CreationDate") or "")[:10]
    if created and created < f"{PYTHON_311:%Y-%m-%d}":
        return True
    named = min(_named_dates(image), default=None)
    return "Deep Learning AMI" in _text(image) and named is not None and named < PYTHON_311


class AwsCheck:
    """The checks for one region and one set of ``spotwise run`` settings."""

    def __init__(
        self,
        session: Any,
        region: str,
        *,
        bucket: str | None = None,
        image_id: str | None = None,
        instance_profile: str | None = None,
        instance_type: str = "p3.2xlarge",
        endpoint_url: str | None = None,
    ) -> None:
        config = Config(retries={"max_attempts": 2, "mode": "standard"})

        def client(name: str) -> Any:
            return session.client(
                name, region_name=region, endpoint_url=endpoint_url, config=config
            )

        self.client = client
        self.region, self.bucket, self.image_id = region, bucket, image_id
        self.instance_profile, self.instance_type = instance_profile, instance_type
        self.ec2, self.s3 = client("ec2"), client("s3")
        self._bucket_ok = False

    def run(self) -> Iterator[Check]:
        """Every check, in the order a user would fix them, each as soon as it is decided."""
        first = self.credentials()
        yield first
        if first.status != "ok":
            return  # nothing else can be asked
        yield self.check_bucket()
        yield self.image()
        yield self.profile()
        yield self.quota()
        yield from self.permissions()

    def setup_command(self) -> str:
        """The ``spotwise setup aws`` that makes the bucket, the role and its profile named."""
        return (
            f"spotwise setup aws --region {self.region} --bucket {self.bucket or 'BUCKET'} "
            f"--instance-profile {self.instance_profile or 'spotwise-instance'}"
        )

    def credentials(self) -> Check:
        """The credentials check: whose they are, or the sign-in to run."""
        sts = self.client("sts")
        try:
            me = sts.get_caller_identity()
        except (ClientError, BotoCoreError) as exc:
            return Check(
                "credentials",
                "missing",
                f"rejected: {exc}",
                "set AWS_PROFILE or fresh AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY",
            )
        return Check("credentials", "ok", f"{me['Arn']} (account {me['Account']})")

    def check_bucket(self) -> Check:
        """The bucket check: it exists, is private and in the region."""
        what = "bucket"
        if not self.bucket:
            return Check(
                what, "skipped", "no --bucket given", "pass --bucket NAME to check it", "--bucket"
            )
        try:
            located = self.s3.get_bucket_location(Bucket=self.bucket)
        except ClientError as exc:
            if _code(exc) in ("404", "NoSuchBucket", "NotFound"):
                return Check(
                    what, "missing", f"s3://{self.bucket} does not exist", self.setup_command()
                )
            return Check(
                what,
                "missing",
                f"s3://{self.bucket} cannot be read ({_code(exc)}): not yours, or no "
                "s3:GetBucketLocation",
                f"use a bucket of this account, or allow s3:GetBucketLocation ({DOCS})",
            )
        self._bucket_ok = True
        where = located.get("LocationConstraint") or "us-east-1"
        if where != self.region:
            return Check(
                what,
                "missing",
                f"s3://{self.bucket} is in {where}, the instances in {self.region}",
                f"use a bucket in {self.region} (cross-region traffic is billed)",
            )
        return Check(what, "ok", f"s3://{self.bucket} in {where}")

    def image(self) -> Check:
        """The image check: it exists where the instances run."""
        what = "image"
        if not self.image_id:
            return Check(
                what, "skipped", "no --image-id given", "pass --image-id AMI", "--image-id"
            )
        fix = (
            "use an AMI with Python 3.11+ and torch in this region, e.g. an AWS Deep Learning "
            "AMI (aws ec2 describe-images --owners amazon --filters "
            "'Name=name,Values=Deep Learning OSS Nvidia Driver AMI GPU PyTorch*'), or pass "
            "spotwise run --python PATH of a Python 3.11+ on this one"
        )
        try:
            images = self.ec2.describe_images(ImageIds=[self.image_id])["Images"]
        except ClientError as exc:
            if _code(exc) in DENIED:
                return Check(what, "unknown", f"cannot describe it ({_code(exc)})")
            return Check(what, "missing", f"{self.image_id}: {_code(exc)}", fix)
        if not images:
            return Check(what, "missing", f"{self.image_id} not found in {self.region}", fix)
        image = images[0]
        detail = f"{self.image_id} {image.get('Name', '')} ({image.get('Architecture', '?')})"
        if image.get("State", "available") != "available":
            return Check(what, "missing", f"{detail} is {image['State']}", fix)
        if (why := python_problem(image)) is None:
            torch = (
                "torch in its own environment, which the boot finds"
                if with_pytorch(image)
                else "no torch known on it: each boot installs it from PyPI (minutes; a Deep "
                "Learning AMI with PyTorch has it)"
            )
            return Check(what, "ok", f"{detail}; {torch}")
        if surely_without_python(image):
            return Check(what, "missing", f"{detail}: no Python 3.11+ ({why})", fix)
        return Check(
            what,
            "unknown",
            f"{detail}: likely no Python 3.11+ ({why})",
            f"{fix}; if you installed Python 3.11+ on it yourself as python3, it will do",
        )

    def profile(self) -> Check:
        """The instance profile check: it exists and has a role."""
        what = "instance profile"
        if not self.instance_profile:
            return Check(
                what,
                "skipped",
                "no --instance-profile given",
                f"pass --instance-profile NAME (the instances' role, {DOCS})",
                "--instance-profile",
            )
        iam = self.client("iam")
        try:
            found = iam.get_instance_profile(InstanceProfileName=self.instance_profile)
        except ClientError as exc:
            if _code(exc) == "NoSuchEntity":
                return Check(
                    what,
                    "missing",
                    f"{self.instance_profile} does not exist",
                    f"{self.setup_command()} (it makes the role of {DOCS} and its profile)",
                )
            return Check(what, "unknown", f"cannot read it ({_code(exc)})")
        roles = [r["RoleName"] for r in found["InstanceProfile"].get("Roles", [])]
        if not roles:
            return Check(
                what,
                "missing",
                f"{self.instance_profile} has no role",
                f"{self.setup_command()} (it gives the profile its role, {self.instance_profile})",
            )
        return Check(what, "ok", f"{self.instance_profile} (role {roles[0]})")

    def quota(self) -> Check:
        """The Spot quota check: enough is left for one instance of the shape."""
        what = "spot vCPU quota"
        known = spot_quota(self.instance_type)
        if known is None:
            return Check(what, "unknown", f"no quota known for {self.instance_type}")
        code, name = known
        try:
            vcpus = self.ec2.describe_instance_types(InstanceTypes=[self.instance_type])[
                "InstanceTypes"
            ][0]["VCpuInfo"]["DefaultVCpus"]
        except (ClientError, IndexError, KeyError):
            vcpus = None
        quotas = self.client("service-quotas")
        try:
            quota = quotas.get_service_quota(ServiceCode="ec2", QuotaCode=code)["Quota"]["Value"]
        except ClientError as exc:
            return Check(
                what,
                "unknown",
                f"'{name}' ({code}) could not be read: {_code(exc)}",
                "see it in the console: Service Quotas → Amazon EC2",
            )
        need = f"; one {self.instance_type} takes {vcpus}" if vcpus else ""
        if quota < (vcpus or 1):
            return Check(
                what,
                "missing",
                f"'{name}' is {quota:g} vCPUs{need}",
                f"aws service-quotas request-service-quota-increase --service-code ec2 "
                f"--quota-code {code} --desired-value {max(vcpus or 8, 8)} --region {self.region}",
            )
        return Check(what, "ok", f"'{name}' is {quota:g} vCPUs{need}")

    def permissions(self) -> list[Check]:
        """Each permission ``spotwise run`` and ``gc`` need, probed."""
        ec2, s3, ssm, t = self.ec2, self.s3, self.client("ssm"), self.instance_type
        bucket = self.bucket or ""
        probes: dict[str, Callable[[], object] | None] = {
            "ec2:DescribeInstances": lambda: ec2.describe_instances(MaxResults=5),
            "ec2:DescribeSpotPriceHistory": lambda: ec2.describe_spot_price_history(
                InstanceTypes=[t], MaxResults=5
            ),
            "ec2:GetSpotPlacementScores": lambda: ec2.get_spot_placement_scores(
                InstanceTypes=[t], TargetCapacity=1, RegionNames=[self.region]
            ),
            "ec2:RunInstances, ec2:CreateTags, iam:PassRole": self._launch_probe(),
            "ec2:TerminateInstances": lambda: ec2.terminate_instances(
                InstanceIds=["i-0000000000spotwise"], DryRun=True
            ),
            "s3:PutObject": lambda: s3.put_object(Bucket=bucket, Key=PROBE_KEY, Body=b"1"),
            "s3:GetObject": lambda: s3.get_object(Bucket=bucket, Key=PROBE_KEY),
            "s3:ListBucket": lambda: s3.list_objects_v2(Bucket=bucket, Prefix="spotwise/check/"),
            "ssm:PutParameter, ssm:AddTagsToResource": lambda: ssm.put_parameter(
                Name=PROBE_PARAMETER, Value="1", Type="SecureString", Tags=job_tags("check")
            ),
            "ssm:DeleteParameter": lambda: ssm.delete_parameter(Name=PROBE_PARAMETER),
        }
        checks = []
        for action, call in probes.items():
            if action.startswith("s3:") and not self._bucket_ok:
                checks.append(Check(action, "skipped", "needs a bucket that exists"))
            elif call is None:
                checks.append(Check(action, "skipped", "needs --image-id"))
            else:
                checks.append(self._probe(action, call))
        if self._bucket_ok:
            checks += self._remove_probe(s3, bucket)
        return checks

    def _remove_probe(self, s3: Any, bucket: str) -> list[Check]:
        """Delete the probe object the S3 checks wrote (a line only when it stays)."""
        try:
            s3.delete_object(Bucket=bucket, Key=PROBE_KEY)
        except (ClientError, BotoCoreError) as exc:
            why = _code(exc) if isinstance(exc, ClientError) else _first_line(exc)
            return [
                Check(
                    "probe object",
                    "unknown",
                    f"s3://{bucket}/{PROBE_KEY} stays in the bucket ({why})",
                    f"aws s3 rm s3://{bucket}/{PROBE_KEY}, or allow s3:DeleteObject on "
                    f"spotwise/check/* ({DOCS})",
                )
            ]
        return []

    def _launch_probe(self) -> Callable[[], object] | None:
        if not self.image_id:
            return None
        request: dict[str, Any] = {
            "ImageId": self.image_id,
            "InstanceType": self.instance_type,
            "MinCount": 1,
            "MaxCount": 1,
            "DryRun": True,
            "TagSpecifications": [
                {"ResourceType": "instance", "Tags": [{"Key": "spotwise:job", "Value": "check"}]}
            ],
        }
        if self.instance_profile:
            request["IamInstanceProfile"] = {"Name": self.instance_profile}
        return lambda: self.ec2.run_instances(**request)

    def _probe(self, action: str, call: Callable[[], object]) -> Check:
        """Make the call: allowed unless AWS says denied."""
        try:
            call()
        except ClientError as exc:
            code = _code(exc)
            if code == "DryRunOperation":
                return Check(action, "ok", "allowed (dry run)")
            if code in DENIED:
                return Check(
                    action,
                    "missing",
                    "denied",
                    f"allow {action} in the policy for the machine that runs spotwise ({DOCS})",
                )
            if code.startswith("InvalidInstanceID"):
                return Check(action, "unknown", "only an instance tagged spotwise:job can tell")
            if code == "ParameterNotFound":
                return Check(action, "ok", "allowed")
            return Check(action, "unknown", f"{code}: {_first_line(exc)}")
        except (BotoCoreError, ResponseParserError) as exc:  # not AWS's answer (an emulator)
            return Check(
                action,
                "unknown",
                f"the endpoint's answer is not AWS's ({_first_line(exc)})",
                "an emulator or a proxy may lack this call: check it against AWS itself",
            )
        return Check(action, "ok", "allowed")

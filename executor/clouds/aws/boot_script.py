"""The boot script an AWS instance runs as user data (:mod:`executor.clouds.boot_script`, under
:mod:`executor.clouds.aws.on_instance`): it gets and puts files in S3 with boto3 when the AMI's
Python has it, else with the AWS CLI, and asks IMDS for the instance's id
(``SPOTWISE_AWS_IMDS_URL`` overrides where; tests run it against moto and a fake IMDS).

User data is readable by every process on the instance and through
``DescribeInstanceAttribute``, so it carries no secret: secrets are SSM parameter names, read
by the instance role.
"""

from __future__ import annotations

from collections.abc import Sequence

from spotwise.executor.clouds.aws.notice import IMDS
from spotwise.executor.clouds.aws.on_instance import AwsAgent
from spotwise.executor.clouds.boot_script import CloudBoot
from spotwise.executor.clouds.code_bundle import ShippedCode

_INSTANCE_ID = """\
TOKEN=$(curl -sf -X PUT "$IMDS/latest/api/token" -H 'X-aws-ec2-metadata-token-ttl-seconds: 300')
ID=$(curl -sf -H "X-aws-ec2-metadata-token: $TOKEN" "$IMDS/latest/meta-data/instance-id")
[ -n "$ID" ] || { echo "spotwise boot: no instance id from $IMDS"; $SHUTDOWN; exit 1; }
"""
_S3 = """\
s3() {  # s3 get|put KEY FILE: with boto3 when the AMI's Python has it, else the AWS CLI
  if "$PY" -c 'import boto3' 2>/dev/null; then
    "$PY" -c '
import sys, boto3
op, bucket, key, path = sys.argv[1:]
s3 = boto3.client("s3")
s3.download_file(bucket, key, path) if op == "get" else s3.upload_file(path, bucket, key)
' "$1" "$BUCKET" "$2" "$3"
  elif [ "$1" = get ]; then aws s3 cp --quiet "s3://$BUCKET/$2" "$3"
  else aws s3 cp --quiet "$3" "s3://$BUCKET/$2"
  fi
}
"""
AWS_BOOT = CloudBoot(
    cloud="aws",
    agent=AwsAgent.module,
    agent_options='--bucket "$BUCKET"',
    store="s3",
    store_function=_S3,
    store_url="s3://$BUCKET/",
    metadata=IMDS,
    identity=_INSTANCE_ID,
    exported=("AWS_DEFAULT_REGION",),
)
"""What AWS's boot script does its own way."""


def boot_script(
    command: Sequence[str],
    env: dict[str, str],
    *,
    code: ShippedCode,
    region: str,
    bucket: str,
    prefix: str,
    setup: Sequence[str] = (),
    secret_parameters: dict[str, str] | None = None,
    python: str | None = None,
) -> str:
    """The user data of one instance in ``region``, its job's objects under ``prefix`` in
    ``bucket``; ``secret_parameters`` maps a variable to the SSM parameter holding its value;
    ``python`` is the user's ``--python``
    (:meth:`CloudBoot.script <executor.clouds.boot_script.CloudBoot.script>`)."""
    return AWS_BOOT.script(
        command,
        env,
        code=code,
        settings={"AWS_DEFAULT_REGION": region, "BUCKET": bucket},
        prefix=prefix,
        setup=setup,
        secrets=secret_parameters,
        python=python,
    )

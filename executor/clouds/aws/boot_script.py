"""The boot script an AWS instance runs as user data: fetch the job's wheel and workdir from S3
(boto3 when the AMI's Python has it, else the AWS CLI), make a venv that also sees the AMI's
packages (torch on a Deep Learning AMI), install the wheel and what an instance needs, and run
the setup commands and the command under :mod:`executor.clouds.aws.on_instance`; then shut down.

A boot that fails before the command runs uploads its own log (``boot.log``) and exit code 1,
so the supervisor can say why. ``SPOTWISE_ROOT``, ``SPOTWISE_PYTHON``, ``SPOTWISE_SHUTDOWN``
and ``SPOTWISE_AWS_IMDS_URL`` override its folder, interpreter, shutdown and metadata endpoint
(tests run it in a temporary folder against moto and a fake IMDS).

User data is readable by every process on the instance and through
``DescribeInstanceAttribute``, so it carries only the settings of :data:`PLAIN_ENV`; secrets
are SSM parameter names, read by the instance role.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from spotwise.executor.clouds.aws.notice import IMDS
from spotwise.executor.clouds.code_bundle import ShippedCode
from spotwise.executor.clouds.instance_folder import BOOT_LOG

PLAIN_ENV = (
    "SPOTWISE_POOL",
    "SPOTWISE_MARKET",
    "SPOTWISE_NODE",
    "TORCH_DISABLE_SHARE_RDZV_TCP_STORE",
    "SPOTWISE_MTBF_S",
    "SPOTWISE_CHECKPOINT_S",
    "SPOTWISE_NOTICES",
)
"""The only variables user data may carry: none of them is a secret."""

_TEMPLATE = """\
#!/bin/bash
# Spotwise boot script: fetch the code, make a venv, run the command, report, shut down.
set -u
export AWS_DEFAULT_REGION={region}
BUCKET={bucket}
PREFIX={prefix}
ROOT="${{SPOTWISE_ROOT:-/opt/spotwise}}"
PY="${{SPOTWISE_PYTHON:-python3}}"
SHUTDOWN="${{SPOTWISE_SHUTDOWN:-shutdown -h now}}"
IMDS="${{SPOTWISE_AWS_IMDS_URL:-{imds}}}"
mkdir -p "$ROOT/code" "$ROOT/work" && cd "$ROOT" || exit 1
exec >>"$ROOT/{boot_log}" 2>&1
TOKEN=$(curl -sf -X PUT "$IMDS/latest/api/token" -H 'X-aws-ec2-metadata-token-ttl-seconds: 300')
ID=$(curl -sf -H "X-aws-ec2-metadata-token: $TOKEN" "$IMDS/latest/meta-data/instance-id")
s3() {{  # s3 get|put KEY FILE: with boto3 when the AMI's Python has it, else the AWS CLI
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
}}
fail() {{  # the command never ran: keep the reason where the supervisor reads it, then stop
  echo "spotwise boot: $1"
  s3 put "$PREFIX/$ID/{boot_log}" "$ROOT/{boot_log}"
  echo 1 > "$ROOT/exit" && s3 put "$PREFIX/$ID/exit" "$ROOT/exit"
  $SHUTDOWN
  exit 1
}}
[ -n "$ID" ] || {{ echo "spotwise boot: no instance id from $IMDS"; $SHUTDOWN; exit 1; }}
s3 get {wheel_key} "$ROOT/code/{wheel_name}" || fail "cannot fetch s3://$BUCKET/"{wheel_key}
s3 get {workdir_key} "$ROOT/code/workdir.tar.gz" || fail "cannot fetch the workdir"
tar -xzf "$ROOT/code/workdir.tar.gz" -C "$ROOT/work" || fail "cannot unpack the workdir"
# A venv that sees the AMI's packages (torch), also when $PY is itself a venv; without a pip of
# its own, whose bundled setuptools would shadow the AMI's.
"$PY" -m venv --system-site-packages --without-pip "$ROOT/venv" || fail "$PY cannot make a venv"
V="$ROOT/venv/bin/python"
"$PY" -c 'import site; print("\\n".join(site.getsitepackages()))' \\
  > "$("$V" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/spotwise-ami.pth"
"$V" -m pip --version >/dev/null 2>&1 || "$V" -m ensurepip --default-pip || fail "no pip"
"$V" -m pip install --quiet --no-deps "$ROOT/code/{wheel_name}" || fail "cannot install the wheel"
"$V" -m spotwise.executor.clouds.aws.on_instance requirements > "$ROOT/code/requirements.txt"
"$V" -m pip install --quiet -r "$ROOT/code/requirements.txt" || fail "cannot install requirements"
cd "$ROOT/work"
PATH="$ROOT/venv/bin:$PATH" {exports} "$V" -m spotwise.executor.clouds.aws.on_instance run \\
  --bucket "$BUCKET" --prefix "$PREFIX" --instance "$ID" --reported "$ROOT/reported" \\
  {options}-- {command}
[ -e "$ROOT/reported" ] || fail "the runner ended without reporting an exit code"
s3 put "$PREFIX/$ID/{boot_log}" "$ROOT/{boot_log}"
$SHUTDOWN
"""


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
) -> str:
    """The user data of one instance. ``env`` is filtered to :data:`PLAIN_ENV` (with
    ``SPOTWISE_NOTICES=aws``); ``secret_parameters`` maps a variable to the SSM parameter
    holding its value. Every value is shell-quoted."""
    plain = {k: v for k, v in env.items() if k in PLAIN_ENV} | {"SPOTWISE_NOTICES": "aws"}
    exports = "env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(plain.items()))
    # an elastic node's torchrun agent leaves the group on the notice (its workers would
    # otherwise be restarted until the instance is gone)
    forward = ["--forward-notices "] if "SPOTWISE_NODE" in env else []
    options = (
        forward
        + [f"--setup {shlex.quote(s)} " for s in setup]
        + [
            f"--secret {shlex.quote(f'{name}={parameter}')} "
            for name, parameter in sorted((secret_parameters or {}).items())
        ]
    )
    return _TEMPLATE.format(
        region=shlex.quote(region),
        bucket=shlex.quote(bucket),
        prefix=shlex.quote(prefix),
        imds=IMDS.default,
        boot_log=BOOT_LOG,
        wheel_key=shlex.quote(code.wheel_key),
        wheel_name=shlex.quote(code.wheel_name),
        workdir_key=shlex.quote(code.workdir_key),
        exports=exports,
        options="".join(options),
        command=shlex.join(command),
    )

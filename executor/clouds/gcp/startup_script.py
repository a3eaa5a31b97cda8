"""The startup script a GCE VM runs (its ``startup-script`` metadata): fetch the job's wheel and
workdir from GCS (google-cloud-storage when the image's Python has it, else ``gcloud storage``),
make a venv that also sees the image's packages (torch on a Deep Learning VM image), install
the wheel and what a VM needs, and run the setup commands and the command under
:mod:`executor.clouds.gcp.on_instance`; then shut down.

A boot that fails before the command runs uploads its own log (``boot.log``) and exit code 1,
so the supervisor can say why. ``SPOTWISE_ROOT``, ``SPOTWISE_PYTHON`` and ``SPOTWISE_SHUTDOWN``
override its folder, interpreter and shutdown (tests run it in a temporary folder against the
storage emulator and the loopback fakes).

Metadata is readable by every process on the VM and by anyone who may get the instance, so it
carries only the settings of :data:`PLAIN_ENV`; secrets are Secret Manager names, read with
the VM's service account. The VM's name is written in by the launcher, which chose it.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

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
"""The only variables the metadata may carry: none of them is a secret."""
AGENT = "spotwise.executor.clouds.gcp.on_instance"

_TEMPLATE = """\
#!/bin/bash
# Spotwise startup script: fetch the code, make a venv, run the command, report, shut down.
set -u
PROJECT={project}
BUCKET={bucket}
PREFIX={prefix}
ID={instance}
ROOT="${{SPOTWISE_ROOT:-/opt/spotwise}}"
PY="${{SPOTWISE_PYTHON:-python3}}"
SHUTDOWN="${{SPOTWISE_SHUTDOWN:-shutdown -h now}}"
mkdir -p "$ROOT/code" "$ROOT/work" && cd "$ROOT" || exit 1
exec >>"$ROOT/{boot_log}" 2>&1
gs() {{  # gs get|put KEY FILE: google-cloud-storage when the image's Python has it, else gcloud
  if "$PY" -c 'import google.cloud.storage' 2>/dev/null; then
    "$PY" -c '
import sys
from google.cloud import storage
op, project, bucket, key, path = sys.argv[1:]
blob = storage.Client(project=project).bucket(bucket).blob(key)
blob.download_to_filename(path) if op == "get" else blob.upload_from_filename(path)
' "$1" "$PROJECT" "$BUCKET" "$2" "$3"
  elif [ "$1" = get ]; then gcloud storage cp --quiet "gs://$BUCKET/$2" "$3"
  else gcloud storage cp --quiet "$3" "gs://$BUCKET/$2"
  fi
}}
fail() {{  # the command never ran: keep the reason where the supervisor reads it, then stop
  echo "spotwise boot: $1"
  gs put "$PREFIX/$ID/{boot_log}" "$ROOT/{boot_log}"
  echo 1 > "$ROOT/exit" && gs put "$PREFIX/$ID/exit" "$ROOT/exit"
  $SHUTDOWN
  exit 1
}}
gs get {wheel_key} "$ROOT/code/{wheel_name}" || fail "cannot fetch gs://$BUCKET/"{wheel_key}
gs get {workdir_key} "$ROOT/code/workdir.tar.gz" || fail "cannot fetch the workdir"
tar -xzf "$ROOT/code/workdir.tar.gz" -C "$ROOT/work" || fail "cannot unpack the workdir"
# A venv that sees the image's packages (torch), also when $PY is itself a venv; without a pip
# of its own, whose bundled setuptools would shadow the image's.
"$PY" -m venv --system-site-packages --without-pip "$ROOT/venv" || fail "$PY cannot make a venv"
V="$ROOT/venv/bin/python"
"$PY" -c 'import site; print("\\n".join(site.getsitepackages()))' \\
  > "$("$V" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/spotwise-image.pth"
"$V" -m pip --version >/dev/null 2>&1 || "$V" -m ensurepip --default-pip || fail "no pip"
"$V" -m pip install --quiet --no-deps "$ROOT/code/{wheel_name}" || fail "cannot install the wheel"
"$V" -m {agent} requirements > "$ROOT/code/requirements.txt"
"$V" -m pip install --quiet -r "$ROOT/code/requirements.txt" || fail "cannot install requirements"
cd "$ROOT/work"
PATH="$ROOT/venv/bin:$PATH" {exports} "$V" -m {agent} run \\
  --project "$PROJECT" --bucket "$BUCKET" --prefix "$PREFIX" --instance "$ID" \\
  --reported "$ROOT/reported" {options}-- {command}
[ -e "$ROOT/reported" ] || fail "the runner ended without reporting an exit code"
gs put "$PREFIX/$ID/{boot_log}" "$ROOT/{boot_log}"
$SHUTDOWN
"""


def startup_script(
    command: Sequence[str],
    env: dict[str, str],
    *,
    code: ShippedCode,
    project: str,
    bucket: str,
    prefix: str,
    instance: str,
    setup: Sequence[str] = (),
    secrets: dict[str, str] | None = None,
    endpoint_url: str | None = None,
) -> str:
    """The startup script of VM ``instance``. ``env`` is filtered to :data:`PLAIN_ENV` (with
    ``SPOTWISE_NOTICES=gcp``); ``secrets`` maps a variable to the Secret Manager secret holding
    its value; ``endpoint_url`` is where the VM reaches Secret Manager (None: Google's). Every
    value is shell-quoted."""
    plain = {k: v for k, v in env.items() if k in PLAIN_ENV} | {"SPOTWISE_NOTICES": "gcp"}
    exports = "env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(plain.items()))
    # an elastic node's torchrun agent leaves the group on the notice (its workers would
    # otherwise be restarted until the VM is gone)
    options = ["--forward-notices "] if "SPOTWISE_NODE" in env else []
    if endpoint_url:
        options.append(f"--endpoint-url {shlex.quote(endpoint_url)} ")
    options += [f"--setup {shlex.quote(s)} " for s in setup]
    options += [
        f"--secret {shlex.quote(f'{name}={secret}')} "
        for name, secret in sorted((secrets or {}).items())
    ]
    return _TEMPLATE.format(
        project=shlex.quote(project),
        bucket=shlex.quote(bucket),
        prefix=shlex.quote(prefix),
        instance=shlex.quote(instance),
        boot_log=BOOT_LOG,
        agent=AGENT,
        wheel_key=shlex.quote(code.wheel_key),
        wheel_name=shlex.quote(code.wheel_name),
        workdir_key=shlex.quote(code.workdir_key),
        exports=exports,
        options="".join(options),
        command=shlex.join(command),
    )

"""The boot script an Azure VM runs as its custom data (cloud-init runs a ``#!`` script once,
as root): fetch the job's wheel and workdir from the Blob container (with azure-storage-blob
when the image's Python has it, else with curl and a managed identity token from the instance
metadata service), make a venv that also sees the image's packages (torch on a Data Science VM
image), install the wheel and what a VM needs, and run the setup commands and the command under
:mod:`executor.clouds.azure.on_instance`; then power off (the supervisor deletes the VM).

A boot that fails before the command runs uploads its own log (``boot.log``) and exit code 1,
so the supervisor can say why. ``SPOTWISE_ROOT``, ``SPOTWISE_PYTHON``, ``SPOTWISE_SHUTDOWN``
and ``SPOTWISE_AZURE_METADATA_URL`` override its folder, interpreter, shutdown and metadata
endpoint (tests run it in a temporary folder against Azurite and the fakes).

Custom data is readable on the VM (``/var/lib/waagent``) and by anyone allowed to read the VM
model, so it carries only the settings of :data:`PLAIN_ENV` and the storage account's name;
secrets are Key Vault secret names, read with the VM's identity.
"""

from __future__ import annotations

import base64
import shlex
from collections.abc import Sequence

from spotwise.executor.clouds.aws.boot_script import PLAIN_ENV
from spotwise.executor.clouds.azure.notice import IMDS
from spotwise.executor.clouds.code_bundle import ShippedCode
from spotwise.executor.clouds.instance_folder import BOOT_LOG

BLOB_API_VERSION = "2021-08-06"

_TEMPLATE = """\
#!/bin/bash
# Spotwise boot script: fetch the code, make a venv, run the command, report, power off.
set -u
ACCOUNT={account}
CONTAINER={container}
PREFIX={prefix}
ID={instance}
export AZURE_STORAGE_ACCOUNT_NAME="$ACCOUNT"
ROOT="${{SPOTWISE_ROOT:-/var/lib/spotwise}}"
PY="${{SPOTWISE_PYTHON:-python3}}"
SHUTDOWN="${{SPOTWISE_SHUTDOWN:-shutdown -h now}}"
IMDS="${{SPOTWISE_AZURE_METADATA_URL:-{imds}}}"
mkdir -p "$ROOT/code" "$ROOT/work" && cd "$ROOT" || exit 1
exec >>"$ROOT/{boot_log}" 2>&1
blob() {{  # blob get|put NAME FILE: azure-storage-blob when the image's Python has it, else curl
  if "$PY" -c 'import azure.storage.blob, azure.identity' 2>/dev/null; then
    "$PY" -c '
import os, sys
from azure.storage.blob import BlobServiceClient
op, account, container, name, path = sys.argv[1:]
text = os.environ.get("AZURE_STORAGE_CONNECTION_STRING")
if text:
    service = BlobServiceClient.from_connection_string(text)
else:
    from azure.identity import DefaultAzureCredential
    url = f"https://{{account}}.blob.core.windows.net"
    service = BlobServiceClient(url, DefaultAzureCredential())
blob = service.get_blob_client(container, name)
if op == "get":
    with open(path, "wb") as out:
        blob.download_blob().readinto(out)
else:
    with open(path, "rb") as data:
        blob.upload_blob(data, overwrite=True)
' "$1" "$ACCOUNT" "$CONTAINER" "$2" "$3"
  else
    Q="api-version=2018-02-01&resource=https%3A%2F%2Fstorage.azure.com%2F"
    TOKEN=$(curl -sf -H Metadata:true "$IMDS/metadata/identity/oauth2/token?$Q" \\
      | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["access_token"])') || return 1
    URL="https://$ACCOUNT.blob.core.windows.net/$CONTAINER/$2"
    if [ "$1" = get ]; then
      curl -sf -H "Authorization: Bearer $TOKEN" -H "x-ms-version: {blob_api}" -o "$3" "$URL"
    else
      curl -sf -X PUT -H "Authorization: Bearer $TOKEN" -H "x-ms-version: {blob_api}" \\
        -H "x-ms-blob-type: BlockBlob" --data-binary @"$3" "$URL" >/dev/null
    fi
  fi
}}
fail() {{  # the command never ran: keep the reason where the supervisor reads it, then stop
  echo "spotwise boot: $1"
  blob put "$PREFIX/$ID/{boot_log}" "$ROOT/{boot_log}"
  echo 1 > "$ROOT/exit" && blob put "$PREFIX/$ID/exit" "$ROOT/exit"
  $SHUTDOWN
  exit 1
}}
blob get {wheel_key} "$ROOT/code/{wheel_name}" || fail "cannot fetch az://$CONTAINER/"{wheel_key}
blob get {workdir_key} "$ROOT/code/workdir.tar.gz" || fail "cannot fetch the workdir"
tar -xzf "$ROOT/code/workdir.tar.gz" -C "$ROOT/work" || fail "cannot unpack the workdir"
# A venv that sees the image's packages (torch), also when $PY is itself a venv; without a pip
# of its own, whose bundled setuptools would shadow the image's.
"$PY" -m venv --system-site-packages --without-pip "$ROOT/venv" || fail "$PY cannot make a venv"
V="$ROOT/venv/bin/python"
"$PY" -c 'import site; print("\\n".join(site.getsitepackages()))' \\
  > "$("$V" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/spotwise-image.pth"
"$V" -m pip --version >/dev/null 2>&1 || "$V" -m ensurepip --default-pip || fail "no pip"
"$V" -m pip install --quiet --no-deps "$ROOT/code/{wheel_name}" || fail "cannot install the wheel"
"$V" -m spotwise.executor.clouds.azure.on_instance requirements > "$ROOT/code/requirements.txt"
"$V" -m pip install --quiet -r "$ROOT/code/requirements.txt" || fail "cannot install requirements"
cd "$ROOT/work"
PATH="$ROOT/venv/bin:$PATH" {exports} "$V" -m spotwise.executor.clouds.azure.on_instance run \\
  --account "$ACCOUNT" --container "$CONTAINER" --prefix "$PREFIX" --instance "$ID" \\
  --reported "$ROOT/reported" {options}-- {command}
[ -e "$ROOT/reported" ] || fail "the runner ended without reporting an exit code"
blob put "$PREFIX/$ID/{boot_log}" "$ROOT/{boot_log}"
$SHUTDOWN
"""


def boot_script(
    command: Sequence[str],
    env: dict[str, str],
    *,
    code: ShippedCode,
    account: str,
    container: str,
    prefix: str,
    instance: str,
    setup: Sequence[str] = (),
    vault: str = "",
    secret_names: dict[str, str] | None = None,
    emulated: bool = False,
) -> str:
    """The custom data of one VM, as text. ``env`` is filtered to :data:`PLAIN_ENV` (with
    ``SPOTWISE_NOTICES=azure``); ``secret_names`` maps a variable to the Key Vault secret
    holding its value. Every value is shell-quoted."""
    plain = {k: v for k, v in env.items() if k in PLAIN_ENV} | {"SPOTWISE_NOTICES": "azure"}
    exports = "env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(plain.items()))
    options = _runner_options(env, setup, vault, secret_names or {}, emulated)
    return _TEMPLATE.format(
        account=shlex.quote(account),
        container=shlex.quote(container),
        prefix=shlex.quote(prefix),
        instance=shlex.quote(instance),
        imds=IMDS.default,
        boot_log=BOOT_LOG,
        blob_api=BLOB_API_VERSION,
        wheel_key=shlex.quote(code.wheel_key),
        wheel_name=shlex.quote(code.wheel_name),
        workdir_key=shlex.quote(code.workdir_key),
        exports=exports,
        options=options,
        command=shlex.join(command),
    )


def _runner_options(
    env: dict[str, str],
    setup: Sequence[str],
    vault: str,
    secret_names: dict[str, str],
    emulated: bool,
) -> str:
    """The on-instance runner's options, each followed by a space: notices forwarded for an
    elastic node, the vault (emulated or not) when there are secrets, each setup command and
    each secret."""
    # an elastic node's torchrun agent leaves the group on the notice
    forward = ["--forward-notices "] if "SPOTWISE_NODE" in env else []
    secrets = sorted(secret_names.items())
    options = (
        forward
        + ([f"--vault {shlex.quote(vault)} "] if secrets else [])
        + (["--emulated "] if secrets and emulated else [])
        + [f"--setup {shlex.quote(s)} " for s in setup]
        + [f"--secret {shlex.quote(f'{name}={secret}')} " for name, secret in secrets]
    )
    return "".join(options)


def custom_data(script: str) -> str:
    """The script as a VM's ``osProfile.customData`` (base64)."""
    return base64.b64encode(script.encode()).decode()

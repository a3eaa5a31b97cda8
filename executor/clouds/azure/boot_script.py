"""The boot script an Azure VM runs as its custom data (cloud-init runs a ``#!`` script once,
as root; :mod:`executor.clouds.boot_script`, under :mod:`executor.clouds.azure.on_instance`):
it gets and puts files in the Blob container with azure-storage-blob when the image's Python
has it, else with curl and a managed identity token from the instance metadata service
(``SPOTWISE_AZURE_METADATA_URL`` overrides where). Its shutdown powers the VM off; the
supervisor deletes it.

Custom data is readable on the VM (``/var/lib/waagent``) and by anyone allowed to read the VM
model, so it carries no secret beyond the storage account's name: secrets are Key Vault secret
names, read with the VM's identity.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence

from spotwise.executor.clouds.azure.notice import IMDS
from spotwise.executor.clouds.azure.on_instance import AzureAgent
from spotwise.executor.clouds.boot_script import CloudBoot
from spotwise.executor.clouds.code_bundle import ShippedCode

BLOB_API = "2021-08-06"
"""The Blob REST API version the curl fallback asks for (its ``x-ms-version``)."""

_BLOB = f"""\
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
      curl -sf -H "Authorization: Bearer $TOKEN" -H "x-ms-version: {BLOB_API}" -o "$3" "$URL"
    else
      curl -sf -X PUT -H "Authorization: Bearer $TOKEN" -H "x-ms-version: {BLOB_API}" \\
        -H "x-ms-blob-type: BlockBlob" --data-binary @"$3" "$URL" >/dev/null
    fi
  fi
}}
"""
AZURE_BOOT = CloudBoot(
    cloud="azure",
    agent=AzureAgent.module,
    agent_options='--account "$ACCOUNT" --container "$CONTAINER"',
    store="blob",
    store_function=_BLOB,
    store_url="az://$CONTAINER/",
    root="/var/lib/spotwise",
    metadata=IMDS,
    exported=("AZURE_STORAGE_ACCOUNT_NAME",),
)
"""What Azure's boot script does its own way."""


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
    python: str | None = None,
) -> str:
    """The custom data of VM ``instance``, as text, its job's objects under ``prefix`` in
    ``container`` of storage ``account``; ``secret_names`` maps a variable to the secret of
    ``vault`` (an emulator's when ``emulated``) holding its value; ``python`` is the user's
    ``--python`` (:meth:`CloudBoot.script <executor.clouds.boot_script.CloudBoot.script>`)."""
    vault_options = (
        (["--vault", vault] + (["--emulated"] if emulated else [])) if secret_names else []
    )
    return AZURE_BOOT.script(
        command,
        env,
        code=code,
        settings={
            "ACCOUNT": account,
            "CONTAINER": container,
            "AZURE_STORAGE_ACCOUNT_NAME": account,
        },
        prefix=prefix,
        instance=instance,
        options=vault_options,
        setup=setup,
        secrets=secret_names,
        python=python,
    )


def custom_data(script: str) -> str:
    """The script as a VM's ``osProfile.customData`` (base64)."""
    return base64.b64encode(script.encode()).decode()

"""The startup script a GCE VM runs (its ``startup-script`` metadata;
:mod:`executor.clouds.boot_script`, under :mod:`executor.clouds.gcp.on_instance`): it gets and
puts files in GCS with google-cloud-storage when the image's Python has it, else with ``gcloud
storage``. The VM's name is written in by the launcher, which chose it.

Metadata is readable by every process on the VM and by anyone who may get the instance, so it
carries no secret: secrets are Secret Manager names, read with the VM's service account.
"""

from __future__ import annotations

from collections.abc import Sequence

from spotwise.executor.clouds.boot_script import CloudBoot
from spotwise.executor.clouds.code_bundle import ShippedCode
from spotwise.executor.clouds.gcp.on_instance import GcpAgent

_GS = """\
gs() {  # gs get|put KEY FILE: google-cloud-storage when the image's Python has it, else gcloud
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
}
"""
GCP_BOOT = CloudBoot(
    cloud="gcp",
    agent=GcpAgent.module,
    agent_options='--project "$PROJECT" --bucket "$BUCKET"',
    store="gs",
    store_function=_GS,
    store_url="gs://$BUCKET/",
)
"""What GCP's startup script does its own way."""


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
    python: str | None = None,
) -> str:
    """The startup script of VM ``instance`` of ``project``, its job's objects under ``prefix``
    in ``bucket``; ``secrets`` maps a variable to the Secret Manager secret holding its value;
    ``endpoint_url`` is where the VM reaches Secret Manager (None: Google's); ``python`` is the
    user's ``--python`` (:meth:`CloudBoot.script
    <executor.clouds.boot_script.CloudBoot.script>`)."""
    return GCP_BOOT.script(
        command,
        env,
        code=code,
        settings={"PROJECT": project, "BUCKET": bucket},
        prefix=prefix,
        instance=instance,
        options=["--endpoint-url", endpoint_url] if endpoint_url else [],
        setup=setup,
        secrets=secrets,
        python=python,
    )

"""Google Cloud through the cloud seam (:class:`~executor.clouds.base.Cloud`): Spot VMs labelled
with the ledger's job id, code and logs in GCS, secrets in Secret Manager, the metadata
server's 30-second notice."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spotwise.executor.clouds.base import (
    Check,
    CloudOptions,
    CloudTarget,
    Say,
    SetUp,
    bucket_folder,
)
from spotwise.executor.clouds.gcp.notice import GcpMetadata
from spotwise.executor.clouds.gcp.target import GcpTarget
from spotwise.executor.errors import ExecutorError

if TYPE_CHECKING:
    from spotwise.executor.clouds.code_bundle import Bundle, Code, ShippedCode
    from spotwise.executor.clouds.gcp.clients import Clients
    from spotwise.executor.clouds.gcp.gc import GcpSweep
    from spotwise.executor.clouds.gcp.launcher import GcpLauncher


def _gcp(target: CloudTarget) -> GcpTarget:
    if not isinstance(target, GcpTarget):
        raise ExecutorError(f"the gcp cloud was given {target.cloud}'s settings")
    return target


def upload(bucket: Any, bundle: Bundle) -> bool:
    """Put ``bundle`` in the bucket unless its content is there already; whether it was put."""
    blob = bucket.blob(bundle.key)
    if blob.exists():
        return False
    blob.upload_from_filename(str(bundle.path))
    return True


def ship(
    bucket: Any,
    workdir: Path,
    *,
    ignore_file: Path | None = None,
    wheel: Path | None = None,
    say: Callable[[str], None] = lambda _: None,
) -> ShippedCode:
    """Pack the workdir, build (or take) the wheel, upload what the bucket lacks: the
    content-addressed keys of :mod:`executor.clouds.code_bundle`, in GCS."""
    from spotwise.executor.clouds import code_bundle

    return code_bundle.ship(
        lambda bundle: upload(bucket, bundle),
        f"gs://{bucket.name}",
        workdir,
        ignore_file=ignore_file,
        wheel=wheel,
        say=say,
    )


class GcpCloud:
    """Compute Engine, GCS, Secret Manager and IAM (Google's client libraries; ``endpoint_url``
    reaches a local server, ``STORAGE_EMULATOR_HOST`` a storage emulator)."""

    name = "gcp"
    storage_scheme = "gs"
    notice_kind = GcpMetadata
    notice_s = GcpMetadata.notice_s
    """Its notice source's window (its notice.py defines it, once)."""
    docs = "docs/gcp.md"

    def target(self, options: CloudOptions) -> GcpTarget:
        """The GCP settings the shared options name."""
        return GcpTarget.from_options(options)

    def target_from_dict(self, data: Mapping[str, Any]) -> GcpTarget:
        """The GCP settings back from their JSON."""
        return GcpTarget.from_dict(data)

    def clients(self, target: CloudTarget, who: str) -> Clients:
        """The project's clients with credentials (an ExecutorError in one line without)."""
        from spotwise.executor.clouds.gcp.clients import clients

        gcp = _gcp(target)
        return clients(gcp.project, gcp.endpoint_url, who)

    def _google(self, target: GcpTarget, what: str) -> contextlib.AbstractContextManager[None]:
        """A context that turns Google's errors into one line."""
        from spotwise.executor.clouds.gcp.clients import explained

        return explained(target.project or "", what)

    def ship_code(
        self, target: CloudTarget, *, ignore_file: Path | None = None, wheel: Path | None = None
    ) -> ShippedCode:
        """Ship the workdir and a Spotwise wheel to the bucket, once for any number of jobs.

        Raises:
            ExecutorError: when the settings are incomplete, or the code cannot be shipped.
        """
        gcp = _gcp(target)
        gcp.require_complete()
        gcp.check_zones()  # before the upload, not after it
        clients = self.clients(gcp, "--launcher gcp")
        with self._google(gcp, f"shipping the code to gs://{gcp.bucket_name}"):
            bucket = clients.storage().bucket(gcp.bucket_name)
            return ship(
                bucket,
                Path(gcp.workdir),
                ignore_file=ignore_file,
                wheel=wheel,
                say=lambda line: print(f"shipping {line}", file=sys.stderr),
            )

    def launcher(
        self,
        target: CloudTarget,
        code: Code,
        secrets: dict[str, str] | None = None,
        *,
        job_id: str,
    ) -> GcpLauncher:
        """A launcher of job ``job_id``'s VMs (the ledger's id: ``gc gcp`` judges a VM by its
        label).

        Raises:
            ExecutorError: without a job id, for a zone without the GPU, or what Google
                refuses.
        """
        from spotwise.executor.clouds.code_bundle import shipped
        from spotwise.executor.clouds.gcp.launcher import GcpLauncher

        gcp = _gcp(target)
        if not job_id:
            raise ExecutorError("a GCP launcher needs the ledger's job id (new_job_id())")
        gcp.require_complete()
        gcp.check_zones()
        clients = self.clients(gcp, "--launcher gcp")
        with self._google(gcp, "--launcher gcp"):
            return GcpLauncher(
                clients=clients,
                target=gcp,
                job_id=job_id,
                code=shipped(code, self.name),
                secrets=secrets,
            )

    def job_instances(self, target: CloudTarget, job_id: str) -> list[str]:
        """Job ``job_id``'s VMs, by its label (a deleted VM is gone)."""
        from spotwise.executor.clouds.gcp.gc import job_instances

        gcp = _gcp(target)
        clients = self.clients(gcp, "jobs")
        with self._google(gcp, "listing VMs"):
            found = job_instances(clients.compute("instances"), clients.project, job_id)
        return [instance.name for _, instance in found]

    def checkpoint_url(self, target: CloudTarget, run: str) -> str:
        """``gs://BUCKET/spotwise/checkpoints/RUN``: in the bucket the VMs' account may write."""
        from spotwise.executor.clouds.gcp.setup import CHECKPOINT_PREFIX

        return f"gs://{_gcp(target).bucket_name}/{CHECKPOINT_PREFIX}/{run}"

    def checkpoint_bytes(self, target: CloudTarget, url: str) -> int:
        """The bytes of the objects under ``url``, a folder of the bucket (GCS's listing).

        Raises:
            ExecutorError: for a URL outside the bucket, or when GCS cannot be listed.
        """
        gcp = _gcp(target)
        prefix = bucket_folder(url, self.storage_scheme, gcp.bucket_name)
        clients = self.clients(gcp, "sizing checkpoints")
        with self._google(gcp, f"sizing {url[:120]}"):
            blobs = clients.storage().list_blobs(gcp.bucket_name, prefix=prefix)
            return sum(int(blob.size or 0) for blob in blobs)

    def set_up(self, target: CloudTarget, say: Say) -> SetUp:
        """A private bucket, the VMs' service account with its one role, the nodes' firewall
        rule.

        Raises:
            ExecutorError: without a project or a bucket, or when Google refuses a step.
        """
        from spotwise.executor.clouds.gcp.setup import ACCOUNT_ID, set_up

        gcp = _gcp(target)
        if not gcp.project or not gcp.bucket:
            raise ExecutorError(
                "setup gcp needs --project (the project to set up) and --bucket (the GCS "
                "bucket to make, or reuse)"
            )
        email = gcp.account_email or f"{ACCOUNT_ID}@{gcp.project}.iam.gserviceaccount.com"
        made: list[str] = []

        def tell(line: str) -> None:
            made.append(line)
            say(line)

        tag = set_up(self.clients(gcp, "setup gcp"), gcp.region, gcp.bucket_name, email, say=tell)
        where = f"--project {gcp.project} --region {gcp.region}"
        return SetUp(
            made=tuple(made),
            next_steps=(
                "give the account spotwise runs as the roles of "
                f'{self.docs} ("The account that runs spotwise"), then',
                f"  spotwise check gcp {where} --bucket {gcp.bucket_name} "
                f"--service-account {email} --image IMAGE",
                f"(an elastic job's nodes: spotwise run --launcher gcp --nodes MIN:MAX "
                f"--network {tag} ...)",
            ),
        )

    def check(self, target: CloudTarget) -> Iterator[Check]:
        """Credentials, project, APIs, bucket, image, service account, zones, Spot GPU
        quota."""
        from spotwise.executor.clouds.gcp.check import GcpCheck
        from spotwise.executor.clouds.gcp.clients import require_libraries

        require_libraries("check gcp")
        return GcpCheck(_gcp(target)).run()

    def sweep(self, target: CloudTarget) -> GcpSweep:
        """``gc gcp``'s pass over the project: its clients, with credentials.

        Raises:
            ExecutorError: in one line, without a project, the libraries or credentials.
        """
        from spotwise.executor.clouds.gcp.gc import GcpSweep

        gcp = _gcp(target)
        return GcpSweep(self.clients(gcp, "gc gcp"), gcp.endpoint_url)

"""The GCP launcher: each instance is a GCE VM (a Spot VM, or a standard one on demand) made with
google-cloud-compute over REST.

Its startup script (:mod:`executor.clouds.gcp.startup_script`) fetches the shipped workdir and
wheel (:mod:`executor.clouds.code_bundle`), runs the command with the GCP notice watcher on
(the metadata server's ``instance/preempted``, 30 s ahead), streams its output to
``gs://BUCKET/spotwise/jobs/JOB/INSTANCE/log/`` and writes the exit code next to it, then shuts
the VM down; the supervisor deletes it. A Spot VM is ``provisioningModel=SPOT`` with
``instanceTerminationAction=DELETE``: taken back, it is gone, and Compute Engine records a
``compute.instances.preempted`` operation. An insert that Compute Engine refuses for capacity
(``ZONE_RESOURCE_POOL_EXHAUSTED``, a stockout) raises :class:`NoCapacity`, so the supervisor
can choose again (or go on demand); a GPU quota too small, or a zone without the GPU, is an
:class:`ExecutorError` in one line, before anything runs.

Metadata is readable by anyone who may read the VM, so it carries no secret: secrets
(``secrets=``) go to Secret Manager as ``spotwise-JOB-NAME``, labelled with the job, readable by
the VMs' service account alone (``roles/secretmanager.secretAccessor`` on each secret); the VM
reads them into the command's environment, and :meth:`GcpLauncher.close` deletes them.
"""

from __future__ import annotations

import re
import secrets as random_tokens
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.executor.clouds.cloud_launcher import CloudLauncher
from spotwise.executor.clouds.code_bundle import ShippedCode
from spotwise.executor.clouds.gcp.clients import Clients, explain, google_errors
from spotwise.executor.clouds.gcp.gc import JOB_LABEL, job_labels, secret_id
from spotwise.executor.clouds.gcp.startup_script import startup_script
from spotwise.executor.clouds.gcp.target import GcpTarget, Shape
from spotwise.executor.clouds.instance import BucketInstance
from spotwise.executor.errors import ExecutorError, NoCapacity
from spotwise.executor.launchers.base import Placement, echo

CAPACITY_ERRORS = ("ZONE_RESOURCE_POOL_EXHAUSTED", "STOCKOUT", "RESOURCE_POOL_EXHAUSTED")
"""What Compute Engine answers when a zone has no room for the VM now."""
QUOTA_ERRORS = ("QUOTA_EXCEEDED",)
GONE_STATES = ("STOPPING", "TERMINATED", "SUSPENDING", "SUSPENDED")
SECRET_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
PREEMPTED = "compute.instances.preempted"
CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
OPERATION_TIMEOUT_S = 600.0


def _codes(exc: BaseException) -> list[str]:
    """The error codes of a failed operation or call (``ZONE_RESOURCE_POOL_EXHAUSTED``, ...)."""
    codes = [str(getattr(e, "code", "") or "") for e in getattr(exc, "errors", None) or []]
    codes += [c for c in (*CAPACITY_ERRORS, *QUOTA_ERRORS) if c in str(exc)]
    return [c for c in codes if c]


class GcpInstance(BucketInstance["GcpLauncher"]):
    """One VM running the command; its output comes back from GCS in chunks."""

    noun = "VM"
    service = "GCE"
    first_state = "PROVISIONING"

    def __init__(
        self,
        launcher: GcpLauncher,
        instance_id: str,
        zone: str,
        placement: Placement,
        log: Callable[[str], None],
        address: str | None = None,
    ) -> None:
        super().__init__(launcher, instance_id, placement, log, address)
        self.zone = zone

    def _read(self, name: str) -> str | None:
        """An object of this VM's folder as text, None while it is not there."""
        from google.api_core.exceptions import NotFound

        try:
            data = self.launcher.bucket.blob(self._key(name)).download_as_bytes()
        except NotFound:
            return None
        return bytes(data).decode(errors="replace")

    def _chunks_after(self, folder: str, after: str) -> Iterator[tuple[str, str]]:
        """The chunks GCS lists after ``after``, in order, each read as it comes."""
        blobs = self.launcher.storage.list_blobs(
            self.launcher.bucket, prefix=folder, start_offset=after or folder
        )
        for blob in sorted(blobs, key=lambda b: b.name):
            if blob.name <= after:
                continue  # (a store that ignores start_offset lists them again)
            yield blob.name, blob.download_as_bytes().decode(errors="replace")

    def _gone(self) -> bool:
        """Whether the VM stops, is stopped or suspended, or is deleted."""
        self._state = self.launcher.status(self.zone, self.instance_id)
        return self._state in (*GONE_STATES, "GONE")

    def _taken_back(self) -> bool:
        """Whether Compute Engine recorded taking the Spot VM back."""
        return self.launcher.was_preempted(self)

    def _end(self) -> None:
        """Delete it: an ACPI shutdown, i.e. SIGTERM to the job."""
        self.launcher.delete(self.zone, self.instance_id)


class GcpLauncher(CloudLauncher):
    """Makes VMs in the zones of one region (the pools)."""

    name = "gcp"

    def __init__(
        self,
        *,
        clients: Clients,
        target: GcpTarget,
        job_id: str,
        code: ShippedCode,
        secrets: dict[str, str] | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """``code`` is the shipped workdir and wheel (:func:`executor.clouds.gcp.cloud.ship`).
        The zones must offer the GPU of the target's shape (checked first, before a secret is
        stored). ``secrets`` (variable name → value) reach the command through Secret Manager,
        readable by the target's service account.

        Raises:
            ExecutorError: for a zone without the GPU, a bad secret name, or what Google
                refuses, in one line.
        """
        super().__init__(
            pools=target.zones_or_default,
            job_id=job_id,
            prefix=f"spotwise/jobs/{job_id}",
            clock=clock,
        )
        self.clients, self.target, self.code = clients, target, code
        self.project = clients.project
        self.shape: Shape = target.shape
        self.instances = clients.compute("instances")
        self.operations = clients.compute("zone_operations")
        self.storage = clients.storage()
        self.bucket = self.storage.bucket(target.bucket_name)
        self._secrets_client: Any = None
        self.secret_names: dict[str, str] = {}
        self._check_zones()
        self.secret_names = self._store_secrets(secrets or {})

    def _google(self, exc: BaseException, what: str) -> ExecutorError:
        return ExecutorError(explain(exc, self.project, what))

    def _check_zones(self) -> None:
        """Every zone offers the shape's GPU (a zone without it is a flag to fix, not a
        stockout to wait out)."""
        from google.api_core.exceptions import NotFound

        accelerator = self.shape.accelerator
        if not accelerator:
            return
        types = self.clients.compute("accelerator_types")
        lacking = []
        for zone in self.pools:
            try:
                types.get(project=self.project, zone=zone, accelerator_type=accelerator)
            except NotFound:
                lacking.append(zone)
            except google_errors() as exc:
                raise self._google(exc, f"--launcher gcp: reading GPUs of {zone}") from exc
        if lacking:
            raise ExecutorError(
                f"--launcher gcp: {', '.join(lacking)} offer no {accelerator}; pass --pools "
                f"with zones that do (gcloud compute accelerator-types list "
                f"--filter=name={accelerator})"
            )

    def _store_secrets(self, secrets: dict[str, str]) -> dict[str, str]:
        """Put each secret in Secret Manager, readable by the VMs' service account; the
        secret's name of each variable. One that fails deletes those made before it."""
        if not secrets:
            return {}
        for name in secrets:
            if not SECRET_NAME.match(name):
                raise ExecutorError(f"secret name {name[:40]!r}: use letters, digits and _")
        client = self._secrets()
        names: dict[str, str] = {}
        member = f"serviceAccount:{self.target.account_email}"
        try:
            for name, value in secrets.items():
                secret = client.create_secret(
                    request={
                        "parent": f"projects/{self.project}",
                        "secret_id": secret_id(self.job_id, name),
                        "secret": {
                            "replication": {"automatic": {}},
                            "labels": job_labels(self.job_id),
                        },
                    }
                )
                names[name] = f"projects/{self.project}/secrets/{secret_id(self.job_id, name)}"
                client.add_secret_version(
                    request={"parent": secret.name, "payload": {"data": value.encode()}}
                )
                client.set_iam_policy(
                    request={
                        "resource": secret.name,
                        "policy": {
                            "bindings": [
                                {
                                    "role": "roles/secretmanager.secretAccessor",
                                    "members": [member],
                                }
                            ]
                        },
                    }
                )
        except google_errors() as exc:
            self.secret_names = names
            self.close()
            raise self._google(exc, f"storing secret {name} in Secret Manager") from exc
        return names

    def _secrets(self) -> Any:
        if self._secrets_client is None:
            self._secrets_client = self.clients.secrets()
        return self._secrets_client

    def close(self) -> None:
        """Delete the job's secrets from Secret Manager (the VMs are gone by now)."""
        from google.api_core.exceptions import NotFound

        for name in self.secret_names.values():
            try:
                self._secrets().delete_secret(name=name)
            except NotFound:
                continue
            except google_errors() as exc:
                raise ExecutorError(
                    f"{explain(exc, self.project, f'deleting {name}')}; delete it by hand "
                    f"(gcloud secrets delete {name.rsplit('/', 1)[-1]} --project {self.project})"
                ) from exc
        self.secret_names = {}

    def instance_body(self, name: str, zone: str, spot: bool, script: str) -> dict[str, Any]:
        """The ``Instance`` resource an insert sends (a dict in the API's field names)."""
        shape, target = self.shape, self.target
        image = target.image or ""
        if "/" not in image:
            image = f"projects/{self.project}/global/images/{image}"
        scheduling: dict[str, Any] = {"on_host_maintenance": "TERMINATE"}
        if spot:
            scheduling |= {
                "provisioning_model": "SPOT",
                "instance_termination_action": "DELETE",
                "automatic_restart": False,
            }
        metadata = [{"key": "startup-script", "value": script}]
        if shape.accelerator:
            # Deep Learning VM images install the NVIDIA driver at first boot when asked.
            metadata.append({"key": "install-nvidia-driver", "value": "True"})
        body: dict[str, Any] = {
            "name": name,
            "machine_type": f"zones/{zone}/machineTypes/{shape.machine_type}",
            "disks": [
                {
                    "boot": True,
                    "auto_delete": True,
                    "initialize_params": {"source_image": image},
                }
            ],
            "network_interfaces": [
                {
                    "network": "global/networks/default",
                    # an external address: the VM reaches GCS and the package index
                    "access_configs": [{"name": "External NAT", "type_": "ONE_TO_ONE_NAT"}],
                }
            ],
            "scheduling": scheduling,
            "metadata": {"items": metadata},
            "labels": {
                **job_labels(self.job_id),
                "spotwise-market": "spot" if spot else "on-demand",
            },
            "service_accounts": [{"email": target.account_email, "scopes": [CLOUD_PLATFORM]}],
        }
        if shape.attached:
            body["guest_accelerators"] = [
                {
                    "accelerator_type": f"zones/{zone}/acceleratorTypes/{shape.accelerator}",
                    "accelerator_count": shape.count,
                }
            ]
        if target.network_tags:
            body["tags"] = {"items": list(target.network_tags)}
        return body

    def launch(
        self,
        placement: Placement,
        command: Sequence[str],
        env: dict[str, str],
        log: Callable[[str], None] | None = None,
    ) -> GcpInstance:
        """Insert a VM in the placement's zone and market; its output goes to ``log``
        (default: printed, prefixed by where it runs).

        Raises:
            NoCapacity: when the zone has no room for a Spot VM now.
            ExecutorError: for what else Compute Engine refuses (a quota, a missing image), in
                one line.
        """
        spot = placement.market == "spot"
        zone = placement.pool or self.pools[0]
        name = f"spotwise-{self.job_id}-{random_tokens.token_hex(3)}"
        script = startup_script(
            command,
            env,
            code=self.code,
            project=self.project,
            bucket=self.target.bucket_name,
            prefix=self.prefix,
            instance=name,
            setup=self.target.setup,
            secrets=self.secret_names,
            endpoint_url=self.target.endpoint_url,
            python=self.target.python,
        )
        self._insert(self.instance_body(name, zone, spot, script), zone, spot)
        made = self.instances.get(project=self.project, zone=zone, instance=name)
        address = made.network_interfaces[0].network_i_p if made.network_interfaces else None
        return GcpInstance(self, name, zone, placement, log or echo(placement), address or None)

    def _insert(self, body: dict[str, Any], zone: str, spot: bool) -> None:
        """Insert the VM ``body`` in ``zone`` and wait until it is made.

        Raises:
            NoCapacity: when the zone has no room for a Spot VM now.
            ExecutorError: for what else Compute Engine refuses, in one line.
        """
        try:
            operation = self.instances.insert(
                project=self.project, zone=zone, instance_resource=body
            )
            operation.result(timeout=OPERATION_TIMEOUT_S)
        except google_errors() as exc:
            raise self._refused(exc, zone, spot) from exc

    def _refused(self, exc: BaseException, zone: str, spot: bool) -> ExecutorError:
        """What a refused insert in ``zone`` means: no Spot capacity now, no quota (and how to
        ask for more), or another error in one line."""
        codes = _codes(exc)
        if spot and any(c in CAPACITY_ERRORS for c in codes):
            return NoCapacity(f"{zone}: {codes[0]}")
        if any(c in QUOTA_ERRORS for c in codes):
            return ExecutorError(
                f"--launcher gcp: no quota for this VM in {self.target.region} "
                f"({' '.join(str(exc).split())[:200]}); ask for more: `gcloud compute "
                f"regions describe {self.target.region}` shows the quotas, the console's "
                "IAM & Admin → Quotas raises them"
            )
        return self._google(exc, f"making a VM in {zone}")

    def status(self, zone: str, name: str) -> str:
        """A VM's GCE status, ``GONE`` once it is deleted."""
        from google.api_core.exceptions import NotFound

        try:
            return str(self.instances.get(project=self.project, zone=zone, instance=name).status)
        except NotFound:
            return "GONE"

    def was_preempted(self, instance: GcpInstance) -> bool:
        """Whether Compute Engine recorded taking ``instance`` back."""
        found = self.operations.list(
            request={
                "project": self.project,
                "zone": instance.zone,
                "filter": f'(operationType = "{PREEMPTED}") '
                f'(targetLink = "{self._link(instance)}")',
            }
        )
        return any(True for _ in found)

    def _link(self, instance: GcpInstance) -> str:
        return (
            "https://www.googleapis.com/compute/v1/projects/"
            f"{self.project}/zones/{instance.zone}/instances/{instance.instance_id}"
        )

    def delete(self, zone: str, name: str) -> None:
        """Delete a VM (one already gone is fine)."""
        from google.api_core.exceptions import NotFound

        try:
            self.instances.delete(project=self.project, zone=zone, instance=name).result(
                timeout=OPERATION_TIMEOUT_S
            )
        except NotFound:
            return

    def running_instances(self) -> list[str]:
        """This job's VMs that exist (for teardown checks)."""
        found = self.instances.aggregated_list(
            request={"project": self.project, "filter": f'labels.{JOB_LABEL} = "{self.job_id}"'}
        )
        return [i.name for _, scoped in found for i in scoped.instances]

"""Azure through the cloud seam (:class:`~executor.clouds.base.Cloud`): Spot VMs tagged with the
ledger's job id, code and logs in a Blob container, secrets in Key Vault, the Scheduled Events
``Preempt`` notice (30 s)."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spotwise.executor.clouds.azure.notice import AzureScheduledEvents
from spotwise.executor.clouds.azure.target import AzureTarget
from spotwise.executor.clouds.base import (
    Check,
    CloudOptions,
    CloudTarget,
    Say,
    SetUp,
    bucket_folder,
)
from spotwise.executor.errors import ExecutorError

if TYPE_CHECKING:
    from spotwise.executor.clouds.azure.gc import AzureSweep
    from spotwise.executor.clouds.azure.launcher import AzureLauncher
    from spotwise.executor.clouds.code_bundle import Code, ShippedCode


def _azure(target: CloudTarget) -> AzureTarget:
    if not isinstance(target, AzureTarget):
        raise ExecutorError(f"the azure cloud was given {target.cloud}'s settings")
    return target


class AzureCloud:
    """Azure Compute, Network, Blob storage, Key Vault and managed identities (the Azure SDK;
    ``endpoint_url`` reaches another Resource Manager, a local fake)."""

    name = "azure"
    storage_scheme = "az"
    notice_kind = AzureScheduledEvents
    notice_s = AzureScheduledEvents.notice_s
    """Its notice source's window (its notice.py defines it, once)."""
    docs = "docs/azure.md"

    def target(self, options: CloudOptions) -> AzureTarget:
        """The Azure settings the shared options name."""
        return AzureTarget.from_options(options)

    def target_from_dict(self, data: Mapping[str, Any]) -> AzureTarget:
        """The Azure settings back from their JSON."""
        return AzureTarget.from_dict(data)

    def _credential(self, target: CloudTarget, who: str) -> Any:
        from spotwise.executor.clouds.azure.clients import credential

        _azure(target).require_account(who)
        return credential(who)

    def ship_code(
        self, target: CloudTarget, *, ignore_file: Path | None = None, wheel: Path | None = None
    ) -> ShippedCode:
        """Ship the workdir and a Spotwise wheel to the container, once for any number of jobs.

        Raises:
            ExecutorError: when the settings are incomplete, or the code cannot be shipped.
        """
        from spotwise.executor.clouds.azure.clients import container
        from spotwise.executor.clouds.azure.storage import ship

        azure = _azure(target)
        azure.require_complete()
        cred = self._credential(azure, "--launcher azure")
        return ship(
            container(azure, cred),
            f"az://{azure.container}",
            Path(azure.workdir),
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
    ) -> AzureLauncher:
        """A launcher of job ``job_id``'s VMs (the ledger's id: ``gc azure`` judges a VM by it).

        Raises:
            ExecutorError: without a job id, or when the secrets cannot be stored.
        """
        from spotwise.executor.clouds.azure.launcher import AzureLauncher
        from spotwise.executor.clouds.code_bundle import shipped

        azure = _azure(target)
        if not job_id:
            raise ExecutorError("an Azure launcher needs the ledger's job id (new_job_id())")
        return AzureLauncher(
            target=azure,
            credential=self._credential(azure, "--launcher azure"),
            job_id=job_id,
            code=shipped(code, self.name),
            secrets=secrets or {},
        )

    def job_instances(self, target: CloudTarget, job_id: str) -> list[str]:
        """Job ``job_id``'s VMs that are not being deleted, by its tag."""
        from spotwise.executor.clouds.azure.clients import arm, azure_call
        from spotwise.executor.clouds.azure.gc import JOB_TAG

        azure = _azure(target)
        _, group = azure.require_account("jobs")
        compute = arm(azure, "compute", self._credential(azure, "jobs"))
        return azure_call(
            f"Azure {group}",
            lambda: [
                str(vm.name)
                for vm in compute.virtual_machines.list(group)
                if (vm.tags or {}).get(JOB_TAG) == job_id
                and vm.properties.provisioning_state != "Deleting"
            ],
        )

    def checkpoint_url(self, target: CloudTarget, run: str) -> str:
        """``az://CONTAINER/spotwise/checkpoints/RUN``: the identity's role covers the
        container (adlfs reads the account from ``AZURE_STORAGE_ACCOUNT_NAME``, which the boot
        script sets)."""
        from spotwise.executor.clouds.azure.storage import CHECKPOINT_PREFIX

        return f"az://{_azure(target).container}/{CHECKPOINT_PREFIX}/{run}"

    def checkpoint_bytes(self, target: CloudTarget, url: str) -> int:
        """The bytes of the blobs under ``url``, a folder of the container.

        Raises:
            ExecutorError: for a URL outside the container, or when it cannot be listed.
        """
        from spotwise.executor.clouds.azure.clients import container
        from spotwise.executor.clouds.azure.storage import folder_bytes

        azure = _azure(target)
        prefix = bucket_folder(url, self.storage_scheme, azure.container or "")
        cred = self._credential(azure, "sizing checkpoints")
        return folder_bytes(container(azure, cred), prefix, url)

    def set_up(self, target: CloudTarget, say: Say) -> SetUp:
        """The resource group, a private container, the VMs' identity and its roles, a Key
        Vault, the nodes' network.

        Raises:
            ExecutorError: without --project or --bucket, or when Azure refuses a step.
        """
        from spotwise.executor.clouds.azure.setup import set_up
        from spotwise.executor.clouds.azure.target import IDENTITY_NAME

        azure = _azure(target)
        made: list[str] = []

        def tell(line: str) -> None:
            made.append(line)
            say(line)

        subnet = set_up(azure, self._credential(azure, "setup azure"), tell)
        identity = (azure.identity or IDENTITY_NAME).rsplit("/", 1)[-1]
        return SetUp(
            made=tuple(made),
            next_steps=(
                f"give the account spotwise runs as the roles of {self.docs} on the container "
                "and the vault, then",
                f"  spotwise check azure --project {azure.subscription}/{azure.resource_group} "
                f"--region {azure.region} --bucket {azure.storage_account}/{azure.container} "
                f"--identity {identity} --image URN",
                f"(an elastic job's nodes: spotwise run --launcher azure --nodes MIN:MAX "
                f"--network {subnet} ...)",
            ),
        )

    def check(self, target: CloudTarget) -> Iterator[Check]:
        """Credentials, subscription and providers, storage, image, identity, the size in its
        zones, the Spot vCPU quota, Key Vault, subnet."""
        from spotwise.executor.clouds.azure.check import AzureCheck
        from spotwise.executor.clouds.azure.clients import azure_call

        azure = _azure(target)
        azure.require_account("check azure")
        checks = AzureCheck(azure, lambda: self._credential(azure, "check azure")).run()
        while (item := azure_call("check azure", lambda: next(checks, None))) is not None:
            yield item

    def sweep(self, target: CloudTarget) -> AzureSweep:
        """``gc azure``'s pass over the resource group, with a credential that has shown it
        gets a token.

        Raises:
            ExecutorError: in one line, without an account or credentials.
        """
        from spotwise.executor.clouds.azure.gc import AzureSweep

        azure = _azure(target)
        return AzureSweep(azure, self._credential(azure, "gc azure"))

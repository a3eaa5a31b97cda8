"""The Azure launcher: each instance is a VM (Spot or regular) with a NIC of its own in the
job's subnet, started with azure-mgmt-compute and azure-mgmt-network.

Its custom data is the boot script (:mod:`executor.clouds.azure.boot_script`): it fetches the
shipped workdir and wheel from the Blob container, runs the command with the Azure notice
watcher on (Scheduled Events' ``Preempt``), streams its output to
``az://CONTAINER/spotwise/jobs/JOB/VM/log/`` and writes the exit code next to it, then powers
off; the launcher reads the output back as the job's log and events, and deletes the VM (its NIC
and OS disk go with it: ``deleteOption=Delete``).

A Spot VM has ``priority=Spot``, ``evictionPolicy=Delete`` and ``billingProfile.maxPrice``: the
policy's bid (:attr:`Placement.bid`), never above ``--max-price``, else -1 (up to the on-demand
price). Azure evicts it when the price rises above that cap, or when it needs the capacity back;
either way the VM is deleted after its notice, and a Spot VM gone without reporting is a
preemption. A launch Azure refuses for capacity, the size in that zone, the price cap or the
Spot quota raises :class:`NoCapacity` (the VM it left in ``Failed`` is deleted first), so the
supervisor can choose again (or go on demand).

Custom data is readable on the VM, so it carries no secret: secrets (``secrets=``) go to the
resource group's Key Vault, tagged with the job's id, and the VM reads them with its managed
identity; :meth:`AzureLauncher.close` deletes them.
"""

from __future__ import annotations

import contextlib
import secrets as token
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.executor.clouds.aws.launcher import SECRET_NAME
from spotwise.executor.clouds.azure.boot_script import boot_script, custom_data
from spotwise.executor.clouds.azure.clients import (
    CAPACITY_CODES,
    arm,
    azure_call,
    container,
    error_code,
    first_line,
    secrets_client,
    vault_uri,
)
from spotwise.executor.clouds.azure.gc import HOST_TAG, JOB_TAG, job_tags, secret_name
from spotwise.executor.clouds.azure.storage import JOBS_PREFIX, names_after, read_text
from spotwise.executor.clouds.azure.target import ZONE, AzureTarget
from spotwise.executor.clouds.cloud_launcher import CloudLauncher
from spotwise.executor.clouds.code_bundle import ShippedCode
from spotwise.executor.clouds.instance import BucketInstance
from spotwise.executor.errors import ExecutorError, NoCapacity
from spotwise.executor.launchers.base import Placement, echo

MARKET_TAG = "spotwise-market"
ADMIN = "spotwise"
ENDED_STATES = ("PowerState/stopped", "PowerState/deallocated", "PowerState/deallocating")


def _throwaway_ssh_key() -> str:
    """An SSH public key whose private half is never kept: Azure needs one on a Linux VM, and
    nobody is meant to log in."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode()
    )


class AzureInstance(BucketInstance["AzureLauncher"]):
    """One VM running the command; its output comes back from Blob in chunks."""

    noun = "VM"
    service = "Azure"
    first_state = "creating"

    def _read(self, name: str) -> str | None:
        """A blob of this VM's folder as text, None while it is not there."""
        return read_text(self.launcher.container, self._key(name))

    def _chunks_after(self, folder: str, after: str) -> Iterator[tuple[str, str]]:
        """The chunks the container lists after ``after``, in order, each read as it comes."""
        for name in names_after(self.launcher.container, folder, after or folder):
            yield name, read_text(self.launcher.container, name) or ""

    def _gone(self) -> bool:
        """Whether the VM has ended: deleted (an eviction, or by us), failed or powered off;
        its provisioning and power state is kept."""
        from azure.core.exceptions import ResourceNotFoundError

        try:
            vm = self.launcher.compute.virtual_machines.get(
                self.launcher.group, self.instance_id, expand="instanceView"
            )
        except ResourceNotFoundError:
            self._state = "deleted"
            return True
        statuses = [s.code for s in (vm.properties.instance_view.statuses or [])]
        provisioning = str(vm.properties.provisioning_state or "")
        self._state = ", ".join([provisioning, *[s for s in statuses if "PowerState" in s]])
        return provisioning in ("Deleting", "Failed") or any(s in ENDED_STATES for s in statuses)

    def _taken_back(self) -> bool:
        """Azure deletes a Spot VM only to evict it (for capacity or for price)."""
        return self.placement.market == "spot"

    def _ask_to_leave(self) -> None:
        """Power it off: the OS shuts down, i.e. SIGTERM to the job."""
        self.launcher.compute.virtual_machines.begin_power_off(
            self.launcher.group, self.instance_id
        )

    def _end(self) -> None:
        """Delete it, without waiting for Azure to finish."""
        self.launcher.delete_vm(self.instance_id)


class AzureLauncher(CloudLauncher):
    """Starts VMs in the zones of one location (the pools)."""

    name = "azure"

    def __init__(
        self,
        *,
        target: AzureTarget,
        credential: Any,
        job_id: str,
        code: ShippedCode,
        secrets: dict[str, str] | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """``code`` is the shipped workdir and wheel; ``secrets`` (variable name → value)
        reach the command through Key Vault, which the VMs' identity reads."""
        target.require_complete()
        super().__init__(
            pools=target.zones_or_default,
            job_id=job_id,
            prefix=f"{JOBS_PREFIX}/{job_id}",
            clock=clock,
        )
        self.target, self.credential = target, credential
        _, self.group = target.require_account("--launcher azure")
        self.compute = arm(target, "compute", credential)
        self.network = arm(target, "network", credential)
        self.container = container(target, credential)
        self.instance_type = target.instance_type
        self.code, self.setup = code, tuple(target.setup)
        self.max_price = target.max_price
        self.vault = ""
        self.secret_names = self._store_secrets(secrets or {})

    def _store_secrets(self, secrets: dict[str, str]) -> dict[str, str]:
        """Put each secret in the Key Vault, tagged with the job; its name per variable."""
        names: dict[str, str] = {}
        for name in secrets:
            if not SECRET_NAME.match(name):
                raise ExecutorError(f"secret name {name[:40]!r}: use letters, digits and _")
            secret = secret_name(self.job_id, name)
            if secret in names.values():
                raise ExecutorError(
                    f"secrets {name} and another name the same Key Vault secret ({secret}): "
                    "Key Vault names ignore case and _; rename one"
                )
            names[name] = secret
        if not names:
            return {}
        self.vault = vault_uri(self.target, self.credential)
        client = self._secrets()
        stored: dict[str, str] = {}
        for name, secret in names.items():
            tags = job_tags(self.job_id) | {"spotwise-env": name}

            def put(secret: str = secret, value: str = secrets[name], tags: Any = tags) -> Any:
                return client.set_secret(secret, value, tags=tags)

            try:
                azure_call(f"cannot store secret {name} in Key Vault", put)
            except ExecutorError:
                self.secret_names = stored
                self.close()  # nothing half-written
                raise
            stored[name] = secret
        return stored

    def _secrets(self) -> Any:
        return secrets_client(self.vault, self.credential, emulated=bool(self.target.endpoint_url))

    def close(self) -> None:
        """Delete the job's secrets from Key Vault (the VMs are gone by now)."""
        from azure.core.exceptions import AzureError, ResourceNotFoundError

        if not self.secret_names:
            return
        client = self._secrets()
        for secret in self.secret_names.values():
            try:
                client.begin_delete_secret(secret)
            except ResourceNotFoundError:
                continue
            except AzureError as exc:
                raise ExecutorError(
                    f"cannot delete the secret {secret} from Key Vault: {first_line(exc)}; "
                    f"`spotwise gc azure --job {self.job_id}` deletes it"
                ) from exc
        self.secret_names = {}

    def cap(self, placement: Placement) -> float:
        """A Spot VM's ``maxPrice``: the policy's bid, never above the user's --max-price; -1
        (up to the on-demand price) when neither is set."""
        caps = [c for c in (placement.bid, self.max_price) if c is not None]
        return min(caps) if caps else -1.0

    def launch(
        self,
        placement: Placement,
        command: Sequence[str],
        env: dict[str, str],
        log: Callable[[str], None] | None = None,
    ) -> AzureInstance:
        """A NIC and a VM in the placement's zone and market; the VM's output goes to ``log``
        (default: printed, prefixed by where it runs).

        Raises:
            NoCapacity: when Azure refuses a Spot VM for capacity, size, price or quota.
            ExecutorError: when it refuses for any other reason (nothing is left behind).
        """
        from azure.core.exceptions import AzureError

        self._check_pool(placement.pool)
        name = f"sw-{self.job_id}-{token.token_hex(3)}"
        try:
            address = self._nic(name)
            self._vm(name, placement, command, env)
        except AzureError as exc:
            self._clean_up(name)
            raise self._refused(exc, placement) from exc
        except BaseException:
            self._clean_up(name)
            raise
        return AzureInstance(self, name, placement, log or echo(placement), address=address)

    def _check_pool(self, pool: str | None) -> None:
        """Refuse a pool that is neither a zone of the region nor the region itself.

        Raises:
            ExecutorError: naming the pool and the forms it takes.
        """
        if pool and not ZONE.match(pool) and pool != self.target.region:
            raise ExecutorError(
                f"pool {pool!r}: an Azure pool is an availability zone of "
                f"{self.target.region} (1, 2, 3) or {self.target.region} itself"
            )

    def _refused(self, exc: BaseException, placement: Placement) -> ExecutorError:
        """What Azure's refusal of a VM at ``placement`` means: no Spot capacity (capacity,
        size, price or quota), or another error in one line with a hint where there is one."""
        code = error_code(exc)
        capacity = code in CAPACITY_CODES and (
            code != "OperationNotAllowed" or "quota" in str(exc).lower()
        )
        where = placement.pool or self.target.region
        if placement.market == "spot" and capacity:
            return NoCapacity(f"{where}: {code}")
        hint = ""
        if code == "MissingSubscriptionRegistration":
            hint = "; register the provider it names: az provider register --namespace NAME"
        return ExecutorError(f"Azure VM in {where}: {first_line(exc)}{hint}")

    def _nic(self, name: str) -> str | None:
        from azure.mgmt.network import models as n

        nic = n.NetworkInterface(
            location=self.target.region,
            tags=job_tags(self.job_id),
            properties=n.NetworkInterfacePropertiesFormat(
                ip_configurations=[
                    n.NetworkInterfaceIPConfiguration(
                        name="ipconfig1",
                        properties=n.NetworkInterfaceIPConfigurationPropertiesFormat(
                            subnet=n.Subnet(id=self.target.subnet_id),
                            private_ip_allocation_method="Dynamic",
                        ),
                    )
                ]
            ),
        )
        made = self.network.network_interfaces.begin_create_or_update(
            self.group, f"{name}-nic", nic
        ).result()
        configs = made.properties.ip_configurations or []
        return configs[0].properties.private_ip_address if configs else None

    def _vm(
        self, name: str, placement: Placement, command: Sequence[str], env: dict[str, str]
    ) -> None:
        from azure.mgmt.compute import models as c

        target = self.target
        script = boot_script(
            command,
            env,
            code=self.code,
            account=str(target.storage_account),
            container=str(target.container),
            prefix=self.prefix,
            instance=name,
            setup=self.setup,
            vault=self.vault,
            secret_names=self.secret_names,
            emulated=bool(target.endpoint_url),
            python=target.python,
        )
        image = target.image_ref.wire()
        nic_id = f"{target.group_id}/providers/Microsoft.Network/networkInterfaces/{name}-nic"
        spot = placement.market == "spot"
        properties = c.VirtualMachineProperties(
            hardware_profile=c.HardwareProfile(vm_size=target.instance_type),
            storage_profile=c.StorageProfile(
                image_reference=c.ImageReference(**image),
                os_disk=c.OSDisk(create_option="FromImage", delete_option="Delete"),
            ),
            os_profile=c.OSProfile(
                computer_name=name,
                admin_username=ADMIN,
                custom_data=custom_data(script),
                linux_configuration=c.LinuxConfiguration(
                    disable_password_authentication=True,
                    ssh=c.SshConfiguration(
                        public_keys=[
                            c.SshPublicKey(
                                path=f"/home/{ADMIN}/.ssh/authorized_keys",
                                key_data=_throwaway_ssh_key(),
                            )
                        ]
                    ),
                ),
            ),
            network_profile=c.NetworkProfile(
                network_interfaces=[
                    c.NetworkInterfaceReference(
                        id=nic_id,
                        properties=c.NetworkInterfaceReferenceProperties(
                            primary=True, delete_option="Delete"
                        ),
                    )
                ]
            ),
        )
        if spot:
            properties.priority = "Spot"
            properties.eviction_policy = "Delete"
            properties.billing_profile = c.BillingProfile(max_price=self.cap(placement))
        vm = c.VirtualMachine(
            location=target.region,
            tags={**job_tags(self.job_id), MARKET_TAG: placement.market},
            properties=properties,
            identity=c.VirtualMachineIdentity(
                type="UserAssigned",
                user_assigned_identities={target.identity_id: c.UserAssignedIdentitiesValue()},
            ),
        )
        if placement.pool and ZONE.match(placement.pool):
            vm.zones = [placement.pool]
        self.compute.virtual_machines.begin_create_or_update(self.group, name, vm).result()

    def _clean_up(self, name: str) -> None:
        """Delete what a refused launch left: a VM in Failed, its NIC."""
        from azure.core.exceptions import AzureError

        for delete in (
            lambda: self.compute.virtual_machines.begin_delete(self.group, name).result(),
            lambda: self.network.network_interfaces.begin_delete(
                self.group, f"{name}-nic"
            ).result(),
        ):
            try:
                delete()
            except AzureError:
                continue  # not there (404 is an error only for some operations)

    def delete_vm(self, name: str) -> None:
        """Delete a VM (its NIC and disk go with it), without waiting for Azure to finish."""
        from azure.core.exceptions import ResourceNotFoundError

        with contextlib.suppress(ResourceNotFoundError):
            self.compute.virtual_machines.begin_delete(self.group, name)

    def running_instances(self) -> list[str]:
        """This job's VMs that are not being deleted (for teardown checks)."""
        return [
            vm.name
            for vm in self.compute.virtual_machines.list(self.group)
            if (vm.tags or {}).get(JOB_TAG) == self.job_id
            and vm.properties.provisioning_state != "Deleting"
        ]


__all__ = ["HOST_TAG", "AzureInstance", "AzureLauncher"]

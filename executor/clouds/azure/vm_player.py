"""Plays Azure's Compute on the loopback fake: each VM a launcher makes is booted here, its custom
data run with bash in a folder of its own, as cloud-init would run it on a new machine;
optionally the first one gets Scheduled Events' ``Preempt`` (an eviction notice) from the fake
metadata server and is deleted once its script has ended, as Azure evicts a Spot VM (the play
is :class:`~executor.local_clouds.player.InstancePlayer`'s)."""

from __future__ import annotations

import email.utils
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from spotwise.executor.clouds.azure.fake.servers import AzureLocal, unused_url
from spotwise.executor.clouds.azure.notice import IMDS
from spotwise.executor.local_clouds.player import InstancePlayer, Play

if TYPE_CHECKING:
    from spotwise.executor.local_clouds.metadata import FakeMetadata

EVICTION_NOTICE_S = 30.0
"""Scheduled Events' lead for a Spot VM's eviction (``NotBefore``): at least 30 seconds."""


class AzurePlayer(InstancePlayer):
    """Boots every VM the fake's Compute makes, on a thread, until :meth:`close`.
    ``bucket``: the Blob container (on Azurite) the VMs' agents stream their logs to.
    ``notice_after_s``: the first VM gets its ``Preempt`` event this long after a line of
    ``notice_on`` shows in its log (by default: its command's guard started); once its custom
    data has ended, the event is withdrawn and the VM, if still there, deleted.
    ``beside(name)`` is called as the first VM boots."""

    cloud, noun, script_kind = "local Azure", "VM", "custom data"
    notice_words = "Scheduled Events' Preempt (an eviction notice) and was evicted"
    metadata_variable = IMDS.variable

    def __init__(
        self, local: AzureLocal, metadata: FakeMetadata, root: Path, **play: Unpack[Play]
    ) -> None:
        self.local = local
        self._container: Any = None
        self._incarnation = 1
        env = {
            **local.env,  # on Azure: the VM's managed identity, its storage account
            "AZURE_CONFIG_DIR": str(root / "azure-cli"),  # no az CLI sign-in of this machine
            "AZURE_POD_IDENTITY_AUTHORITY_HOST": unused_url(),
        }
        super().__init__(metadata, root, env, **play)

    def live(self) -> list[str]:
        """Every VM the fake has made, oldest first (a VM is booted once, when it is made)."""
        with self.local.fake.lock:
            return [vm.name for vm in self.local.fake.booted]

    def script(self, name: str) -> bytes:
        with self.local.fake.lock:
            (vm,) = (vm for vm in self.local.fake.booted if vm.name == name)
        return vm.custom_data.encode()

    def _blobs(self) -> Any:
        if self._container is None:
            from azure.storage.blob import ContainerClient

            self._container = ContainerClient.from_connection_string(
                self.local.azurite.connection_string, str(self.bucket)
            )
        return self._container

    def keys(self, prefix: str) -> list[str]:
        return [blob.name for blob in self._blobs().list_blobs(name_starts_with=prefix)]

    def read(self, key: str) -> bytes:
        return bytes(self._blobs().download_blob(key).readall())

    def booting(self, name: str) -> None:
        """Nothing: the fake metadata server's Scheduled Events are for whichever VM reads
        them."""

    def _events(self, events: list[dict[str, Any]]) -> None:
        """A new Scheduled Events document (its incarnation counts the changes)."""
        self._incarnation += 1
        self.metadata.azure_events = {"DocumentIncarnation": self._incarnation, "Events": events}

    def notice(self, name: str) -> None:
        """Scheduled Events' ``Preempt`` for VM ``name``, as Azure announces an eviction."""
        not_before = email.utils.formatdate(self.clock.time() + EVICTION_NOTICE_S, usegmt=True)
        self._events(
            [
                {
                    "EventId": "602d9444-d2cd-49c7-8624-8643e7171297",
                    "EventType": "Preempt",
                    "ResourceType": "VirtualMachine",
                    "Resources": [name],
                    "EventStatus": "Scheduled",
                    "NotBefore": not_before,
                    "Description": "",
                    "EventSource": "Platform",
                    "DurationInSeconds": -1,
                }
            ]
        )

    def ended(self, name: str) -> None:
        if name in self.noticed:
            self._events([])
            self.local.fake.delete_now(name)  # the eviction completes

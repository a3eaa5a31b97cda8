"""Plays Compute Engine on the loopback fake: each VM a launcher makes is booted here, its
startup script run with bash in a folder of its own, as GCE would run it on a new machine;
optionally the first one gets the metadata server's preemption notice and is then taken back
as Compute Engine takes back a Spot VM (the play is
:class:`~executor.local_clouds.player.InstancePlayer`'s)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from spotwise.executor.clouds.gcp.fake.compute import PROJECT, GcpLocal
from spotwise.executor.clouds.gcp.notice import METADATA
from spotwise.executor.local_clouds.player import InstancePlayer, Play

if TYPE_CHECKING:
    from spotwise.executor.local_clouds.metadata import FakeMetadata


class GcePlayer(InstancePlayer):
    """Boots every VM that appears in the fake's Compute Engine, on a thread, until
    :meth:`close`. ``notice_after_s``: the first VM gets the 30-second preemption notice this
    long after a line of ``notice_on`` shows in its log in ``bucket`` (by default: its command's
    guard started); once its startup script has ended, the notice is withdrawn and the VM, if
    still there, is preempted. ``beside(name)`` is called as the first VM boots."""

    cloud, noun, script_kind = "local Compute Engine", "VM", "startup script"
    notice_words = "a preemption notice and was preempted"
    metadata_variable = METADATA.variable

    def __init__(
        self, local: GcpLocal, metadata: FakeMetadata, root: Path, **play: Unpack[Play]
    ) -> None:
        self.local = local
        self._storage: Any = None
        # on GCE: the metadata server's credentials, Google's storage
        super().__init__(metadata, root, local.env, **play)

    def live(self) -> list[str]:
        return [vm["name"] for vm in self.local.fake.live()]

    def script(self, name: str) -> bytes:
        (vm,) = (vm for vm in self.local.fake.live() if vm["name"] == name)
        items = {i["key"]: i["value"] for i in vm["metadata"]["items"]}
        return str(items["startup-script"]).encode()

    def _bucket(self) -> Any:
        if self._storage is None:
            from google.auth import credentials
            from google.cloud import storage

            self._storage = storage.Client(  # the emulator, whatever the environment says
                project=PROJECT,
                credentials=credentials.AnonymousCredentials(),
                client_options={"api_endpoint": self.local.storage.url},
            )
        return self._storage.bucket(self.bucket)

    def keys(self, prefix: str) -> list[str]:
        return [blob.name for blob in self._bucket().list_blobs(prefix=prefix)]

    def read(self, key: str) -> bytes:
        return bytes(self._bucket().blob(key).download_as_bytes())

    def booting(self, name: str) -> None:
        """Nothing: the fake metadata server's preemption flag is for whichever VM reads it."""

    def notice(self, name: str) -> None:
        self.metadata.gcp_preempted = "TRUE"  # the 30-second notice

    def ended(self, name: str) -> None:
        self.metadata.gcp_preempted = "FALSE"
        if name in self.noticed and name in self.live():
            self.local.fake.preempt(name)  # Compute Engine takes it back

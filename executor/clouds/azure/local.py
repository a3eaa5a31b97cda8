"""Azure on this machine, for ``spotwise try azure`` and the tests: Azurite (Blob) and the
loopback fake of Resource Manager, Key Vault and the managed identity endpoint on 127.0.0.1
(:class:`~executor.clouds.azure.fake.servers.AzureLocal`), the fake metadata server for the
eviction notice, and :class:`~executor.clouds.azure.vm_player.AzurePlayer` booting the VMs.

Microsoft's libraries come with ``spotwise[azure]``, cryptography (the fake's TLS certificate)
with ``spotwise[try]``; Azurite is a Node.js program from the npm registry (``make dev``
installs it under ``.venv/node``). Each is looked for only here, when a local Azure is
started."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Self

from spotwise.executor.errors import ExecutorError
from spotwise.executor.local_clouds.base import PlayedCloud, only_local, require

if TYPE_CHECKING:
    from spotwise.executor.clouds.azure.fake.servers import AzureLocal, Azurite

EXTRAS = "pip install 'spotwise[azure,try]' (in a checkout: make dev)"
ELSEWHERE_PREFIXES = ("AZURE_", "ARM_", "MSI_", "IDENTITY_")
"""Variables that could point azure-identity, the az CLI, adlfs or azure-storage-blob at a real
subscription, sign-in or storage account: none survives, those the local cloud needs are set
anew."""
ELSEWHERE = {"SPOTWISE_OPERATIONAL_STORE"}
"""Another that could point a try at its user's own ledger."""
REGION, ZONE, GROUP, CONTAINER = "eastus", "1", "spotwise-try", "spotwise-try"
IDENTITY = "spotwise-instance"
PRICES = ("--spot-price", "0.9", "--on-demand-price", "3.06")
"""A Standard_NC6s_v3's (one V100) usual prices in USD/h: what the ledger prices the played
hours at."""


def require_local_azure() -> None:
    """Microsoft's libraries, cryptography and Azurite, or one line naming how to install them.

    Raises:
        ExecutorError: when one is missing (how to install it).
    """
    from spotwise.executor.clouds.azure.clients import need_library
    from spotwise.executor.clouds.azure.fake.servers import azurite_blob, install_azurite

    require(
        lambda: need_library("spotwise try azure"),
        "Microsoft's Azure",
        {"cryptography": "makes the local Azure's certificate"},
        EXTRAS,
    )
    if azurite_blob() is None:
        raise ExecutorError(
            f"Azurite (Microsoft's Blob storage emulator) is not installed, and it plays Blob "
            f"storage here: {install_azurite()}"
        )


def only_local_azure(env: Mapping[str, str], config: Path) -> AbstractContextManager[None]:
    """Microsoft's libraries and the az CLI, in this process and those it starts, reach only the
    local servers while the block runs: every ``AZURE_*``, ``ARM_*``, ``MSI_*`` and
    ``IDENTITY_*`` variable of the user is dropped (their service principal, managed identity,
    storage account and az CLI configuration: an empty folder ``config`` instead), no instance
    metadata service of this machine is asked for a token, ``env`` (the fake's identity
    endpoint and certificate, Azurite's connection string) is set, and the ledger is the store
    given on the command line, not ``SPOTWISE_OPERATIONAL_STORE``."""
    from spotwise.executor.clouds.azure.fake.servers import unused_url

    config.mkdir(parents=True, exist_ok=True)
    local = {
        **env,
        "AZURE_CONFIG_DIR": str(config),
        "AZURE_POD_IDENTITY_AUTHORITY_HOST": unused_url(),
    }
    return only_local(
        local, drop=lambda name: name.startswith(ELSEWHERE_PREFIXES) or name in ELSEWHERE
    )


class LocalAzure(PlayedCloud):
    """Azure played on this machine while the ``with`` block runs (a
    :class:`~executor.local_clouds.base.LocalCloud`); VMs get folders under ``folder``."""

    bucket_url = f"az://{CONTAINER}"
    instance = "a VM of the local Azure Compute"

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.local: AzureLocal | None = None

    def __enter__(self) -> Self:
        require_local_azure()
        from spotwise.executor.clouds.azure.fake.servers import AzureLocal, Azurite

        servers = self.folder / "azure"
        (servers / "azurite").mkdir(parents=True, exist_ok=True)
        try:
            azurite: Azurite = self._stack.enter_context(Azurite(servers / "azurite"))
        except RuntimeError as exc:  # Azurite did not start
            self._stack.close()
            raise ExecutorError(f"the local Azure did not start: {exc}") from None
        self.local = AzureLocal(azurite)
        self._stack.callback(self.local.close)
        self._stack.enter_context(only_local_azure(self.local.env, servers / "azure-cli"))
        return self

    def _servers(self) -> AzureLocal:
        if self.local is None:
            raise ExecutorError("the local Azure is not started (use it in a with block)")
        return self.local

    @property
    def bucket(self) -> str:
        """``ACCOUNT/CONTAINER``: Azurite's development account and the try's container."""
        from spotwise.executor.clouds.azure.fake.servers import ACCOUNT

        return f"{ACCOUNT}/{CONTAINER}"

    @property
    def where(self) -> tuple[str, ...]:
        """``--project``, ``--region`` and ``--endpoint-url``: the local fake."""
        from spotwise.executor.clouds.azure.fake.servers import SUBSCRIPTION

        return (
            *("--project", f"{SUBSCRIPTION}/{GROUP}", "--region", REGION),
            *("--endpoint-url", self._servers().fake.url),
        )

    @property
    def banner(self) -> str:
        """What plays Azure, and that nothing reaches it or is billed."""
        local = self._servers()
        return (
            f"Azure is a loopback fake of Resource Manager, Key Vault and the managed identity "
            f"endpoint on {local.fake.url} and Azurite (Blob) on "
            f"{local.azurite.blob_url.rsplit('/', 1)[0]} (this machine), the metadata server a "
            "fake on 127.0.0.1, each VM a process here; Microsoft's libraries reach only these, "
            "with the fake's managed identity (your AZURE_* settings and az CLI sign-in are set "
            "aside): no Azure subscription or endpoint is used and nothing is billed (the $ are "
            "these hours at a V100 VM's prices: simulated)"
        )

    def start_instances(self, notice_after_s: float) -> tuple[str, ...]:
        """Boot each VM ``run`` makes; the first gets Scheduled Events' ``Preempt``
        ``notice_after_s`` after its guard starts. ``run``'s flags for the image, the identity
        ``setup`` made and the prices."""
        from spotwise.executor.clouds.azure.fake.servers import IMAGE
        from spotwise.executor.clouds.azure.vm_player import AzurePlayer

        local = self._servers()
        self._play(
            lambda metadata, root: AzurePlayer(
                local, metadata, root, bucket=CONTAINER, notice_after_s=notice_after_s
            )
        )
        return (
            *("--pools", ZONE, "--image", IMAGE, "--bucket", self.bucket),
            *("--identity", IDENTITY, *PRICES),
        )

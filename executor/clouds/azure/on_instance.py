"""Azure's side of the on-instance agent (:mod:`executor.clouds.agent`), which runs on a job's
VM once the boot script (:mod:`executor.clouds.azure.boot_script`) has made its venv: the log
chunks and the exit code go to the Blob container and the secrets come from Key Vault, with
the VM's managed identity; the notice is Scheduled Events'.

This module imports only the standard library at the top: ``python -m
spotwise.executor.clouds.azure.on_instance requirements`` runs before the VM's requirements
exist.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from spotwise.executor.clouds.agent import CloudAgent, main

if TYPE_CHECKING:
    from spotwise.executor.notices import NoticeSource


def container_client(account: str, container: str, credential: Any) -> Any:
    """The container, through ``AZURE_STORAGE_CONNECTION_STRING`` when set (an emulator),
    else with the VM's identity."""
    from azure.storage.blob import BlobServiceClient

    connection = os.environ.get("AZURE_STORAGE_CONNECTION_STRING")
    if connection:
        service = BlobServiceClient.from_connection_string(connection)
    else:
        service = BlobServiceClient(f"https://{account}.blob.core.windows.net", credential)
    return service.get_container_client(container)


class AzureAgent(CloudAgent):
    """The job's Blob container, its Key Vault secrets and Scheduled Events' notice, with the
    VM's managed identity."""

    module = "spotwise.executor.clouds.azure.on_instance"
    store = "Blob"
    secret_form = "NAME=KEY_VAULT_SECRET"
    cloud_extra = "azure"
    extra_packages = ("azure-identity", "azure-storage-blob", "azure-keyvault-secrets", "adlfs")
    """Credentials, Blob, Key Vault, ``az://`` for fsspec."""

    def __init__(self, args: argparse.Namespace) -> None:
        import logging

        from azure.identity import DefaultAzureCredential

        logging.getLogger("azure").setLevel(logging.WARNING)
        self.credential = DefaultAzureCredential()
        self.container = container_client(args.account, args.container, self.credential)
        self.vault, self.emulated = args.vault, args.emulated

    @classmethod
    def add_options(cls, runner: argparse.ArgumentParser) -> None:
        """``--account`` and ``--container``, the job's; ``--vault`` (and ``--emulated``) for
        its secrets."""
        runner.add_argument("--account", required=True)
        runner.add_argument("--container", required=True)
        runner.add_argument("--vault", default="", help="the Key Vault's URI (with --secret)")
        runner.add_argument(
            "--emulated",
            action="store_true",
            help="the vault is an emulator's, not at a *.vault.azure.net host",
        )

    @classmethod
    def option_problem(cls, args: argparse.Namespace) -> str | None:
        """Secrets without their vault."""
        return "--secret needs --vault" if args.secret and not args.vault else None

    def put_object(self, key: str, body: bytes) -> None:
        """Upload ``body`` as the blob ``key``, replacing it."""
        self.container.upload_blob(key, body, overwrite=True)

    def secret_reader(self) -> Callable[[str], str]:
        """A secret's value in the vault."""
        from azure.keyvault.secrets import SecretClient

        client = SecretClient(
            self.vault, self.credential, verify_challenge_resource=not self.emulated
        )
        return lambda secret: str(client.get_secret(secret).value)

    def notice_source(self) -> NoticeSource:
        """Scheduled Events ($SPOTWISE_AZURE_METADATA_URL overrides where it is asked)."""
        from spotwise.executor.clouds.azure.notice import AzureScheduledEvents

        return AzureScheduledEvents.from_env()


if __name__ == "__main__":
    sys.exit(main(AzureAgent))

"""An Azure subscription on this machine: Azurite (Microsoft's Blob storage emulator, from the
npm registry: ``make dev`` installs it under ``.venv/node``) started as a subprocess on
127.0.0.1, and the loopback fake of Resource Manager, Key Vault and the managed identity
endpoint (:mod:`tests.fakes.azure_arm`), wired together: a container made through Resource
Manager is made in Azurite, and the storage account's blob endpoint is Azurite's.

The storage account is Azurite's documented well-known development account
(``devstoreaccount1``), reached with its documented connection string through
``AZURE_STORAGE_CONNECTION_STRING``, which azure-storage-blob and adlfs read.

``python -m tests.fakes.azure_local`` runs both and prints what to set.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

from tests.fakes.azure_arm import AzureArmFake

ROOT = Path(__file__).resolve().parents[2]
AZURITE = ROOT / ".venv" / "node" / "node_modules" / ".bin" / "azurite-blob"
ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
"""Azurite's well-known development account and key (its documentation's)."""
SUBSCRIPTION = "00000000-0000-0000-0000-0000000000aa"
GROUP = "spotwise-test"
IMAGE = "microsoft-dsvm:ubuntu-hpc:2204:latest"


class Azurite:
    """``azurite-blob`` on a free port of 127.0.0.1, its data in ``folder``, until
    :meth:`close`."""

    def __init__(self, folder: Path) -> None:
        if not AZURITE.exists():
            raise RuntimeError(f"Azurite is not installed at {AZURITE}: run `make dev`")
        self.process = subprocess.Popen(
            [
                str(AZURITE),
                *("--blobHost", "127.0.0.1", "--blobPort", "0"),
                *("--location", str(folder), "--skipApiVersionCheck"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        assert self.process.stdout is not None
        port = None
        for line in self.process.stdout:
            found = re.search(r"listens on http://127\.0\.0\.1:(\d+)", line)
            if found:
                port = int(found.group(1))
                break
        if port is None:
            self.process.wait(10)
            raise RuntimeError("Azurite did not start")
        # keep reading its output so that it never blocks on a full pipe
        threading.Thread(target=self.process.stdout.read, daemon=True).start()
        self.blob_url = f"http://127.0.0.1:{port}/{ACCOUNT}"
        self.connection_string = (
            f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};"
            f"BlobEndpoint={self.blob_url};"
        )

    def make_container(self, account: str, container: str) -> None:
        from azure.storage.blob import BlobServiceClient

        assert account == ACCOUNT, f"Azurite serves {ACCOUNT}, not {account}"
        service = BlobServiceClient.from_connection_string(self.connection_string)
        service.create_container(container)

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


class AzureLocal:
    """Azurite and the Resource Manager fake, with a resource group's worth of settings."""

    def __init__(self, folder: Path) -> None:
        self.azurite = Azurite(folder)
        try:
            self.fake = AzureArmFake(
                subscription=SUBSCRIPTION,
                blob_endpoint=self.azurite.blob_url + "/",
                on_container=self.azurite.make_container,
            )
        except BaseException:
            self.azurite.close()
            raise
        self.env = {
            **self.fake.env(),
            "AZURE_STORAGE_CONNECTION_STRING": self.azurite.connection_string,
        }

    def close(self) -> None:
        self.fake.close()
        self.azurite.close()


def main() -> None:
    folder = tempfile.TemporaryDirectory(prefix="azure-local-")
    local = AzureLocal(Path(folder.name))
    for name, value in local.env.items():
        print(f"export {name}={value!r}")
    print(f"# --endpoint-url {local.fake.url} --project {SUBSCRIPTION}/{GROUP}", flush=True)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    stop.wait()
    local.close()
    folder.cleanup()


if __name__ == "__main__":
    main()

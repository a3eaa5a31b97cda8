"""An Azure subscription on this machine: Azurite (Microsoft's Blob storage emulator, a Node.js
program from the npm registry: ``make dev`` installs it under ``.venv/node``) started as a
subprocess on 127.0.0.1, and the loopback fake of Resource Manager, Key Vault and the managed
identity endpoint (:mod:`.arm`), wired together: a container made through Resource Manager is
made in Azurite, and the storage account's blob endpoint is Azurite's.

The storage account is Azurite's documented well-known development account
(``devstoreaccount1``), reached with its documented connection string through
``AZURE_STORAGE_CONNECTION_STRING``, which azure-storage-blob and adlfs read.

``python -m spotwise.executor.clouds.azure.fake.servers`` runs both and prints what to set.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Protocol

from spotwise.executor.clouds.azure.fake.arm import AzureArmFake
from spotwise.executor.local_clouds.lifetime import die_with_parent

AZURITE_VERSION = "3.37.0"
"""The Azurite ``make dev`` installs (the Makefile's pin)."""
ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
"""Azurite's well-known development account and key (its documentation's)."""
SUBSCRIPTION = "00000000-0000-0000-0000-0000000000aa"
GROUP = "spotwise-test"
IMAGE = "microsoft-dsvm:ubuntu-hpc:2404:latest"


def install_azurite() -> str:
    """How to install Azurite beside this Python, where :func:`azurite_blob` looks first."""
    return (
        f"npm install --prefix {Path(sys.prefix) / 'node'} azurite@{AZURITE_VERSION} (it needs "
        "Node.js; in a checkout: make dev)"
    )


def azurite_blob() -> Path | None:
    """Azurite's Blob server: the one installed beside this Python (``make dev``: under
    ``.venv/node``), else one on the ``PATH``; None when neither it nor Node.js is there."""
    beside = Path(sys.prefix) / "node" / "node_modules" / ".bin" / "azurite-blob"
    found = beside if beside.exists() else shutil.which("azurite-blob")
    return Path(found) if found and shutil.which("node") else None


class Azurite:
    """``azurite-blob`` on a free port of 127.0.0.1, its data in ``folder``, until
    :meth:`close`. Its telemetry is off: it would send each run's events to Microsoft and
    keep them, readable by every user, in a ``Microsoft-AzureMonitor-*`` folder of /tmp."""

    def __init__(self, folder: Path) -> None:
        command = azurite_blob()
        if command is None:
            raise RuntimeError(f"Azurite is not installed: {install_azurite()}")
        self.process = subprocess.Popen(
            [
                str(command),
                *("--blobHost", "127.0.0.1", "--blobPort", "0"),
                *("--location", str(folder), "--skipApiVersionCheck", "--disableTelemetry"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            preexec_fn=die_with_parent,
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
        from azure.core.exceptions import ResourceExistsError
        from azure.storage.blob import BlobServiceClient

        assert account == ACCOUNT, f"Azurite serves {ACCOUNT}, not {account}"
        service = BlobServiceClient.from_connection_string(self.connection_string)
        with contextlib.suppress(ResourceExistsError):  # an earlier test's, in the shared one
            service.create_container(container)

    def close(self) -> None:
        """Kill it: it waits up to 10 s for its clients' idle connections on SIGTERM, and its
        data is a throwaway folder."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def __enter__(self) -> Azurite:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


AZURE_ENV = (
    "AZURE_CLIENT_ID",
    "AZURE_TENANT_ID",
    "AZURE_CLIENT_SECRET",
    "AZURE_CLIENT_CERTIFICATE_PATH",
    "AZURE_FEDERATED_TOKEN_FILE",
    "AZURE_USERNAME",
    "MSI_ENDPOINT",
    "MSI_SECRET",
    "IDENTITY_SERVER_THUMBPRINT",
    "AZURE_STORAGE_ACCOUNT_NAME",
    "AZURE_STORAGE_KEY",
)
"""Sign-ins of this machine's that azure-identity would try before the fake's."""


def unused_url() -> str:
    """A loopback URL nothing listens on (where azure-identity looks for a metadata service)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


class Env(Protocol):
    def setenv(self, name: str, value: str) -> None: ...

    def delenv(self, name: str, raising: bool = True) -> None: ...


def no_azure_sign_in(env: Env, home: Path) -> None:
    """No az CLI cache, no managed identity, no instance metadata service of this machine."""
    for name in (*AZURE_ENV, "IDENTITY_ENDPOINT", "IDENTITY_HEADER"):
        env.delenv(name, raising=False)
    env.setenv("AZURE_CONFIG_DIR", str(home / "azure-cli"))
    env.setenv("AZURE_POD_IDENTITY_AUTHORITY_HOST", unused_url())


class AzureLocal:
    """``azurite`` (shared: each test uses containers of its own) and a Resource Manager fake
    of its own."""

    def __init__(self, azurite: Azurite) -> None:
        self.azurite = azurite
        self.fake = AzureArmFake(
            subscription=SUBSCRIPTION,
            blob_endpoint=self.azurite.blob_url + "/",
            on_container=self.azurite.make_container,
        )
        self.env = {
            **self.fake.env(),
            "AZURE_STORAGE_CONNECTION_STRING": self.azurite.connection_string,
        }

    def apply(self, env: Env, home: Path) -> None:
        """Point this process's Azure libraries at the servers, and at nothing else."""
        no_azure_sign_in(env, home)
        for name, value in self.env.items():
            env.setenv(name, value)

    def close(self) -> None:
        """Stop the fake (Azurite serves the next test)."""
        self.fake.close()


def main() -> None:
    with (
        tempfile.TemporaryDirectory(prefix="azurite-") as folder,
        Azurite(Path(folder)) as azurite,
    ):
        local = AzureLocal(azurite)
        for name, value in local.env.items():
            print(f"export {name}={value!r}")
        print(f"# --endpoint-url {local.fake.url} --project {SUBSCRIPTION}/{GROUP}", flush=True)
        stop = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
        stop.wait()
        local.close()


if __name__ == "__main__":
    main()

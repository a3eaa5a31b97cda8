"""What runs on a job's Azure VM once the boot script (:mod:`executor.clouds.azure.boot_script`)
has made its venv: read the job's secrets from Key Vault with the VM's managed identity, run
the setup commands and then the command, stream their output to the Blob container in small
chunks, and report the exit code there.

Under ``az://CONTAINER/PREFIX/VM/``: ``log/00000001.jsonl``, ... then ``exit``, as on AWS: the
chunking, the streaming and the notice forwarding are the AWS agent's
(:mod:`executor.clouds.aws.on_instance`), writing through :class:`BlobWriter`. Commands run
without a shell.

This module imports only the standard library at the top: ``python -m
spotwise.executor.clouds.azure.on_instance requirements`` runs before the VM's requirements
exist.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from spotwise.executor.clouds.aws.on_instance import (
    S3LogStream,
    instance_requirements,
    run_streamed,
)
from spotwise.executor.clouds.instance_folder import EXIT_NAME

AZURE_ON_INSTANCE = ("azure-identity", "azure-storage-blob", "azure-keyvault-secrets", "adlfs")
"""What a VM needs of the ``azure`` extra: credentials, Blob, Key Vault, ``az://`` for fsspec."""


def requirements() -> list[str]:
    """The ``instance`` extra's requirements, and the Azure ones a VM needs."""
    azure = [
        r.split(";")[0].strip()
        for r in metadata.requires("spotwise") or []
        if 'extra == "azure"' in r.replace("'", '"')
    ]
    wanted = [r for r in azure if _name(r) in AZURE_ON_INSTANCE]
    return [*instance_requirements(), *wanted]


def _name(requirement: str) -> str:
    for mark in "<>=!~[ ;":
        requirement = requirement.split(mark)[0]
    return requirement.strip().lower()


class BlobWriter:
    """The one call :class:`~executor.clouds.aws.on_instance.S3LogStream` makes, to Blob."""

    def __init__(self, container: Any) -> None:
        self.container = container

    def put_object(self, *, Bucket: str, Key: str, Body: bytes) -> None:
        """Upload ``Body`` as the blob ``Key``, replacing it (``Bucket`` is ignored)."""
        self.container.upload_blob(Key, Body, overwrite=True)


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


def read_secrets(
    vault: str, pairs: Sequence[str], credential: Any, *, emulated: bool
) -> dict[str, str]:
    """``NAME=SECRET`` pairs → NAME: the secret's value in the vault."""
    if not pairs:
        return {}
    from azure.keyvault.secrets import SecretClient

    client = SecretClient(vault, credential, verify_challenge_resource=not emulated)
    values = {}
    for pair in pairs:
        name, _, secret = pair.partition("=")
        values[name] = str(client.get_secret(secret).value)
    return values


def run(args: argparse.Namespace) -> int:
    """Setup, then the command, streamed; the exit code reported to the container."""
    import logging

    from azure.identity import DefaultAzureCredential

    logging.getLogger("azure").setLevel(logging.WARNING)
    credential = DefaultAzureCredential()
    container = container_client(args.account, args.container, credential)
    writer = BlobWriter(container)
    log = S3LogStream(writer, args.container, args.prefix, args.instance, flush_s=args.flush_s)
    cwd = Path.cwd()
    import spotwise  # the wheel the boot script installed

    log.write("setup", f"spotwise: running from {Path(spotwise.__file__).parent} in {cwd}")
    code = 0
    try:
        env = dict(os.environ)
        env.update(read_secrets(args.vault, args.secret, credential, emulated=args.emulated))
        for setup in args.setup:
            log.write("setup", f"spotwise: setup: {setup}")
            code = run_streamed(shlex.split(setup), log, stream="setup", env=env, cwd=cwd)
            if code != 0:
                log.write("setup", f"spotwise: setup failed with exit code {code}")
                return code
        from spotwise.executor.clouds.azure.notice import AzureScheduledEvents

        # its own cloud's notice ($SPOTWISE_AZURE_METADATA_URL overrides where it is asked)
        notices = [AzureScheduledEvents.from_env()] if args.forward_notices else []
        code = run_streamed(args.command, log, stream="out", env=env, cwd=cwd, notices=notices)
        return code
    except Exception as exc:  # report, never leave the supervisor guessing
        log.write("err", f"spotwise: {type(exc).__name__}: {exc}")
        code = 1
        return code
    finally:
        log.close()
        writer.put_object(
            Bucket=args.container,
            Key=f"{args.prefix}/{args.instance}/{EXIT_NAME}",
            Body=f"{code}\n".encode(),
        )
        if args.reported:
            Path(args.reported).touch()


def main(argv: Sequence[str] | None = None) -> int:
    """The on-instance agent's command line: read its arguments and do what they ask."""
    parser = argparse.ArgumentParser(prog="python -m spotwise.executor.clouds.azure.on_instance")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("requirements", help="print what a VM needs, one per line")
    runner = sub.add_parser("run", help="run setup and the command, streaming to Blob")
    runner.add_argument("--account", required=True)
    runner.add_argument("--container", required=True)
    runner.add_argument("--prefix", required=True)
    runner.add_argument("--instance", required=True)
    runner.add_argument("--vault", default="", help="the Key Vault's URI (with --secret)")
    runner.add_argument(
        "--emulated",
        action="store_true",
        help="the vault is an emulator's, not at a *.vault.azure.net host",
    )
    runner.add_argument("--setup", action="append", default=[])
    runner.add_argument("--secret", action="append", default=[], help="NAME=KEY_VAULT_SECRET")
    runner.add_argument("--flush-s", type=float, default=2.0)
    runner.add_argument("--reported", help="a file to create once the exit code is in Blob")
    runner.add_argument(
        "--forward-notices",
        action="store_true",
        help="SIGTERM the command on its cloud's stop notice",
    )
    runner.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.action == "requirements":
        print("\n".join(requirements()))
        return 0
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.command:
        parser.error("no command after --")
    if args.secret and not args.vault:
        parser.error("--secret needs --vault")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())

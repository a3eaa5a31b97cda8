"""What runs on a job's GCE VM once the startup script
(:mod:`executor.clouds.gcp.startup_script`) has made its venv: read the job's secrets from
Secret Manager with the VM's service account, run the setup commands and then the command,
stream their stdout and stderr to GCS in small chunks, and report the exit code there.

Under ``gs://BUCKET/PREFIX/INSTANCE/``: ``log/00000001.jsonl``, ... (JSON lines
``{"stream": "out" | "err" | "setup", "line": ...}``, in order), then ``exit``: the layout and
the streaming of the AWS agent (:mod:`executor.clouds.aws.on_instance`), whose runner and log
stream this module reuses, writing to GCS instead of S3. The supervisor reads them
(:class:`executor.clouds.gcp.launcher.GcpInstance`). Commands run without a shell.

This module imports only the standard library at the top: ``python -m
spotwise.executor.clouds.gcp.on_instance requirements`` runs before the VM's requirements exist.
"""

from __future__ import annotations

import argparse
import os
import re
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

GCP_INSTANCE_PACKAGES = (
    "google-auth",
    "google-cloud-storage",
    "google-cloud-secret-manager",
    "gcsfs",
)
"""What a VM needs of the ``gcp`` extra (GCS, Secret Manager, gs:// checkpoints), at the
extra's versions."""


def requirements() -> list[str]:
    """The ``instance`` extra and the packages of the ``gcp`` extra a VM needs."""
    wanted = []
    for requirement in metadata.requires("spotwise") or []:
        spec, _, marker = requirement.partition(";")
        name = re.split(r"[<>=!~ \[]", spec.strip(), maxsplit=1)[0].lower()
        if 'extra == "gcp"' in marker.replace("'", '"') and name in GCP_INSTANCE_PACKAGES:
            wanted.append(spec.strip())
    return [*instance_requirements(), *wanted]


class GcsObjects:
    """``put_object`` as the log stream calls it, on a GCS bucket (the stream's ``s3``)."""

    def __init__(self, bucket: Any) -> None:
        self.bucket = bucket

    def put_object(self, *, Bucket: str, Key: str, Body: bytes) -> None:
        """Write ``Body`` to ``Key`` (``Bucket`` is the stream's, and this one's)."""
        self.bucket.blob(Key).upload_from_string(Body)


def read_secrets(client: Any, secrets: Sequence[str]) -> dict[str, str]:
    """``NAME=projects/P/secrets/ID`` pairs → NAME: the secret's latest value."""
    values = {}
    for pair in secrets:
        name, _, secret = pair.partition("=")
        answer = client.access_secret_version(name=f"{secret}/versions/latest")
        values[name] = answer.payload.data.decode()
    return values


def _secret_client(endpoint_url: str | None) -> Any:
    from google.api_core.client_options import ClientOptions
    from google.cloud import secretmanager_v1

    options = ClientOptions(api_endpoint=endpoint_url) if endpoint_url else None
    return secretmanager_v1.SecretManagerServiceClient(transport="rest", client_options=options)


def run(args: argparse.Namespace) -> int:
    """Setup, then the command, streamed; the exit code reported to GCS."""
    from google.cloud import storage

    bucket = storage.Client(project=args.project).bucket(args.bucket)
    log = S3LogStream(
        GcsObjects(bucket), args.bucket, args.prefix, args.instance, flush_s=args.flush_s
    )
    cwd = Path.cwd()
    import spotwise  # the wheel the startup script installed

    log.write("setup", f"spotwise: running from {Path(spotwise.__file__).parent} in {cwd}")
    code = 0
    try:
        env = dict(os.environ)
        if args.secret:
            env.update(read_secrets(_secret_client(args.endpoint_url), args.secret))
        for setup in args.setup:
            log.write("setup", f"spotwise: setup: {setup}")
            code = run_streamed(shlex.split(setup), log, stream="setup", env=env, cwd=cwd)
            if code != 0:
                log.write("setup", f"spotwise: setup failed with exit code {code}")
                return code
        from spotwise.executor.clouds.gcp.notice import GcpMetadata

        # its own cloud's notice ($SPOTWISE_GCP_METADATA_URL overrides where it is asked)
        notices = [GcpMetadata.from_env()] if args.forward_notices else []
        code = run_streamed(args.command, log, stream="out", env=env, cwd=cwd, notices=notices)
        return code
    except Exception as exc:  # report, never leave the supervisor guessing
        log.write("err", f"spotwise: {type(exc).__name__}: {exc}")
        code = 1
        return code
    finally:
        log.close()
        bucket.blob(f"{args.prefix}/{args.instance}/{EXIT_NAME}").upload_from_string(f"{code}\n")
        if args.reported:
            Path(args.reported).touch()


def main(argv: Sequence[str] | None = None) -> int:
    """The on-instance agent's command line: read its arguments and do what they ask."""
    parser = argparse.ArgumentParser(prog="python -m spotwise.executor.clouds.gcp.on_instance")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("requirements", help="print what a VM needs, one per line")
    runner = sub.add_parser("run", help="run setup and the command, streaming to GCS")
    runner.add_argument("--project", required=True)
    runner.add_argument("--bucket", required=True)
    runner.add_argument("--prefix", required=True)
    runner.add_argument("--instance", required=True)
    runner.add_argument("--endpoint-url", help="Secret Manager elsewhere than Google's")
    runner.add_argument("--setup", action="append", default=[])
    runner.add_argument("--secret", action="append", default=[], help="NAME=projects/P/secrets/ID")
    runner.add_argument("--flush-s", type=float, default=2.0)
    runner.add_argument("--reported", help="a file to create once the exit code is in GCS")
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
    return run(args)


if __name__ == "__main__":
    sys.exit(main())

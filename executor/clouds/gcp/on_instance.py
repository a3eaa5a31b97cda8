"""GCP's side of the on-instance agent (:mod:`executor.clouds.agent`), which runs on a job's GCE
VM once the startup script (:mod:`executor.clouds.gcp.startup_script`) has made its venv: the
log chunks and the exit code go to GCS and the secrets come from Secret Manager, with the VM's
service account; the notice is the metadata server's.

This module imports only the standard library at the top: ``python -m
spotwise.executor.clouds.gcp.on_instance requirements`` runs before the VM's requirements exist.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from spotwise.executor.clouds.agent import CloudAgent, main

if TYPE_CHECKING:
    from spotwise.executor.notices import NoticeSource


def read_secret(client: Any, secret: str) -> str:
    """The latest value of ``secret`` (``projects/P/secrets/ID``)."""
    return client.access_secret_version(name=f"{secret}/versions/latest").payload.data.decode()


def _secret_client(endpoint_url: str | None) -> Any:
    from google.api_core.client_options import ClientOptions
    from google.cloud import secretmanager_v1

    options = ClientOptions(api_endpoint=endpoint_url) if endpoint_url else None
    return secretmanager_v1.SecretManagerServiceClient(transport="rest", client_options=options)


class GcpAgent(CloudAgent):
    """The job's GCS bucket, its Secret Manager secrets and the metadata server's notice, with
    the VM's service account."""

    module = "spotwise.executor.clouds.gcp.on_instance"
    store = "GCS"
    secret_form = "NAME=projects/P/secrets/ID"
    cloud_extra = "gcp"
    extra_packages = ("google-auth", "google-cloud-storage", "google-cloud-secret-manager", "gcsfs")
    """GCS, Secret Manager and gs:// checkpoints."""

    def __init__(self, args: argparse.Namespace) -> None:
        from google.cloud import storage

        self.bucket = storage.Client(project=args.project).bucket(args.bucket)
        self.endpoint_url = args.endpoint_url

    @classmethod
    def add_options(cls, runner: argparse.ArgumentParser) -> None:
        """``--project`` and ``--bucket``, the job's; ``--endpoint-url`` for another Secret
        Manager."""
        runner.add_argument("--project", required=True)
        runner.add_argument("--bucket", required=True)
        runner.add_argument("--endpoint-url", help="Secret Manager elsewhere than Google's")

    def put_object(self, key: str, body: bytes) -> None:
        """Upload ``body`` as the object ``key``."""
        self.bucket.blob(key).upload_from_string(body)

    def secret_reader(self) -> Callable[[str], str]:
        """A secret's latest value, from Secret Manager at ``--endpoint-url`` if given."""
        return partial(read_secret, _secret_client(self.endpoint_url))

    def notice_source(self) -> NoticeSource:
        """The metadata server ($SPOTWISE_GCP_METADATA_URL overrides where it is asked)."""
        from spotwise.executor.clouds.gcp.notice import GcpMetadata

        return GcpMetadata.from_env()


if __name__ == "__main__":
    sys.exit(main(GcpAgent))

"""Huawei Cloud's side of the on-instance agent (:mod:`executor.clouds.agent`), which runs on a
job's ECS server once the boot script (:mod:`executor.clouds.huawei.boot_script`) has made its
venv: the log chunks and the exit code go to OBS with the agency's keys from the ECS metadata,
the secrets come from CSMS; the notice is the metadata's spot ``instance-action``.

This module imports only the standard library at the top: ``python -m
spotwise.executor.clouds.huawei.on_instance requirements`` runs before the server's requirements
exist.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from spotwise.executor.clouds.agent import CloudAgent, main

if TYPE_CHECKING:
    from spotwise.executor.notices import NoticeSource


class HuaweiAgent(CloudAgent):
    """The job's OBS bucket (boto3, S3-compatible) and the metadata's notice, with the server's
    agency."""

    module = "spotwise.executor.clouds.huawei.on_instance"
    store = "OBS"
    secret_form = "NAME=CSMS_SECRET"
    cloud_extra = "huawei"
    extra_packages = ("huaweicloudsdkcore", "huaweicloudsdkcsms")

    def __init__(self, args: argparse.Namespace) -> None:
        from spotwise.core.settings import endpoint_url
        from spotwise.executor.clouds.huawei.notice import METADATA
        from spotwise.executor.clouds.huawei.obs import server_client

        self.bucket, self.region, self.project = args.bucket, args.region, args.project
        self.obs = server_client(args.region, endpoint_url(METADATA))

    @classmethod
    def add_options(cls, runner: argparse.ArgumentParser) -> None:
        """``--bucket``, ``--region`` and ``--project``, the job's."""
        runner.add_argument("--bucket", required=True)
        runner.add_argument("--region", required=True)
        runner.add_argument("--project", required=True)

    def put_object(self, key: str, body: bytes) -> None:
        """Put ``body`` at ``key`` in the bucket."""
        self.obs.put_object(Bucket=self.bucket, Key=key, Body=body)

    def secret_reader(self) -> Callable[[str], str]:
        """A CSMS secret's latest value, with the agency's keys; ``$SPOTWISE_HUAWEI_CSMS_URL``
        overrides the region's endpoint."""
        import os

        from huaweicloudsdkcore.auth.credentials import BasicCredentials
        from huaweicloudsdkcsms.v1 import CsmsClient, ShowSecretVersionRequest

        from spotwise.core.settings import endpoint_url
        from spotwise.executor.clouds.huawei.agency import agency_keys
        from spotwise.executor.clouds.huawei.notice import METADATA

        keys = agency_keys(endpoint_url(METADATA))
        credentials = BasicCredentials(keys["access"], keys["secret"], self.project)
        credentials.with_security_token(keys.get("securitytoken", ""))
        url = os.environ.get("SPOTWISE_HUAWEI_CSMS_URL") or (
            f"https://csms.{self.region}.myhuaweicloud.com"
        )
        csms = CsmsClient.new_builder().with_credentials(credentials).with_endpoints([url]).build()

        def read(name: str) -> str:
            request = ShowSecretVersionRequest(secret_name=name, version_id="latest")
            return str(csms.show_secret_version(request).version.secret_string)

        return read

    def notice_source(self) -> NoticeSource:
        """The ECS metadata ($SPOTWISE_HUAWEI_METADATA_URL overrides where it is asked)."""
        from spotwise.executor.clouds.huawei.notice import HuaweiSpotNotice

        return HuaweiSpotNotice.from_env()


if __name__ == "__main__":
    sys.exit(main(HuaweiAgent))

"""AWS on this machine, for ``spotwise try aws`` and the tests: moto's server on 127.0.0.1
(EC2, S3, IAM, SSM), an image in it, the fake instance metadata service for the spot notice,
and :class:`~executor.clouds.aws.ec2_player.Ec2Player` booting the instances.

moto is imported only here, when a local AWS is started: it comes with ``spotwise[try]``."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from spotwise.executor.clouds.aws.ec2_player import FAKE_CREDENTIALS, Ec2Player
from spotwise.executor.errors import ExecutorError
from spotwise.executor.local_clouds.base import PlayedCloud, only_local

if TYPE_CHECKING:
    pass

MOTO_MISSING = (
    "moto is not installed, and it plays AWS on this machine: pip install 'spotwise[try]' "
    "(in a checkout: make dev)"
)
ELSEWHERE = {
    *("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_ROLE_ARN"),
    "SPOTWISE_OPERATIONAL_STORE",
}
"""Variables that could point a try at an AWS account or at its user's own ledger."""
REGION, BUCKET, PROFILE = "us-east-1", "spotwise-try", "spotwise-instance"
PRICES = ("--spot-price", "0.9", "--on-demand-price", "3.06")
"""p3.2xlarge's usual prices in USD/h: what the ledger prices the played hours at."""


@contextmanager
def local_aws() -> Iterator[str]:
    """moto's server on a free port of 127.0.0.1 while the block runs: its URL.

    Raises:
        ExecutorError: when moto is not installed (how to install it).
    """
    try:
        from moto.server import ThreadedMotoServer
    except ImportError as exc:
        raise ExecutorError(MOTO_MISSING) from exc
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request on stderr
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def amazon_image(ec2: Any) -> str:
    """An Amazon Linux 2 image id of the moto server ``ec2`` talks to. Named by a filter: the
    full list of Amazon's images is thousands of entries, seconds to serialise per call."""
    name = {"Name": "name", "Values": ["amzn2-ami-hvm-*-x86_64-gp2"]}
    return str(ec2.describe_images(Owners=["amazon"], Filters=[name])["Images"][0]["ImageId"])


def only_local_aws(endpoint: str) -> AbstractContextManager[None]:
    """boto3, in this process and those it starts, reaches only ``endpoint`` with fake keys
    while the block runs (no profile, config file or instance role is read), and the ledger
    is the store given on the command line, not ``SPOTWISE_OPERATIONAL_STORE``."""
    local = {
        **FAKE_CREDENTIALS,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    return only_local(local, drop=ELSEWHERE.__contains__)


class LocalAws(PlayedCloud):
    """AWS played on this machine while the ``with`` block runs (a
    :class:`~executor.local_clouds.base.LocalCloud`); instances get folders under
    ``folder``."""

    bucket, bucket_url = BUCKET, f"s3://{BUCKET}"
    instance = "an instance of the local EC2"

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.endpoint = ""

    def __enter__(self) -> Self:
        self.endpoint = self._stack.enter_context(local_aws())
        self._stack.enter_context(only_local_aws(self.endpoint))
        return self

    @property
    def where(self) -> tuple[str, ...]:
        """``--region`` and ``--endpoint-url``: the local moto."""
        return ("--region", REGION, "--endpoint-url", self.endpoint)

    @property
    def banner(self) -> str:
        """What plays AWS, and that nothing reaches it or is billed."""
        return (
            f"AWS is moto on {self.endpoint} (this machine), the instance metadata a fake on "
            "127.0.0.1, each instance a process here; boto3's endpoint is forced to moto and "
            "its credentials are fake: no AWS account or endpoint is used and nothing is "
            "billed (the $ are these hours at p3.2xlarge's prices: simulated)"
        )

    def start_instances(self, notice_after_s: float) -> tuple[str, ...]:
        """Boot each instance ``run`` makes; the first gets a spot notice
        ``notice_after_s`` after its guard starts. ``run``'s flags for moto's image, the
        profile ``setup`` made and the prices."""
        import boto3

        session = boto3.Session(region_name=REGION)
        image = amazon_image(session.client("ec2", endpoint_url=self.endpoint))
        self._play(
            lambda metadata, root: Ec2Player(
                *(session, self.endpoint, metadata, root),
                bucket=BUCKET,
                notice_after_s=notice_after_s,
            )
        )
        return (
            *("--pools", f"{REGION}a", "--image-id", image, "--bucket", BUCKET),
            *("--instance-profile", PROFILE, *PRICES),
        )

"""AWS on this machine, for the tests: moto's server on 127.0.0.1 (EC2, S3, IAM, SSM) and an
image in it.

moto is imported only here, when a local AWS is started: it comes with ``spotwise[try]``."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from spotwise.executor.errors import ExecutorError

MOTO_MISSING = (
    "moto is not installed, and it plays AWS on this machine: pip install 'spotwise[try]' "
    "(in a checkout: make dev)"
)


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

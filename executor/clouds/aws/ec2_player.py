"""Plays EC2 on moto: each instance a launcher starts is booted here, its user data run with
bash in a folder of its own, as EC2 would run it on a new machine; optionally the first one
is given a spot interruption notice through the fake instance metadata service (the play is
:class:`~executor.local_clouds.player.InstancePlayer`'s)."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from spotwise.executor.clouds.aws.notice import IMDS
from spotwise.executor.local_clouds.player import InstancePlayer, Play

if TYPE_CHECKING:
    from spotwise.executor.local_clouds.metadata import FakeMetadata

FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
"""What moto accepts; no account's keys."""


class Ec2Player(InstancePlayer):
    """Boots every instance that appears running in moto's EC2 after it was made, on a thread,
    until :meth:`close`. ``notice_after_s``: the first instance gets a spot ``terminate``
    notice this long after its command's guard started (read from its log in ``bucket``), and
    the notice is withdrawn once that instance's script has ended (a new instance has none)."""

    cloud = "local EC2"
    metadata_variable = IMDS.variable

    def __init__(
        self, session: Any, endpoint: str, metadata: FakeMetadata, root: Path, **play: Unpack[Play]
    ) -> None:
        self.ec2 = session.client("ec2", endpoint_url=endpoint)
        self.s3 = session.client("s3", endpoint_url=endpoint)
        env = {
            "AWS_ENDPOINT_URL": endpoint,
            **FAKE_CREDENTIALS,
            "AWS_EC2_METADATA_DISABLED": "true",  # the fake IMDS is named apart, for notices
        }
        # moto's state lives with its process: the instances there now are not ours
        super().__init__(metadata, root, env, seen=self.live(), **play)

    def live(self) -> list[str]:
        """The ids of moto's pending and running instances."""
        answer = self.ec2.describe_instances(
            Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}]
        )
        return [i["InstanceId"] for r in answer["Reservations"] for i in r["Instances"]]

    def script(self, name: str) -> bytes:
        attribute = self.ec2.describe_instance_attribute(InstanceId=name, Attribute="userData")
        return base64.b64decode(attribute["UserData"]["Value"])

    def keys(self, prefix: str) -> list[str]:
        """Every key under ``prefix``, across the listing's pages (a long job's log chunks
        pass 1000)."""
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        return [item["Key"] for page in pages for item in page.get("Contents", [])]

    def read(self, key: str) -> bytes:
        return bytes(self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read())

    def booting(self, name: str) -> None:
        self.metadata.instance_id = name

    def notice(self, name: str) -> None:
        """EC2's two-minute spot interruption notice, as its instance metadata serves it."""
        at = datetime.fromtimestamp(self.clock.time() + 120.0, UTC)
        when = at.strftime("%Y-%m-%dT%H:%M:%SZ")
        self.metadata.aws_action = {"action": "terminate", "time": when}

    def ended(self, name: str) -> None:
        self.metadata.aws_action = None

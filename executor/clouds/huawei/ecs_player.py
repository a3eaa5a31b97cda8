"""Plays Huawei Cloud's ECS on the loopback fake: each server a launcher creates is booted here,
its user data run with bash in a folder of its own, as cloud-init would run it on a new server;
optionally the first one gets the spot ``instance-action`` from the fake metadata server and is
reclaimed once its script has ended, as ECS reclaims a spot server (the play is
:class:`~executor.local_clouds.player.InstancePlayer`'s). OBS is an S3 server here (moto)."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from spotwise.executor.clouds.huawei.notice import METADATA, HuaweiSpotNotice
from spotwise.executor.local_clouds.player import InstancePlayer, Play

if TYPE_CHECKING:
    from spotwise.executor.clouds.huawei.fake.api import HuaweiApi
    from spotwise.executor.local_clouds.metadata import FakeMetadata


class EcsPlayer(InstancePlayer):
    """Boots every server the fake's ECS makes, on a thread, until :meth:`close`. ``obs_url``:
    the S3 server playing OBS, where the servers' agents stream their logs to ``bucket``."""

    cloud, noun, script_kind = "local ECS", "server", "user data"
    notice_words = "the spot instance-action (a reclaim notice) and was reclaimed"
    metadata_variable = METADATA.variable

    def __init__(
        self,
        api: HuaweiApi,
        obs_url: str,
        metadata: FakeMetadata,
        root: Path,
        **play: Unpack[Play],
    ) -> None:
        import boto3

        self.api = api
        self._obs: Any = boto3.client(
            "s3",
            endpoint_url=obs_url,
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",
        )
        env = {  # on ECS: the region's endpoints; the agency's keys come from the metadata
            "SPOTWISE_HUAWEI_OBS_URL": obs_url,
            "SPOTWISE_HUAWEI_CSMS_URL": api.url,
        }
        super().__init__(metadata, root, env, **play)

    def live(self) -> list[str]:
        """Every server the fake has created, oldest first (a server boots once)."""
        return list(self.api.ecs.servers)

    def script(self, name: str) -> bytes:
        return base64.b64decode(self.api.ecs.servers[name].user_data)

    def keys(self, prefix: str) -> list[str]:
        pages = self._obs.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=prefix
        )
        return [item["Key"] for page in pages for item in page.get("Contents", ())]

    def read(self, key: str) -> bytes:
        return bytes(self._obs.get_object(Bucket=self.bucket, Key=key)["Body"].read())

    def booting(self, name: str) -> None:
        """The metadata's ``meta_data.json`` names this server."""
        self.metadata.huawei_server = name

    def notice(self, name: str) -> None:
        """The spot ``instance-action``, as ECS announces a reclaim."""
        when = datetime.fromtimestamp(self.clock.time() + HuaweiSpotNotice.notice_s, UTC)
        self.metadata.huawei_action = {
            "action": "delete",
            "time": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        }

    def ended(self, name: str) -> None:
        if name in self.noticed:
            self.metadata.huawei_action = None
            self.api.ecs.take_back(name)  # the reclaim completes

"""Huawei Cloud's preemption notice: the ECS metadata's ``openstack/latest/spot/instance-action``
(404 until the spot server is to be reclaimed, then the action and when)."""

from __future__ import annotations

import json
import logging

from spotwise.core.settings import CloudEndpoint
from spotwise.executor.notices import MetadataSource, Notice, iso_epoch, metadata_request

log = logging.getLogger(__name__)

METADATA = CloudEndpoint("SPOTWISE_HUAWEI_METADATA_URL", "http://169.254.169.254", https=False)
"""The ECS metadata service (OpenStack-compatible), on the link-local address."""
ACTIONS = ("terminate", "stop", "delete")


class HuaweiSpotNotice(MetadataSource):
    """Huawei Cloud ECS: a spot ``instance-action`` in the OpenStack metadata. The window is
    taken as two minutes, the shortest of the clouds' spot notices, until Huawei's own is
    measured: a guard that checkpoints within it is never late."""

    name = "huawei"
    notice_s = 120.0
    endpoint = METADATA

    def __init__(self, base_url: str = METADATA.default, *, timeout: float = 1.0) -> None:
        super().__init__(base_url, timeout=timeout)

    def poll(self) -> Notice | None:
        """A stop notice from ``instance-action`` (its ``time``, or ``timestamp``, the
        deadline), else None."""
        status, body = metadata_request(
            f"{self.base_url}/openstack/latest/spot/instance-action", {}, self.timeout
        )
        if status == 404:
            return None
        if status != 200:
            log.warning("huawei instance-action answered HTTP %s", status)
            return None
        try:
            action = json.loads(body)
            kind = action["action"]
            if kind not in ACTIONS:
                raise ValueError(f"unknown action {kind!r}")
            when = action.get("time") or action.get("timestamp")
            return Notice(
                kind="terminate" if kind == "delete" else kind,
                source=self.name,
                deadline=iso_epoch(when) if when else None,
                detail=body.decode(errors="replace"),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning(
                "huawei instance-action: ignoring an unreadable answer %r (%s)", body[:200], exc
            )
        return None

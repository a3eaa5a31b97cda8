"""Google Cloud's preemption notice: the metadata server's ``instance/preempted``."""

from __future__ import annotations

import logging

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.core.settings import CloudEndpoint
from spotwise.executor.notices import MetadataSource, Notice, metadata_request

log = logging.getLogger(__name__)

METADATA = CloudEndpoint(
    "SPOTWISE_GCP_METADATA_URL", "http://metadata.google.internal", https=False
)
"""The metadata server."""


class GcpMetadata(MetadataSource):
    """GCP: ``instance/preempted`` answers TRUE about 30 s before the VM is stopped."""

    name = "gcp"
    notice_s = 30.0
    endpoint = METADATA

    def __init__(
        self,
        base_url: str = METADATA.default,
        *,
        timeout: float = 1.0,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        super().__init__(base_url, timeout=timeout)
        self.clock = clock

    def poll(self) -> Notice | None:
        """A preempt notice once ``instance/preempted`` answers TRUE, else None."""
        status, body = metadata_request(
            f"{self.base_url}/computeMetadata/v1/instance/preempted",
            {"Metadata-Flavor": "Google"},
            self.timeout,
        )
        text = body.decode(errors="replace").strip()
        if status == 200 and text == "TRUE":
            return Notice(
                kind="preempt", source=self.name, deadline=self.clock.time() + self.notice_s
            )
        if status != 200 or text not in ("TRUE", "FALSE"):
            log.warning("gcp preempted: ignoring HTTP %s %r", status, text[:200])
        return None

"""Google Cloud's preemption notice: the metadata server's ``instance/preempted``."""

from __future__ import annotations

import logging

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.core.endpoints import GCP_METADATA_URL
from spotwise.executor.notices import MetadataSource, Notice, metadata_request

log = logging.getLogger(__name__)


class GcpMetadata(MetadataSource):
    """GCP: ``instance/preempted`` answers TRUE about 30 s before the VM is stopped."""

    name = "gcp"
    notice_s = 30.0

    def __init__(
        self,
        base_url: str = GCP_METADATA_URL,
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

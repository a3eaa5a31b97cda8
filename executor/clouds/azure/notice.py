"""Azure's preemption notice: Scheduled Events' ``Preempt``."""

from __future__ import annotations

import email.utils
import json
import logging

from spotwise.core.settings import CloudEndpoint
from spotwise.executor.notices import MetadataSource, Notice, metadata_request

log = logging.getLogger(__name__)

IMDS = CloudEndpoint("SPOTWISE_AZURE_METADATA_URL", "http://169.254.169.254", https=False)
"""The instance metadata service: it shares AWS's link-local address."""


class AzureScheduledEvents(MetadataSource):
    """Azure: a ``Preempt`` event in Scheduled Events (at least 30 s ahead)."""

    name = "azure"
    notice_s = 30.0
    endpoint = IMDS

    def __init__(self, base_url: str = IMDS.default, *, timeout: float = 1.0) -> None:
        super().__init__(base_url, timeout=timeout)

    def poll(self) -> Notice | None:
        """A preempt notice for the first ``Preempt`` scheduled event, else None."""
        status, body = metadata_request(
            f"{self.base_url}/metadata/scheduledevents?api-version=2020-07-01",
            {"Metadata": "true"},
            self.timeout,
        )
        if status != 200:
            log.warning("azure scheduled events answered HTTP %s", status)
            return None
        try:
            events = json.loads(body)["Events"]
            for event in events:
                if event.get("EventType") == "Preempt":
                    not_before = event.get("NotBefore") or ""
                    parsed = email.utils.parsedate_to_datetime(not_before) if not_before else None
                    return Notice(
                        kind="preempt",
                        source=self.name,
                        deadline=parsed.timestamp() if parsed else None,
                        detail=str(event.get("EventId", "")),
                    )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning(
                "azure scheduled events: ignoring an unreadable answer %r (%s)", body[:200], exc
            )
        return None

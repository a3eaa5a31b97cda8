"""Azure's notice source (Scheduled Events' ``Preempt``) against the fake metadata server on
127.0.0.1."""

from __future__ import annotations

import pytest

from spotwise.executor.clouds.azure.notice import AzureScheduledEvents
from spotwise.executor.local_clouds.metadata import FakeMetadata
from tests.executor.conftest import PATIENT_S


def test_azure_preempt_event_is_a_stop_notice(metadata: FakeMetadata) -> None:
    source = AzureScheduledEvents(metadata.url, timeout=PATIENT_S)
    assert source.poll() is None
    metadata.azure_events = "{{{"
    assert source.poll() is None
    metadata.azure_events = {
        "DocumentIncarnation": 2,
        "Events": [
            {"EventId": "A1", "EventType": "Freeze", "NotBefore": ""},
            {"EventId": "B2", "EventType": "Preempt", "NotBefore": "Sun, 29 Nov 2026 10:00:00 GMT"},
        ],
    }
    notice = source.poll()
    assert notice is not None and notice.detail == "B2"
    assert notice.deadline == pytest.approx(1795946400.0)

"""Each cloud's notice window is its notice source's (:mod:`executor.notices` defines it once)."""

from __future__ import annotations

from spotwise.executor.clouds.registry import CLOUDS
from spotwise.executor.notices import (
    CLOUD_SOURCES,
    AwsImds,
    AzureScheduledEvents,
    GcpMetadata,
)


def test_each_clouds_notice_window_is_read_from_its_notice_source() -> None:
    sources = {name: CLOUD_SOURCES[cloud.notice_source].kind for name, cloud in CLOUDS.items()}
    assert sources == {"aws": AwsImds, "gcp": GcpMetadata, "azure": AzureScheduledEvents}
    windows = {name: cloud.notice_s for name, cloud in CLOUDS.items()}
    assert windows == {name: kind.notice_s for name, kind in sources.items()}
    assert windows == {"aws": 120.0, "gcp": 30.0, "azure": 30.0}

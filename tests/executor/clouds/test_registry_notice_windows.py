"""Each cloud's notice window is its notice source's (its ``notice.py`` defines it once)."""

from __future__ import annotations

from spotwise.core.settings import current
from spotwise.executor.clouds.aws.notice import AwsImds
from spotwise.executor.clouds.azure.notice import AzureScheduledEvents
from spotwise.executor.clouds.gcp.notice import GcpMetadata
from spotwise.executor.clouds.registry import CLOUDS


def test_each_clouds_notice_window_is_read_from_its_notice_source() -> None:
    sources = {name: cloud.notice_kind for name, cloud in CLOUDS.items()}
    assert sources == {"aws": AwsImds, "gcp": GcpMetadata, "azure": AzureScheduledEvents}
    assert all(kind.name == name for name, kind in sources.items())  # SPOTWISE_NOTICES names
    windows = {name: cloud.notice_s for name, cloud in CLOUDS.items()}
    assert windows == {name: kind.notice_s for name, kind in sources.items()}
    assert windows == {"aws": 120.0, "gcp": 30.0, "azure": 30.0}
    urls = {name: cloud.notice_url(current()) for name, cloud in CLOUDS.items()}
    assert urls["aws"].startswith("http://169.254.169.254")

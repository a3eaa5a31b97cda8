"""Each cloud's notice window and metadata endpoint are its notice source's (its ``notice.py``
defines them once); a cloud whose notice is the SIGTERM (Kubernetes) has none, and its window is
its platforms' shortest grace."""

from __future__ import annotations

import pytest

from spotwise.core.settings import SettingsError
from spotwise.executor.clouds.aws.notice import AwsImds
from spotwise.executor.clouds.azure.notice import AzureScheduledEvents
from spotwise.executor.clouds.gcp.notice import GcpMetadata
from spotwise.executor.clouds.huawei.notice import HuaweiSpotNotice
from spotwise.executor.clouds.registry import CLOUDS, sources_from_env
from spotwise.executor.notices import MetadataSource


def metadata_sources() -> dict[str, type[MetadataSource]]:
    """The clouds whose notice is in their instances' metadata, and its source."""
    return {n: c.notice_kind for n, c in CLOUDS.items() if c.notice_kind is not None}


def test_each_clouds_notice_window_is_read_from_its_notice_source() -> None:
    sources = metadata_sources()
    assert sources == {
        "aws": AwsImds,
        "gcp": GcpMetadata,
        "azure": AzureScheduledEvents,
        "huawei": HuaweiSpotNotice,
    }
    assert all(kind.name == name for name, kind in sources.items())  # SPOTWISE_NOTICES names
    windows = {name: cloud.notice_s for name, cloud in CLOUDS.items() if name in sources}
    assert windows == {name: kind.notice_s for name, kind in sources.items()}
    assert windows == {"aws": 120.0, "gcp": 30.0, "azure": 30.0, "huawei": 120.0}
    assert CLOUDS["kubernetes"].notice_kind is None and CLOUDS["kubernetes"].notice_s == 15.0


def test_a_cloud_whose_notice_is_the_sigterm_adds_no_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The guard watches SIGTERM on every instance; SPOTWISE_NOTICES=kubernetes adds nothing."""
    monkeypatch.setenv("SPOTWISE_NOTICES", "kubernetes,gcp")
    assert [type(s) for s in sources_from_env()] == [GcpMetadata]


def test_each_clouds_notice_source_is_at_its_endpoint_or_where_its_variable_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    variables = {name: kind.endpoint.variable for name, kind in metadata_sources().items()}
    assert variables == {  # what boot scripts and users set: never renamed
        "aws": "SPOTWISE_AWS_IMDS_URL",
        "gcp": "SPOTWISE_GCP_METADATA_URL",
        "azure": "SPOTWISE_AZURE_METADATA_URL",
        "huawei": "SPOTWISE_HUAWEI_METADATA_URL",
    }
    for variable in variables.values():
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("SPOTWISE_NOTICES", "aws,gcp,azure")
    urls = {s.name: s.base_url for s in sources_from_env() if isinstance(s, MetadataSource)}
    assert urls == {
        "aws": "http://169.254.169.254",
        "gcp": "http://metadata.google.internal",
        "azure": "http://169.254.169.254",
    }
    monkeypatch.setenv("SPOTWISE_GCP_METADATA_URL", "http://127.0.0.1:8080/")
    gcp = sources_from_env()[1]
    assert isinstance(gcp, GcpMetadata) and gcp.base_url == "http://127.0.0.1:8080"
    monkeypatch.setenv("SPOTWISE_AZURE_METADATA_URL", "169.254.169.254")
    with pytest.raises(SettingsError, match=r"^SPOTWISE_AZURE_METADATA_URL: must be an http://"):
        sources_from_env()

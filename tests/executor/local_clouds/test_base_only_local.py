"""A cloud played on this machine sets its user's own settings for that cloud aside while it
runs (credentials, configuration, endpoints, their ledger), so that neither the try nor the
processes it starts can reach a real account; all of them are back afterwards."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from spotwise.executor.clouds.aws.local import only_local_aws
from spotwise.executor.clouds.azure.local import only_local_azure
from spotwise.executor.clouds.gcp.local import only_local_gcp
from spotwise.executor.clouds.huawei.local import only_local_huawei

THEIRS = {
    "aws": {
        "AWS_PROFILE": "their-production",
        "AWS_SESSION_TOKEN": "their-token",
        "AWS_CONFIG_FILE": "/their/aws/config",
        "AWS_ENDPOINT_URL": "https://their.endpoint",
    },
    "gcp": {
        "GOOGLE_APPLICATION_CREDENTIALS": "/their/key.json",
        "GOOGLE_CLOUD_PROJECT": "their-production",
        "CLOUDSDK_CORE_PROJECT": "their-production",
        "CLOUDSDK_CONFIG": "/their/gcloud",
        "GCE_METADATA_HOST": "169.254.169.254",
        "STORAGE_EMULATOR_HOST": "http://127.0.0.1:9",
    },
    "azure": {
        "AZURE_CLIENT_ID": "their-app",
        "AZURE_CLIENT_SECRET": "their-secret",
        "AZURE_CONFIG_DIR": "/their/azure",
        "AZURE_STORAGE_CONNECTION_STRING": "AccountName=theirs;",
        "ARM_SUBSCRIPTION_ID": "their-subscription",
        "MSI_ENDPOINT": "http://169.254.169.254/msi",
        "IDENTITY_ENDPOINT": "http://169.254.169.254/identity",
    },
    "huawei": {
        "HUAWEICLOUD_SDK_AK": "THEIRKEY",
        "HUAWEICLOUD_SDK_SK": "their-secret",
        "HUAWEICLOUD_SDK_PROJECT_ID": "their-project",
        "HUAWEICLOUD_SDK_CREDENTIALS_FILE": "/their/huaweicloud/credentials",
        "SPOTWISE_HUAWEI_OBS_URL": "https://their.endpoint",
    },
}
"""Per cloud, a user's settings that could point its libraries at a real account."""
PLAYED: dict[str, Callable[[Path], tuple[AbstractContextManager[None], dict[str, str]]]] = {
    "aws": lambda _: (
        only_local_aws("http://127.0.0.1:1"),
        {"AWS_ENDPOINT_URL": "http://127.0.0.1:1", "AWS_CONFIG_FILE": os.devnull},
    ),
    "gcp": lambda folder: (
        only_local_gcp({"GOOGLE_APPLICATION_CREDENTIALS": "/fake/key.json"}, folder),
        {"GOOGLE_APPLICATION_CREDENTIALS": "/fake/key.json", "CLOUDSDK_CONFIG": str(folder)},
    ),
    "azure": lambda folder: (
        only_local_azure({"IDENTITY_ENDPOINT": "https://127.0.0.1:1/msi/token"}, folder),
        {"IDENTITY_ENDPOINT": "https://127.0.0.1:1/msi/token", "AZURE_CONFIG_DIR": str(folder)},
    ),
    "huawei": lambda folder: (
        only_local_huawei({"HUAWEICLOUD_SDK_AK": "FAKE"}, folder),
        {
            "HUAWEICLOUD_SDK_AK": "FAKE",
            "HUAWEICLOUD_SDK_CREDENTIALS_FILE": str(folder / "no-credentials"),
        },
    ),
}
"""Per cloud, its local environment with a folder for the CLI's configuration, and what it
sets in place of the user's settings."""


@pytest.mark.parametrize("cloud", sorted(PLAYED))
def test_the_users_settings_are_set_aside_then_restored(
    cloud: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    theirs = {**THEIRS[cloud], "SPOTWISE_OPERATIONAL_STORE": "postgresql://their/ledger"}
    for name, value in theirs.items():
        monkeypatch.setenv(name, value)
    played, local = PLAYED[cloud](tmp_path / "cli-config")
    with played:
        assert {name: os.environ.get(name) for name in local} == local
        for name in set(theirs) - set(local):
            assert name not in os.environ, name
        if cloud != "aws":  # its CLI's configuration: an empty folder of the try's
            assert (tmp_path / "cli-config").is_dir()
    assert {name: os.environ.get(name) for name in theirs} == theirs

"""GCP on this machine: without a library it needs, one line that says how to install it; while
it runs, none of the user's Google settings is seen, and all of them are back afterwards."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from spotwise.executor.clouds.gcp.local import LocalGcp, only_local_gcp
from spotwise.executor.errors import ExecutorError

INSTALL = r"pip install 'spotwise\[gcp,try\]' \(in a checkout: make dev\)"


def test_without_the_storage_emulator_the_error_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    find = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "gcp_storage_emulator" else find(name, *a),
    )
    with (
        pytest.raises(ExecutorError, match=rf"gcp_storage_emulator is not installed.*{INSTALL}"),
        LocalGcp(tmp_path),
    ):
        pass


def test_without_googles_libraries_the_error_says_how_to_install_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "google.cloud.compute_v1", None)  # as uninstalled
    with (
        pytest.raises(ExecutorError, match=rf"Google's client libraries .*{INSTALL}"),
        LocalGcp(tmp_path),
    ):
        pass


def test_the_users_google_settings_are_set_aside_then_restored(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    theirs = {
        "GOOGLE_APPLICATION_CREDENTIALS": "/their/key.json",
        "GOOGLE_CLOUD_PROJECT": "their-production",
        "CLOUDSDK_CORE_PROJECT": "their-production",
        "CLOUDSDK_CONFIG": "/their/gcloud",
        "GCE_METADATA_HOST": "169.254.169.254",
        "STORAGE_EMULATOR_HOST": "http://127.0.0.1:9",
        "SPOTWISE_OPERATIONAL_STORE": "postgresql://their/ledger",
    }
    for name, value in theirs.items():
        monkeypatch.setenv(name, value)
    local = {"GOOGLE_APPLICATION_CREDENTIALS": "/fake/key.json", "GOOGLE_CLOUD_PROJECT": "p"}
    with only_local_gcp(local, tmp_path / "gcloud"):
        assert os.environ["GOOGLE_APPLICATION_CREDENTIALS"] == "/fake/key.json"
        assert os.environ["CLOUDSDK_CONFIG"] == str(tmp_path / "gcloud")
        assert (tmp_path / "gcloud").is_dir()
        for name in set(theirs) - {*local, "CLOUDSDK_CONFIG"}:
            assert name not in os.environ, name
    assert {name: os.environ.get(name) for name in theirs} == theirs

"""Azure on this machine: without Azurite, one line that says how to install it; the Azurite it
looks for is the one ``make dev`` installs (a missing library:
tests/executor/local_clouds/test_base_require.py; the user's settings set aside:
test_base_only_local.py there)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from spotwise.executor.clouds.azure.fake.servers import AZURITE_VERSION, azurite_blob
from spotwise.executor.clouds.azure.local import LocalAzure
from spotwise.executor.errors import ExecutorError

ROOT = Path(__file__).resolve().parents[4]


def test_without_azurite_the_error_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))  # a venv without .../node
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # nor azurite-blob on the PATH
    install = rf"npm install --prefix {tmp_path}/venv/node azurite@{AZURITE_VERSION}"
    with (
        pytest.raises(ExecutorError, match=rf"Azurite .* is not installed.*{re.escape(install)}"),
        LocalAzure(tmp_path),
    ):
        pass


def test_the_azurite_looked_for_is_the_one_make_dev_installs() -> None:
    assert f"azurite@{AZURITE_VERSION}" in (ROOT / "Makefile").read_text()
    found = azurite_blob()
    assert found is not None and found.is_relative_to(Path(sys.prefix) / "node")

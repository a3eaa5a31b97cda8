"""A cloud played on this machine without a library it needs: one line that says how to install
it, before any server starts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from spotwise.executor.clouds.registry import LOCAL_CLOUDS
from spotwise.executor.errors import ExecutorError

GCP = r"pip install 'spotwise\[gcp,try\]' \(in a checkout: make dev\)"
AZURE = r"pip install 'spotwise\[azure,try\]' \(in a checkout: make dev\)"
HUAWEI = r"pip install 'spotwise\[huawei,try\]' \(in a checkout: make dev\)"
MISSING = [  # (cloud, module as uninstalled, a library the client libraries import, the line)
    ("gcp", "google.cloud.compute_v1", True, rf"^Google's client libraries are not .*{GCP}$"),
    ("gcp", "gcp_storage_emulator", False, rf"^gcp_storage_emulator is not installed.*{GCP}$"),
    ("azure", "azure.mgmt.compute", True, rf"^Microsoft's Azure libraries are not .*{AZURE}$"),
    ("azure", "cryptography", False, rf"^cryptography is not installed.*{AZURE}$"),
    ("huawei", "huaweicloudsdkecs", True, rf"^Huawei Cloud's SDK libraries are not .*{HUAWEI}$"),
    ("huawei", "moto", False, rf"^moto is not installed.*{HUAWEI}$"),
]


@pytest.mark.parametrize(("cloud", "module", "imported", "line"), MISSING)
def test_without_a_library_the_error_says_how_to_install_it(
    cloud: str,
    module: str,
    imported: bool,
    line: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    if imported:
        monkeypatch.setitem(sys.modules, module, None)  # its import fails, as uninstalled
    else:  # looked for, not imported (the client libraries may import it themselves)
        find = importlib.util.find_spec
        monkeypatch.setattr(
            importlib.util, "find_spec", lambda name, *a: None if name == module else find(name, *a)
        )
    with pytest.raises(ExecutorError, match=line), LOCAL_CLOUDS[cloud](tmp_path):
        pass

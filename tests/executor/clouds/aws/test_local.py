"""AWS on this machine: without moto, one line that says how to install it."""

from __future__ import annotations

import sys

import pytest

from spotwise.executor.clouds.aws.local import local_aws
from spotwise.executor.errors import ExecutorError


def test_without_moto_the_error_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "moto.server", None)  # its import fails, as uninstalled
    with (
        pytest.raises(
            ExecutorError, match=r"pip install 'spotwise\[try\]' \(in a checkout: make dev\)"
        ),
        local_aws(),
    ):
        pass

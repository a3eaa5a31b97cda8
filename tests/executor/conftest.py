from __future__ import annotations

from collections.abc import Iterator

import pytest

from spotwise.executor.local_clouds.metadata import FakeMetadata

PATIENT_S = 10.0
"""Seconds a source waits for the fake endpoint: a loaded machine may be slow to answer."""


@pytest.fixture
def metadata() -> Iterator[FakeMetadata]:
    server = FakeMetadata()
    yield server
    server.close()

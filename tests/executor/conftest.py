from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.executor.fake_metadata import FakeMetadata


@pytest.fixture
def metadata() -> Iterator[FakeMetadata]:
    server = FakeMetadata()
    yield server
    server.close()

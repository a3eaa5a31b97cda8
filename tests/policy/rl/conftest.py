"""The bundled 1-node traces the learned policy's tests train and run on."""

from __future__ import annotations

import pytest

from spotwise.policy.traces import TraceSet, load_traces
from tests.conftest import DATA

BUNDLED = DATA / "traces/cbl/availability/1-node/aws-02-15-2023"


@pytest.fixture(scope="module")
def bundled() -> TraceSet:
    return load_traces(BUNDLED)

"""The decision service: a pool set's past is fitted once, and every decision is what a
service fitted for that one request would say."""

from __future__ import annotations

import numpy as np
import pytest

from spotwise.policy.service.loadtest import LOAD_JOB
from spotwise.policy.service.schemas import DecisionRequest
from spotwise.policy.service.service import DecisionService
from spotwise.policy.traces import load_traces
from tests.conftest import DATA

BUNDLED = DATA / "traces/cbl/availability/1-node/aws-02-15-2023"


@pytest.mark.parametrize("name", ["core", "risk_aware"])
def test_decisions_over_a_fitted_past_are_those_of_a_fresh_fit(name: str) -> None:
    traces = load_traces(BUNDLED)
    rng = np.random.default_rng(0)
    shared = DecisionService(traces)
    for _ in range(12):
        pools = {p: {"available": bool(rng.random() < 0.4), "price": float(rng.uniform(0.5, 2.5))}
                 for p in traces.names}  # fmt: skip
        request = DecisionRequest.model_validate(
            {
                "policy": name,
                "job": dict(LOAD_JOB),
                "state": {
                    "elapsed_hours": float(rng.uniform(0, 8)),
                    "progress_hours": float(rng.uniform(0, 6)),
                },
                "pools": pools,
            }
        )
        assert shared.decide(request) == DecisionService(traces).decide(request)
    assert len(shared._fits) == 1  # one pool set: fitted once

"""The N-node lower bound: every spot node there is, the rest on demand."""

from __future__ import annotations

import pytest

from spotwise.policy.nodes.bound import node_lower_bound
from spotwise.policy.nodes.simulate import node_context
from tests.policy.helpers import capacity, job


def test_the_bound_uses_every_spot_node_there_is_and_buys_the_rest_on_demand() -> None:
    traces = capacity([0, 2, 2, 0, 0, 0], [1, 1, 4, 0, 0, 0])
    context = node_context(traces, job(2, 6, 0), 2, 0, reads_future=True)
    bound = node_lower_bound(context)
    # 4 node-ticks of work; spot can give 1 + 2 + 2 = 5 node-ticks (at most 2 a tick): all spot
    assert bound.spot_share == 1.0 and bound.cost == pytest.approx(4 * 1.0)
    short = node_lower_bound(node_context(traces, job(4, 6, 0), 2, 0, reads_future=True))
    assert short.cost == pytest.approx(5 * 1.0 + 3 * 3.0)

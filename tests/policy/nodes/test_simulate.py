"""The N-node simulator: capacity counted in nodes, an on-demand floor under spot workers,
regroups."""

from __future__ import annotations

import pytest

from spotwise.policy.nodes.simulate import NO_POOL, NodeAction, NodeRun
from tests.policy.helpers import capacity, job


def test_every_node_count_change_is_a_regroup_billed_without_progress() -> None:
    # 4 nodes, 3 ticks of work, 1-tick regroups; the pool has 4 spot nodes, then 2.
    run = NodeRun(capacity([4, 4, 4, 2, 2, 2, 2, 2]), job(3, 8, 1), 4, 0)
    run.observe()
    run.step(NodeAction(on_demand=0, spot=4, pool=0))  # tick 0: start, regroup
    assert (run.progress, run.regroups) == (0.0, 1)
    run.observe()
    run.step(NodeAction(on_demand=0, spot=4, pool=0))  # ticks 1, 2: full speed
    run.observe()
    run.step(NodeAction(on_demand=0, spot=4, pool=0))
    assert run.progress == 2.0
    obs = run.observe()  # tick 3: the pool has 2 left, 2 nodes are taken back
    assert (obs.lost, obs.spot, obs.regroup_left) == (2, 2, 1)
    run.step(NodeAction(on_demand=2, spot=2, pool=0))  # the floor fills in: one regroup
    assert run.progress == 2.0 and run.regroups == 3
    run.observe()
    run.step(NodeAction(on_demand=2, spot=2, pool=0))
    result = run.result()
    assert result.done and result.finish_tick == 5 and result.preempted_nodes == 2
    # billed: 4 spot nodes for ticks 0-2, 2 spot for 3-4, 2 on-demand for 3-4 ($1 and $3 per h)
    assert result.cost == pytest.approx(4 * 3 * 1.0 + 2 * 2 * 1.0 + 2 * 2 * 3.0)
    assert result.cost_ratio == pytest.approx(result.cost / ((3 + 1) * 4 * 3.0))


def test_asking_another_pool_moves_there_only_if_it_gives_more() -> None:
    run = NodeRun(capacity([2] * 6, [1] * 3 + [4] * 3), job(2, 6, 0), 4, 0)
    run.observe()
    run.step(NodeAction(on_demand=0, spot=4, pool=0))
    assert (run.s, run.pool) == (2, 0)
    obs = run.observe()
    run.step(NodeAction(on_demand=0, spot=4, pool=1))  # p1 gives 1 < 2: stay, but learn it
    assert (run.s, run.pool) == (2, 0) and obs.seen.tolist() == [2, 1]
    run.observe()
    run.step(NodeAction(on_demand=0, spot=4, pool=0))
    run.observe()
    run.step(NodeAction(on_demand=0, spot=4, pool=1))  # now p1 gives 4: move
    assert (run.s, run.pool, run.regroups) == (4, 1, 2)
    run.observe()
    run.step(NodeAction(on_demand=0))
    assert (run.s, run.pool) == (0, NO_POOL)

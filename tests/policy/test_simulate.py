"""The simulator's semantics, tick by tick, on small hand-made traces (1 h ticks)."""

from __future__ import annotations

import pytest

from spotwise.policy.policies.base import NONE, ON_DEMAND, Action, Observation, spot
from spotwise.policy.simulate import CheckpointMode, job_starts, simulate
from tests.policy.helpers import Scripted, job, traces


def test_on_demand_pays_changeover_then_works_and_has_cost_ratio_one() -> None:
    result = simulate(Scripted([ON_DEMAND]), traces("0" * 10), job(3, 8, 2), 0)
    assert result.done and result.finish_tick == 5
    assert result.on_demand_ticks == 5 and result.cost == pytest.approx(5 * 3.0)
    assert result.cost_ratio == pytest.approx(1.0)


def test_spot_is_preempted_at_the_start_of_the_tick_its_zone_turns_unavailable() -> None:
    policy = Scripted([spot(0)])
    result = simulate(policy, traces("1110111111"), job(3, 9, 1), 0)
    # t0 changeover, t1 t2 work, t3 preempted -> waits (zone down), t4 changeover, t5 work.
    assert [s for _, _, s, _ in policy.seen] == [NONE, spot(0), spot(0), NONE, NONE, spot(0)]
    assert [p for _, _, _, p in policy.seen] == [False, False, False, True, False, False]
    assert result.preemptions == 1 and result.changeovers == 2
    assert result.done and result.finish_tick == 6
    assert result.spot_ticks == 5 and result.cost == pytest.approx(5 * 1.0)


def test_a_preemption_names_the_pool_the_instance_was_taken_back_from() -> None:
    pools: list[int] = []

    class Noting(Scripted):
        def act(self, obs: Observation) -> Action:
            pools.append(obs.preempted_pool)
            return super().act(obs)

    simulate(Noting([spot(1)]), traces("1111", "1011"), job(2, 4, 0), 0)
    assert pools == [-1, 1, -1]  # landed in pool 1 at t0, taken back at the start of t1


def test_picking_an_unavailable_zone_waits_and_costs_nothing() -> None:
    result = simulate(Scripted([spot(0)]), traces("0000"), job(1, 3, 0), 0)
    assert not result.done and result.cost == 0.0 and result.changeovers == 0


def test_job_not_done_by_the_deadline_is_a_miss() -> None:
    result = simulate(Scripted([NONE, NONE, ON_DEMAND]), traces("0" * 6), job(2, 4, 1), 0)
    assert not result.done and result.finish_tick == 4
    assert result.on_demand_ticks == 2  # t2 changeover, t3 one tick of work: 1 of 2 done


def test_switching_zone_is_a_changeover_billed_at_the_new_price() -> None:
    prices = [[1.0] * 8, [2.0] * 8]
    policy = Scripted([spot(0), spot(0), spot(1)])
    result = simulate(policy, traces("11111111", "11111111", prices=prices), job(3, 8, 1), 0)
    # t0 change z0, t1 work, t2 change z1 (price 2), t3 t4 work.
    assert result.changeovers == 2 and result.finish_tick == 5
    assert result.cost == pytest.approx(1.0 * 2 + 2.0 * 3)
    assert result.cost_ratio == pytest.approx(8.0 / ((3 + 1) * 3.0))


def test_trace_prices_bill_each_tick_and_a_bid_below_the_price_preempts() -> None:
    prices = [[1.0, 1.0, 1.0, 5.0, 1.0, 1.0, 1.0, 1.0]]
    free = simulate(Scripted([spot(0)]), traces("1" * 8, prices=prices), job(4, 8, 0), 0)
    assert free.cost == pytest.approx(1 + 1 + 1 + 5) and free.preemptions == 0
    capped = simulate(Scripted([spot(0)], bid=2.0), traces("1" * 8, prices=prices), job(4, 8, 0), 0)
    # Taken back at t3 (price 5 > bid 2), and not restarted while the price is above the bid.
    assert capped.preemptions == 1 and capped.finish_tick == 5
    assert capped.cost == pytest.approx(1 + 1 + 1 + 1)


def test_a_faster_pool_needs_fewer_ticks() -> None:
    result = simulate(Scripted([spot(0)]), traces("1" * 8, speeds=[2.0]), job(4, 8, 0), 0)
    assert result.finish_tick == 2 and result.spot_ticks == 2


def test_checkpoint_mode_loses_work_since_the_last_checkpoint_without_notice() -> None:
    # 1 h ticks, checkpoint every 120 min of work, stall 360 s (0.1 tick), notice 60 s < stall.
    mode = CheckpointMode(interval_minutes=120, stall_seconds=360, notice_seconds=60)
    policy = Scripted([spot(0)])
    result = simulate(policy, traces("1111101111111"), job(5, 12, 0), 0, mode)
    # work t0 t1, checkpoint at t2 (stall 0.1 → 2.9), t3 (3.9), checkpoint at t4 (→ 4.8),
    # preempted at t5: back to the checkpoint at 3.9.
    assert result.preemptions == 1 and result.checkpoints == 2
    assert result.lost_ticks == pytest.approx(0.9)
    assert result.done and result.finish_tick > 7


def test_checkpoint_mode_with_enough_notice_loses_nothing() -> None:
    mode = CheckpointMode(interval_minutes=120, stall_seconds=30, notice_seconds=120)
    result = simulate(Scripted([spot(0)]), traces("1111101111111"), job(5, 12, 0), 0, mode)
    assert result.lost_ticks == 0.0 and result.done


def test_job_starts_step_by_whole_ticks_while_the_deadline_fits() -> None:
    assert job_starts(13292, 195, 1107, 0, 12) == list(range(0, 12186 - 1, 222))
    assert len(job_starts(13292, 195, 1107, 0, 12)) == 55
    assert job_starts(100, 3600, 10, 0.5, 30) == [1, 31, 61]
    assert job_starts(100, 3600, 100, 0, 1) == []

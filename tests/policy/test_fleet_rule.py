"""The fleet's tier rule, the one the lab's fleets and the executor's run."""

from __future__ import annotations

from spotwise.policy.fleet_rule import Grant, Market, Tier, deadline_asks, fleet_grant, spot_within


def test_the_fleet_rule_keeps_the_budget_but_for_high_jobs_and_deadlines() -> None:
    def ask(tier: Tier, market: Market, others: float, deadline: bool = False) -> Grant:
        return fleet_grant(tier, market, 1.0, others=others, budget=2.0, deadline=deadline)

    for tier in ("high", "normal", "low"):
        assert ask(tier, "spot", 1.0) == Grant(True)  # room: every tier gets spot
    assert ask("high", "spot", 1.5) == Grant(True, over_budget=True)
    assert ask("normal", "spot", 1.5) == Grant(False)  # the budget keeps spot too
    assert ask("normal", "spot", 1.5, deadline=True) == Grant(True, over_budget=True)
    assert ask("normal", "on-demand", 1.0) == Grant(True)
    assert ask("low", "on-demand", 0.0) == Grant(False)  # never, room or not
    assert ask("low", "spot", 1.5, deadline=True) == Grant(False)  # no deadline guarantee
    # a move to something no dearer than what the job holds is never refused
    assert fleet_grant("normal", "spot", 1.0, others=5.0, budget=2.0, deadline=False, holding=3.0)
    assert deadline_asks(3.0, 1.0, 1.0) and not deadline_asks(3.5, 1.0, 1.0)
    assert spot_within({"a": 0.5, "b": 1.5, "c": 1.0}, others=1.0, budget=2.0) == ["a", "c"]

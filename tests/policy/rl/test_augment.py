"""Stormier copies of a trace set, for training."""

from __future__ import annotations

from spotwise.policy.job import REFERENCE
from spotwise.policy.traces import TraceSet

SPEC = REFERENCE


def test_stormier_copies_only_take_capacity_away_and_storms_hit_a_region_at_once(
    bundled: TraceSet,
) -> None:
    from spotwise.policy.rl.augment import Storms, stormier

    rough = stormier(bundled, seed=1, storms=Storms(outages_per_day=0.0, storms_per_day=2.0))
    assert rough.available.shape == bundled.available.shape
    assert not (rough.available & ~bundled.available).any()  # nothing added
    assert rough.available.mean() < bundled.available.mean()
    taken = bundled.available & ~rough.available
    east1 = [i for i, n in enumerate(bundled.names) if n.startswith("us-east-1")]
    # a regional storm takes every pool of the region that was up, at the same ticks
    up_in_all = bundled.available[east1].all(axis=0)
    assert (taken[east1][:, up_in_all].all(axis=0) == taken[east1][:, up_in_all].any(axis=0)).all()
    again = stormier(bundled, seed=1, storms=Storms(outages_per_day=0.0, storms_per_day=2.0))
    assert (again.available == rough.available).all()  # a seed is a copy

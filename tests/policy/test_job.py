"""A job in hours, checked, and the same job in a trace's ticks."""

from __future__ import annotations

import pytest

from spotwise.policy.errors import PolicyError
from spotwise.policy.job import JobSpec, JobTicks


def spec(compute: float, deadline: float, changeover: float, spot: float = 1.0) -> JobSpec:
    return JobSpec(
        compute_hours=compute,
        deadline_hours=deadline,
        changeover_hours=changeover,
        spot_price=spot,
        on_demand_price=3.0,
    )


def test_in_ticks_work_and_changeover_are_rounded_and_the_deadline_floored() -> None:
    """30-minute ticks: 10.3 h = 20.6 → 21 work ticks; 20.9 h = 41.8 → 41 deadline ticks (a
    tick that ends past the deadline is not there to work in); 0.2 h = 0.4 → 0 changeover
    ticks; uniform progress keeps the exact 41.8."""
    assert spec(10.3, 20.9, 0.2).ticks(1800) == JobTicks(
        work=21, deadline=41, changeover=0, deadline_exact=41.8, hours_per_tick=0.5
    )
    assert spec(10, 20.5, 0.25).ticks(900) == JobTicks(
        work=40, deadline=82, changeover=1, deadline_exact=82.0, hours_per_tick=0.25
    )


@pytest.mark.parametrize(
    ("terms", "message"),
    [
        ((0, 10, 0), "compute_hours must be positive, got 0"),
        ((1, 10, 0, -0.5), "spot_price must be positive, got -0.5"),
        ((1, 10, -0.1), r"changeover_hours must be >= 0 and finite, got -0.1"),
        ((10, 10.1, 0.2), r"the deadline \(10.1 h\) is shorter than the compute plus one"),
    ],
)
def test_a_job_that_cannot_be_scheduled_is_refused_saying_which_term(
    terms: tuple[float, ...], message: str
) -> None:
    with pytest.raises(PolicyError, match=message):
        spec(*terms)


def test_a_deadline_of_exactly_the_compute_plus_one_changeover_fits() -> None:
    assert spec(10, 10.5, 0.5).deadline_hours == 10.5

"""The fleet's tier rule: may a job of a tier have spot or on-demand at a price while the rest
of the fleet spends what it spends, against the fleet's budget in $/h? One rule for both the
executor's fleets (``spotwise fleet run``, :mod:`spotwise.executor.fleets.fleet`) and the lab's
fleet simulator (:mod:`spotwise.policy.lab.fleet`, ``spotwise bench fleet``).

- ``high`` gets what it asks (on-demand as soon as its deadline asks for it);
- ``normal`` gets spot or on-demand while the budget has room for it, and either once its
  deadline asks (:func:`deadline_asks`: a normal job does not miss to save money);
- ``low`` runs only on spot, and only while the budget has room for it; it never buys
  on-demand (:func:`spot_within`: the pools it asks for instead) and may wait, so it may miss.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, TypeVar

from spotwise.policy.policies.rules import safety_margin

Tier = Literal["high", "normal", "low"]
TIERS: tuple[Tier, ...] = ("high", "normal", "low")
K = TypeVar("K")

Market = Literal["spot", "on-demand"]


@dataclass(frozen=True, slots=True)
class Grant:
    """The fleet's answer to a job's ask: granted or not, and whether granting it takes the
    fleet past its budget (a ``high`` job's ask, or a deadline's)."""

    granted: bool
    over_budget: bool = False


def deadline_asks(slack: float, changeover: float, step: float) -> bool:
    """Whether a job's deadline asks for what it wants now, whatever the budget: its slack
    (time left minus work left) will be down to two changeovers by the time it is asked again
    (``step`` from now: the lab's tick, the executor's wait between asks), the safety net's
    margin. Any one unit (ticks, hours) for the three."""
    return slack <= safety_margin(changeover, step)


def fleet_grant(
    tier: Tier,
    market: Market,
    price: float,
    *,
    others: float,
    budget: float,
    deadline: bool,
    holding: float = 0.0,
) -> Grant:
    """The fleet's tier rule, the one the lab simulates (``simulate_fleet``) and the executor
    runs (:mod:`spotwise.executor.fleets.fleet`): may a job of ``tier`` have ``market`` at
    ``price`` $/h while the rest of the fleet spends ``others`` $/h (and holds room for jobs of
    a higher tier that wait) against ``budget``?

    - within the budget (``others + price <= budget``), or no more than the job ``holding``
      already (a move to a cheaper instance), ``high`` and ``normal`` get what they ask and
      ``low`` gets spot;
    - past it, ``high`` still gets what it asks, and ``normal`` gets it only when its
      ``deadline`` asks (:func:`deadline_asks`, or an elastic job's deadline floor): both are
      granted ``over_budget``;
    - ``low`` never gets on-demand, and never goes past the budget.

    So the fleet's spend stays within its budget, but for ``high`` jobs and deadlines."""
    within = others + price <= budget + 1e-9 or price <= holding + 1e-9
    if tier == "low":
        return Grant(market == "spot" and within)
    if within:
        return Grant(True)
    return Grant(tier == "high" or deadline, over_budget=tier == "high" or deadline)


def spot_within(prices: Mapping[K, float], *, others: float, budget: float) -> list[K]:
    """The pools of ``prices`` (spot $/h of each pool a job may ask, in order) whose price fits
    in the budget beside ``others``: where a ``low`` job whose policy asks for on-demand asks
    for spot instead (it never buys on-demand)."""
    return [pool for pool, price in prices.items() if others + price <= budget + 1e-9]

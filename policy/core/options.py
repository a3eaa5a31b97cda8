"""The options of a tick, each priced by its expected cost to finish the job.

An option commits to a segment, then the rest of the job costs what the continuation says
(:mod:`.continuation`) from the work and slack the segment leaves:

- stay on the spot instance: its run's expected rest ``R`` at its price, then ``V(W − R, S)``;
- land in pool ``p`` (from idle, or a move): the request's charge, the checkpoint's egress from
  its region, ``D`` ticks of changeover and the run ``L`` there at its price, the work since the
  last checkpoint done again, then ``V(W + lost − (L − D), S − D − lost)``; a request that may
  fail is worth ``q·(landing) + (1 − q)·(what failing leaves)``, ``q`` the chance the pool is up;
- on demand in region ``r``: its changeover and egress where it starts, ``H`` ticks at its price
  (``H`` the time until spot is expected back), then the continuation;
- wait: nothing paid, the expected rest of the outage spent from the slack.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spotwise.policy.core.continuation import Continuation


@dataclass(frozen=True, slots=True)
class Option:
    """One option of a tick and its expected cost to finish ($)."""

    kind: str
    """``stay``, ``spot``, ``on-demand`` or ``wait``."""
    cost: float
    pool: int = -1
    region: int = -1
    move_usd: float = 0.0
    """Of ``cost``: the request's charge and the checkpoint's egress."""
    run_ticks: float = 0.0
    """The segment it commits to: the run (spot), the time until spot is back (on demand,
    wait)."""
    up_chance: float = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Segments:
    """What a tick's options are priced from (ticks and $ per tick)."""

    work: float
    slack: float
    changeover: float
    lost: float
    """Work since the last checkpoint, done again after a move."""
    failed_slack: float
    """Slack a failed request costs an idle job."""


def land(
    seg: Segments,
    cont: Continuation,
    price: np.ndarray,
    run: np.ndarray,
    move_usd: np.ndarray,
) -> np.ndarray:
    """$ to finish after landing in each pool now (``price`` per tick, ``run`` its expected
    run, ``move_usd`` the request and egress)."""
    d, lost = seg.changeover, seg.lost
    work_left = seg.work + lost
    segment = np.minimum(run, work_left + d)
    after = work_left - np.maximum(segment - d, 0.0)
    value = cont.value(after, np.full_like(after, seg.slack - d - lost))
    return move_usd + price * segment + value


def stay(seg: Segments, cont: Continuation, price: float, run: float) -> float:
    """$ to finish staying on the running spot instance (``run``: its expected rest)."""
    segment = min(run, seg.work)
    return price * segment + float(cont.value(np.array(seg.work - segment), np.array(seg.slack)))


def on_demand(
    seg: Segments,
    cont: Continuation,
    price: np.ndarray,
    move_usd: np.ndarray,
    hold: float,
    switching: np.ndarray,
) -> np.ndarray:
    """$ to finish on demand in each region, held ``hold`` ticks (``switching``: whether the job
    must start it, a changeover and ``move_usd``, or runs on it already)."""
    d = np.where(switching, seg.changeover, 0.0)
    lost = np.where(switching, seg.lost, 0.0)
    work_left = seg.work + lost
    segment = np.minimum(np.maximum(hold, d + 1.0), work_left + d)
    after = work_left - (segment - d)
    value = cont.value(after, seg.slack - d - lost)
    return np.where(switching, move_usd, 0.0) + price * segment + value


def wait(seg: Segments, cont: Continuation, outage: float) -> float:
    """$ to finish after waiting ``outage`` ticks idle."""
    return float(cont.value(np.array(seg.work), np.array(seg.slack - outage)))


def request(
    landed: np.ndarray, chance: np.ndarray, failed: float, any_chance: float = 1.0
) -> tuple[float, list[int]]:
    """A launch request naming the pools whose landing beats ``failed`` (what a failure leaves),
    best first: its expected cost, and the pools it names. The pools' chances are taken apart,
    but the request lands at most with ``any_chance`` (in an outage of every pool, the chance it
    ends now: pools that go down together come back together)."""
    named = [int(z) for z in np.argsort(landed, kind="stable") if landed[z] < failed]
    expected, none_yet = 0.0, 1.0
    for z in named:
        expected += none_yet * chance[z] * landed[z]
        none_yet *= 1.0 - chance[z]
    lands = 1.0 - none_yet
    if lands > any_chance:
        expected *= any_chance / lands
        lands = any_chance
    return expected + (1.0 - lands) * failed, named

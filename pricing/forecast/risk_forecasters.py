"""One risk forecast that the decisions read: per pool, the expected remaining spot run, the
hazard and P(preempted within h), fitted on a pool's past, started from a prior where that past
is short, and updated each tick with what a controller saw.

Forecasters are registered by name (:data:`RISK_FORECASTERS`). A :class:`RiskConfig` names one
and the values it is fitted with; :data:`SHIPPED_RISK` is the one configuration every reader
acts on (the policies, the API, the planner, ``forecast run`` and the training guard), and its
label (``survival-v1``) names the forecasts it makes. A job's history is turned into a
:class:`History` by :mod:`spotwise.policy.policies.risk`.
"""

from __future__ import annotations

import copy
import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from spotwise.pricing.forecast.hazard import MarketForecast
from spotwise.pricing.forecast.prior import PoolPrior


@dataclass(frozen=True, slots=True)
class History:
    """What a forecaster is fitted on: availability before now, the tick length, and the prior
    (None: the history alone)."""

    past_available: np.ndarray
    """bool [pools, ticks]."""
    hours_per_tick: float
    prior: PoolPrior | None = None


class RiskForecaster(ABC):
    """Per pool: how long spot will last, from the pool's past and what the job sees."""

    name: ClassVar[str]

    def __init__(self, config: RiskConfig) -> None:
        self.config = config
        """The configuration it was fitted with: its label names what this forecast says."""

    @abstractmethod
    def update(self, tick: int, belief: np.ndarray, any_up: bool | None = None) -> None:
        """Add tick ``tick`` of the job (once per tick) with each pool's availability as last
        seen (bool [pools]) and, where the job knows it fresh, whether some pool is up."""

    @abstractmethod
    def expected_run(self, pool: int, *, fresh: bool = False) -> float:
        """Expected further available ticks of ``pool``: of its current run, or of a run that
        starts now (``fresh``)."""

    def expected_run_up_within(self, pool: int, ticks: float) -> float:
        """Expected further available ticks of ``pool`` if it is up now, having been seen down
        ``ticks`` ago (inf: never seen); without a model of run ages, a fresh run's."""
        return self.expected_run(pool, fresh=True)

    @abstractmethod
    def taken_back(self, tick: int, pool: int) -> None:
        """The job's instance in ``pool`` was taken back at ``tick``: a run ended there, seen
        up or not (an instance lost within a tick of landing ran while the job saw it down)."""

    @abstractmethod
    def spot_share(self, changeover_ticks: int, horizon_ticks: float | None = None) -> float:
        """Forecast share of the coming ``horizon_ticks`` (None: the next few) that some pool's
        spot can work."""

    def outage_overdue(
        self, slack_ticks: float, horizon_ticks: float, changeover_ticks: float
    ) -> bool | None:
        """Whether the outage under way (no pool up) has lasted longer than an idle job may
        wait one out if ``slack_ticks`` are to last the ``horizon_ticks`` left, each outage
        that outlasts the wait costing two changeovers; None without a model of outages."""
        return None

    def copy(self) -> RiskForecaster:
        """A copy that updates apart from this one (a forecast fitted once, for many jobs)."""
        return copy.deepcopy(self)

    def hazard(self, pool: int) -> float:
        """Preemptions per tick of ``pool`` now."""
        return 1.0 / max(self.expected_run(pool), 1.0)

    def p_preempted(self, pool: int, ticks: float) -> float:
        """P(``pool`` is taken back within ``ticks``), with the hazard held constant."""
        return 1.0 - math.exp(-max(ticks, 0.0) * self.hazard(pool))


class SurvivalForecaster(RiskForecaster):
    """The recency-weighted empirical survival model of each pool's availability runs
    (:mod:`spotwise.pricing.forecast.hazard`), shrunk toward "as long again" and the prior."""

    name = "survival"
    pooled = False

    def __init__(self, history: History, config: RiskConfig) -> None:
        super().__init__(config)
        per_tick, reversion = history.hours_per_tick, config.reversion_hours
        self._market = MarketForecast(
            history.past_available,
            config.half_life_hours / per_tick,
            config.prior_weight,
            history.prior,
            per_tick,
            pooled=self.pooled,
            reversion_ticks=reversion / per_tick if reversion else None,
        )

    def update(self, tick: int, belief: np.ndarray, any_up: bool | None = None) -> None:
        """Observe the pools' state at ``tick``."""
        self._market.observe(tick, belief, any_up)

    def copy(self) -> SurvivalForecaster:
        """A copy that updates apart from this one."""
        twin = copy.copy(self)
        twin._market = self._market.copy()
        return twin

    def expected_run(self, pool: int, *, fresh: bool = False) -> float:
        """Expected ticks ``pool`` stays up (a fresh run's mean when ``fresh``)."""
        hazard = self._market.pools
        return hazard.mean_run(pool) if fresh else hazard.expected_remaining(pool)

    def taken_back(self, tick: int, pool: int) -> None:
        """A run of ``pool`` ended at ``tick``: one tick long, if it was never seen up."""
        self._market.pools.run_ended(tick, pool)

    def expected_run_up_within(self, pool: int, ticks: float) -> float:
        """Expected ticks ``pool`` stays up within the next ``ticks``."""
        return self._market.pools.expected_remaining_up_within(pool, ticks)

    def spot_share(self, changeover_ticks: int, horizon_ticks: float | None = None) -> float:
        """The share of time spot is worth holding given the changeover cost."""
        return self._market.spot_share(changeover_ticks, horizon_ticks)

    def outage_overdue(
        self, slack_ticks: float, horizon_ticks: float, changeover_ticks: float
    ) -> bool | None:
        """Whether the outage has outlasted what waiting for it is worth (None: no limit known)."""
        limit = self._market.wait_limit(slack_ticks, horizon_ticks, changeover_ticks)
        return None if limit is None else self._market.outages.age[0] >= limit

    def p_preempted(self, pool: int, ticks: float) -> float:
        """The share of the pool's weighted past runs as old as its current one that ended
        within ``ticks`` more (not a constant hazard: runs here have a falling one)."""
        return self._market.pools.p_end_within(pool, ticks)


class PooledForecaster(SurvivalForecaster):
    """The same survival model with every pool judged by the runs of all of them: the pooled
    prior, updated online, for pools too new to have runs of their own."""

    name = "pooled"
    pooled = True


RISK_FORECASTERS: dict[str, Callable[[History, RiskConfig], RiskForecaster]] = {
    SurvivalForecaster.name: SurvivalForecaster,
    PooledForecaster.name: PooledForecaster,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class RiskConfig:
    """A risk forecaster (by its registered name) and the values it is fitted with.

    Raises:
        KeyError: for a forecaster not registered, naming the registered ones.
    """

    forecaster: str
    half_life_hours: float
    """Hours after which a past run weighs half as much."""
    prior_weight: float
    """Pseudo-runs of "as long again" that the run forecast is shrunk toward."""
    reversion_hours: float
    """How fast the recent spot share reverts to the long-run one (0: it does not)."""
    version: int | None = None
    """The version of a shipped configuration, a new one whenever a value changes; None: a
    variant (a sweep's, a test's), named by its values."""

    def __post_init__(self) -> None:
        if self.forecaster not in RISK_FORECASTERS:
            raise KeyError(
                f"unknown risk forecaster {self.forecaster!r}; known: {sorted(RISK_FORECASTERS)}"
            )

    @property
    def label(self) -> str:
        """What names the forecasts of this configuration: ``survival-v1``, or for a variant
        its values (``survival-h24-w0-r0``)."""
        if self.version is not None:
            return f"{self.forecaster}-v{self.version}"
        values = f"h{self.half_life_hours:g}-w{self.prior_weight:g}-r{self.reversion_hours:g}"
        return f"{self.forecaster}-{values}"

    def variant(self, **values: Any) -> RiskConfig:
        """This configuration with ``values`` (fields) changed: itself where none differs, else
        an unversioned variant."""
        changed = replace(self, **values)
        return self if changed == self else replace(changed, version=None)

    def fit(self, history: History) -> RiskForecaster:
        """The forecaster fitted on ``history`` with these values."""
        return RISK_FORECASTERS[self.forecaster](history, self)


SHIPPED_RISK = RiskConfig(
    forecaster=SurvivalForecaster.name,
    half_life_hours=24.0,
    prior_weight=1.0,
    reversion_hours=12.0,
    version=1,
)
"""The one risk forecast configuration every reader acts on (``risk_aware``'s values: see its
module for how they were chosen). Changing a value is a new version: the label of the forecast
rows moves with it, so rows of an older configuration are never read as this one's."""

"""What a job's past fits: the risk forecast of its pools and the spells of some pool, and of
each pool, being up. Fitted once for every job on the same past (the policy API's requests over
one history), each job updating its own copy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spotwise.policy.policies.slack_budget import SpellBook
from spotwise.pricing.forecast.prior import PoolPrior
from spotwise.pricing.forecast.risk_forecasters import History, RiskConfig, RiskForecaster


@dataclass(frozen=True, slots=True)
class PastFit:
    """A fitted past: the forecast's configuration, the forecast and the spells."""

    config: RiskConfig
    forecast: RiskForecaster
    spells: SpellBook
    pool_spells: tuple[SpellBook, ...]

    @classmethod
    def of(
        cls, past: np.ndarray, hours_per_tick: float, prior: PoolPrior, config: RiskConfig
    ) -> PastFit:
        """Fit ``config`` and the spells on ``past`` (bool [pools, ticks]) and ``prior``."""
        half_life = config.half_life_hours / hours_per_tick
        return cls(
            config=config,
            forecast=config.fit(History(past, hours_per_tick, prior)),
            spells=SpellBook(np.asarray(past.any(axis=0)), half_life, prior, hours_per_tick),
            pool_spells=tuple(
                SpellBook(np.asarray(past[z]), half_life, prior, hours_per_tick)
                for z in range(len(past))
            ),
        )

    def copy(self) -> PastFit:
        """A copy a job may update."""
        return PastFit(
            config=self.config,
            forecast=self.forecast.copy(),
            spells=self.spells.copy(),
            pool_spells=tuple(book.copy() for book in self.pool_spells),
        )

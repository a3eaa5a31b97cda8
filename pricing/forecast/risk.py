"""Preemption-risk models: the probability that a running spot instance is taken back within
the next h minutes, from the pool's availability history (see :mod:`features`).

Every model has ``fit(X, y)`` and ``predict_proba(X) -> p``; :data:`RISK_MODELS` names them.
Most read the pool features (:mod:`features`); ``arima`` reads one column, the AR forecast's
unavailability score (:func:`spotwise.pricing.forecast.arima_risk.ar_unavailability`), as its
``inputs`` says. scikit-learn (and NumPy) come in when a model is fitted, so naming the models
costs nothing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar, Literal

if TYPE_CHECKING:
    import numpy as np


class RiskModel(ABC):
    """A probability of preemption within the horizon, per row of features."""

    name: str
    inputs: ClassVar[Literal["features", "ar_score"]] = "features"
    """What its rows are: the pool features, or the one AR unavailability score."""

    @abstractmethod
    def fit(self, x: np.ndarray, y: np.ndarray) -> RiskModel:
        """Learn from past rows only."""

    @abstractmethod
    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """P(preempted within the horizon) per row."""


class Logistic(RiskModel):
    """Logistic regression on standardised features."""

    name = "logistic"

    def fit(self, x: np.ndarray, y: np.ndarray) -> Logistic:
        """Fit a scaled logistic regression."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        self._model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
        self._model.fit(x, y)
        return self

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """The probability of the positive class per row."""
        return self._model.predict_proba(x)[:, 1]


class CalibratedBoosting(RiskModel):
    """Gradient boosting whose probabilities are calibrated (Platt, cross-validated)."""

    name = "gbm_calibrated"

    def fit(self, x: np.ndarray, y: np.ndarray) -> CalibratedBoosting:
        """Fit calibrated gradient boosting."""
        from sklearn.calibration import CalibratedClassifierCV
        from sklearn.ensemble import HistGradientBoostingClassifier

        booster = HistGradientBoostingClassifier(
            max_iter=100,
            learning_rate=0.05,
            max_depth=3,
            max_leaf_nodes=31,
            l2_regularization=1.0,
            random_state=0,
        )
        self._model = CalibratedClassifierCV(booster, method="sigmoid", cv=3)
        self._model.fit(x, y)
        return self

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """The probability of the positive class per row."""
        return self._model.predict_proba(x)[:, 1]


class ArimaRisk(RiskModel):
    """Parcae-style: the AR forecast's unavailability score, calibrated by a one-feature
    logistic regression."""

    name = "arima"
    inputs = "ar_score"

    def fit(self, x: np.ndarray, y: np.ndarray) -> ArimaRisk:
        """Fit a logistic regression on the ARIMA forecast feature alone."""
        from sklearn.linear_model import LogisticRegression

        self._model = LogisticRegression().fit(x[:, :1], y)
        return self

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """The probability of the positive class per row."""
        return self._model.predict_proba(x[:, :1])[:, 1]


RISK_MODELS: dict[str, type[RiskModel]] = {
    Logistic.name: Logistic,
    CalibratedBoosting.name: CalibratedBoosting,
    ArimaRisk.name: ArimaRisk,
}

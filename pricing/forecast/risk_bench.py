"""The risk backtest: fit before ``test_from``, score every later tick where the pool is up.

Training rows are ticks t whose label window (t, t + h] ends before ``test_from`` (labels
never look past it); test rows are ticks t >= ``test_from`` at which the pool is available and
t + h lies inside the trace. Scores: AUC and Brier per model, the Brier of climatology (the
training base rate) and the AUC of persistence (the share of the last h that was unavailable).

The risk forecasters that decisions read
(:data:`spotwise.pricing.forecast.risk_forecasters.RISK_FORECASTERS`) are scored on the same rows,
fitted on the ticks before ``test_from`` and updated tick by tick as a controller would be;
``/cold`` ones start with no history of their own, from the prior pooled over the training ticks.
The one to ship is the lowest Brier on the last quarter of the training ticks (fitted on the three
quarters before), never on the test ticks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.metrics import brier_score_loss, roc_auc_score

from spotwise.pricing.clouds.aws.advisor import read_advisor_file
from spotwise.pricing.forecast.arima_risk import ar_unavailability
from spotwise.pricing.forecast.features import FEATURES, _trailing_mean, lose_within, pool_features
from spotwise.pricing.forecast.prior import pooled_prior
from spotwise.pricing.forecast.risk import RISK_MODELS
from spotwise.pricing.forecast.risk_forecasters import RISK_FORECASTERS, SHIPPED_RISK, History
from spotwise.pricing.frames import region_of_zone
from spotwise.pricing.sources.traces import cbl_pool, read_cbl_json

_FOLDER_DATE = r"(\d\d)-(\d\d)-(\d{4})$"


def read_trace_folder(folder: Path) -> tuple[np.ndarray, int, pd.Timestamp, list[str]]:
    """Availability [pools, ticks], gap, start (from a folder named like aws-02-15-2023, else
    the epoch) and pool names of a folder of 1-node CBL traces."""
    import re

    files = sorted(folder.glob("*.json"))
    if not files:
        raise ValueError(f"{folder}: no *.json traces here; give a folder of 1-node CBL traces")
    traces = [read_cbl_json(f) for f in files]
    gaps = {t.gap_seconds for t in traces}
    if len(gaps) != 1:
        raise ValueError(f"{folder}: traces have different tick gaps {sorted(gaps)}")
    n = min(len(t.data) for t in traces)
    available = np.stack([t.data[:n] == 0 for t in traces])
    match = re.search(_FOLDER_DATE, folder.name)
    start = (
        pd.Timestamp(f"{match.group(3)}-{match.group(1)}-{match.group(2)}", tz="UTC")
        if match
        else pd.Timestamp(0, tz="UTC")
    )
    return available, gaps.pop(), start, [f.stem for f in files]


def advisor_bands(
    names: Sequence[str], start: pd.Timestamp, snapshots: Sequence[Path]
) -> dict[str, float | None]:
    """Each CBL pool's (``us-east-1a_v100_1``) Linux interruption band in the newest advisor
    snapshot taken on or before ``start`` (a later one would look ahead); None where unknown."""
    frames = [read_advisor_file(path).frames["bands"] for path in snapshots]
    before = [f for f in frames if len(f) and f["observed"].iloc[0] <= start]
    if not before:
        return dict.fromkeys(names)
    frame = max(before, key=lambda f: f["observed"].iloc[0])
    lookup = {(r.region, r.instance_type): float(r.interruption_band) for r in frame.itertuples()}
    bands: dict[str, float | None] = {}
    for name in names:
        zone, instance_type = cbl_pool(name)
        bands[name] = lookup.get((region_of_zone("aws", zone), instance_type))
    return bands


@dataclass(frozen=True, slots=True, kw_only=True)
class RiskBench:
    """Each risk model's AUC and Brier on the test ticks, against climatology and
    persistence."""

    models: dict[str, dict[str, float]]
    forecasters: dict[str, dict[str, float]]
    """The decisions' risk forecasters on the same rows (``/cold``: no history of their own)."""
    forecaster_choice: str
    """The forecaster with the lowest Brier on the last quarter of the training ticks."""
    shipped_forecaster: str
    """The one the policies act on (that of
    :data:`spotwise.pricing.forecast.risk_forecasters.SHIPPED_RISK`)."""
    chosen_per_pool: dict[str, str]
    advisor_bands: dict[str, Any]
    climatology_brier: float
    persistence_auc: float
    n: int
    """Test ticks scored."""
    positive_rate: float
    horizon_ticks: int

    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON-ready values."""
        return asdict(self)


def bench_risk(
    folder: Path,
    *,
    test_from_hours: float,
    horizon_minutes: float,
    models: Sequence[str] = tuple(RISK_MODELS),
    advisor: Sequence[Path] = (),
) -> RiskBench:
    """Backtest the named risk models and ``per_pool_best`` (each pool's model chosen by
    Brier on the last quarter of its training ticks) on a folder of traces; the ``advisor``
    snapshots give the pools' Spot Advisor bands."""
    available, gap, start, names = read_trace_folder(folder)
    bands = advisor_bands(names, start, advisor)
    pools, ticks = available.shape
    horizon = max(1, round(horizon_minutes * 60 / gap))
    cut = _test_cut(test_from_hours, gap, ticks, horizon)
    features = pool_features(available, gap, start, [bands[n] for n in names])
    labels = lose_within(available, horizon)
    tick = features["tick"].to_numpy()
    pool = features["pool"].to_numpy()
    up = available[pool, tick]
    y = labels[pool, tick]
    train = up & (tick + horizon < cut)
    test = up & (tick >= cut) & (tick + horizon < ticks)
    x = features[list(FEATURES)].to_numpy()
    # Per-pool choice: fit on the first 3/4 of the training ticks, judge on the last 1/4.
    early_cut = int(cut * 0.75)
    fit_part = train & (tick + horizon < early_cut)
    judge_part = up & (tick >= early_cut) & (tick + horizon < cut)
    inputs = {"features": (x, x)}
    if any(RISK_MODELS[name].inputs == "ar_score" for name in models):
        inputs["ar_score"] = _ar_scores(available, (cut, early_cut), horizon)
    predictions: dict[str, np.ndarray] = {}
    validation: dict[str, np.ndarray] = {}
    for name in models:
        model = RISK_MODELS[name]
        rows, early_rows = inputs[model.inputs]
        predictions[name] = model().fit(rows[train], y[train]).predict_proba(rows)
        validation[name] = model().fit(early_rows[fit_part], y[fit_part]).predict_proba(early_rows)
    chosen, predictions["per_pool_best"] = _per_pool_best(
        predictions, validation, judge_part, pool, y, names
    )
    hours_per_tick = gap / 3600
    forecast = {
        label: forecast_risk(available, cut, horizon, hours_per_tick, name, cold=cold)
        for label, name, cold in _forecaster_runs()
    }
    forecaster_choice = _best_forecaster(
        available[:, :cut], early_cut, horizon, hours_per_tick, (pool, tick, y, judge_part)
    )
    base_rate = float(y[train].mean())
    past_down = np.stack(
        [_trailing_mean((~available[p]).astype(float), horizon) for p in range(pools)]
    )
    return RiskBench(
        models={name: _scores(y[test], p_all[test]) for name, p_all in predictions.items()},
        forecasters={
            label: _scores(y[test], p[pool[test], tick[test]]) for label, p in forecast.items()
        },
        forecaster_choice=forecaster_choice,
        shipped_forecaster=SHIPPED_RISK.forecaster,
        chosen_per_pool=chosen,
        advisor_bands=bands,
        climatology_brier=round(
            float(brier_score_loss(y[test], np.full(test.sum(), base_rate))), 4
        ),
        persistence_auc=round(float(roc_auc_score(y[test], past_down[pool, tick][test])), 4),
        n=int(test.sum()),
        positive_rate=round(float(y[test].mean()), 4),
        horizon_ticks=horizon,
    )


def _test_cut(test_from_hours: float, gap: float, ticks: int, horizon: int) -> int:
    """The first test tick.

    Raises:
        ValueError: when it leaves no training or no test ticks.
    """
    cut = int(np.ceil(test_from_hours * 3600 / gap - 1e-9))
    if not 0 < cut < ticks - horizon:
        raise ValueError(
            f"--test-from-hours {test_from_hours} leaves no training or no test "
            f"ticks in {ticks * gap / 3600:.0f} h of traces"
        )
    return cut


def _ar_scores(
    available: np.ndarray, ends: tuple[int, int], horizon: int
) -> tuple[np.ndarray, np.ndarray]:
    """The AR unavailability score of every pool and tick, fitted before each of ``ends``."""
    pools = available.shape[0]
    score, early = (
        np.concatenate(
            [ar_unavailability(available[p], end - horizon, horizon) for p in range(pools)]
        )[:, None]
        for end in ends
    )
    return score, early


def _best_forecaster(
    training: np.ndarray,
    early_cut: int,
    horizon: int,
    hours_per_tick: float,
    judged: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> str:
    """The forecaster with the least Brier on the judged rows (``judged``: pool, tick,
    outcome and which rows are judged), each fitted on the training ticks before
    ``early_cut``."""
    pool, tick, y, judge_part = judged
    briers = {
        name: float(
            np.mean(
                (
                    forecast_risk(training, early_cut, horizon, hours_per_tick, name)[
                        pool[judge_part], tick[judge_part]
                    ]
                    - y[judge_part]
                )
                ** 2
            )
        )
        for name in RISK_FORECASTERS
    }
    return min(briers, key=lambda n: briers[n])


def _per_pool_best(
    predictions: dict[str, np.ndarray],
    validation: dict[str, np.ndarray],
    judge_part: np.ndarray,
    pool: np.ndarray,
    y: np.ndarray,
    names: Sequence[str],
) -> tuple[dict[str, str], np.ndarray]:
    """Each pool's model (least Brier on its judged rows) and the predictions it makes."""
    chosen = {}
    best = np.zeros(len(y))
    for p in range(len(names)):
        rows = judge_part & (pool == p)
        briers = {
            name: float(np.mean((v[rows] - y[rows]) ** 2)) if rows.any() else 0.0
            for name, v in validation.items()
        }
        chosen[names[p]] = min(briers, key=lambda n: briers[n])
        best[pool == p] = predictions[chosen[names[p]]][pool == p]
    return chosen, best


def _scores(y: np.ndarray, p: np.ndarray) -> dict[str, float]:
    """AUC and Brier score of predictions ``p`` of outcomes ``y``."""
    return {
        "auc": round(float(roc_auc_score(y, p)), 4),
        "brier": round(float(brier_score_loss(y, p)), 4),
    }


def _forecaster_runs() -> list[tuple[str, str, bool]]:
    """(label, forecaster, cold) of every scored run: each forecaster with history, and cold."""
    return [
        (f"{name}/cold" if cold else name, name, cold)
        for name in RISK_FORECASTERS
        for cold in (False, True)
    ]


def forecast_risk(
    available: np.ndarray,
    first: int,
    horizon: int,
    hours_per_tick: float,
    name: str,
    *,
    cold: bool = False,
) -> np.ndarray:
    """P(preempted within ``horizon`` ticks) [pools, ticks] from forecaster ``name`` with the
    shipped configuration's values: fitted on the ticks before ``first`` (``cold``: on none, from
    their pooled prior), then updated with each tick from ``first`` on and asked after it; NaN
    before ``first``."""
    pools, ticks = available.shape
    past = available[:, :first]
    history = History(past, hours_per_tick)
    if cold:
        prior = pooled_prior(past, hours_per_tick, "pooled over the training ticks of every pool")
        history = History(past[:, :0], hours_per_tick, prior)
    forecaster = SHIPPED_RISK.variant(forecaster=name).fit(history)
    out = np.full((pools, ticks), np.nan)
    for t in range(first, ticks):
        forecaster.update(t - first, available[:, t])
        for z in np.flatnonzero(available[:, t]):
            out[z, t] = forecaster.p_preempted(int(z), horizon)
    return out

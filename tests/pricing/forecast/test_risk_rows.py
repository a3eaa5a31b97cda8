"""The risk rows of the forecasts table are read in one place: the newest row of the shipped
configuration's label, never one an older configuration wrote."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from spotwise.pricing.forecast.risk_rows import RISK_MODEL, latest_mtbf_hours
from spotwise.pricing.operational import open_operational
from spotwise.pricing.views import risk_forecasts

POOL = "aws:us-east-1a:p3.2xlarge:spot"


def row(pool: str, model: str, mean: float, created: str) -> dict[str, object]:
    return {
        "unique_id": pool,
        "ds": pd.Timestamp("2026-01-01", tz="UTC"),
        "model": model,
        "horizon": 60,
        "mean": mean,
        "lo": None,
        "hi": None,
        "level": None,
        "p_preempt": 0.25,
        "created_at": pd.Timestamp(created, tz="UTC"),
    }


def test_the_mtbf_is_the_newest_row_of_the_shipped_label(tmp_path: Path) -> None:
    assert RISK_MODEL == "risk-survival-v1"
    with open_operational(tmp_path / "market.duckdb") as store:
        assert latest_mtbf_hours(store, POOL) is None
        older_label = row(POOL, "risk-survival", 9.0, "2026-01-03")
        store.replace_forecasts(
            pd.DataFrame([older_label, row(POOL, RISK_MODEL, 2.5, "2026-01-02")])
        )
        assert latest_mtbf_hours(store, POOL) == 2.5
        assert list(risk_forecasts(store)["model"]) == [RISK_MODEL]  # the dashboard's too
        store.replace_forecasts(pd.DataFrame([row(POOL, RISK_MODEL, 0.0, "2026-01-04")]))
        assert latest_mtbf_hours(store, POOL) is None  # no run to speak of: no MTBF
        assert latest_mtbf_hours(store, "aws:us-east-1b:p3.2xlarge:spot") is None

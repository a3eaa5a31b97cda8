"""The checkpoint interval at run time: Young/Daly from the measured stall and the pool's MTBF."""

from __future__ import annotations

from pathlib import Path

import pytest

from spotwise.executor.training.interval import checkpoint_interval_s
from spotwise.pricing.forecast.risk_rows import RISK_MODEL


def test_interval_is_daly_from_the_measured_stall_and_never_below_a_persist() -> None:
    assert checkpoint_interval_s(stall_s=None, persist_s=None, mtbf_s=None) == 60.0
    short = checkpoint_interval_s(stall_s=0.5, persist_s=0.1, mtbf_s=3600)
    assert short == pytest.approx(60.0, rel=0.05)  # sqrt(2 · 0.5 · 3600) = 60
    assert checkpoint_interval_s(stall_s=0.001, persist_s=9.0, mtbf_s=3600) == 9.0


def test_mtbf_comes_from_the_pools_risk_forecast(tmp_path: Path) -> None:
    import pandas as pd

    from spotwise.executor.training.interval import forecast_mtbf_s
    from spotwise.pricing.operational import open_operational

    store = tmp_path / "market.duckdb"
    assert forecast_mtbf_s(str(store), "aws:us-east-1a:p3.2xlarge:spot") is None
    with open_operational(store) as market:
        market.replace_forecasts(
            pd.DataFrame(
                [
                    {
                        "unique_id": "aws:us-east-1a:p3.2xlarge:spot",
                        "ds": pd.Timestamp.now(tz="UTC"),
                        "model": RISK_MODEL,
                        "horizon": 60,
                        "mean": 2.5,
                        "lo": None,
                        "hi": None,
                        "level": None,
                        "p_preempt": 0.33,
                        "created_at": pd.Timestamp.now(tz="UTC"),
                    }
                ]
            )
        )
    assert forecast_mtbf_s(str(store), "aws:us-east-1a:p3.2xlarge:spot") == 2.5 * 3600
    assert forecast_mtbf_s(str(store), "aws:us-east-1b:p3.2xlarge:spot") is None

"""The risk backtest (`spotwise bench risk`) and the advisor bands it reads."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from spotwise.pricing.forecast.features import pool_features
from spotwise.pricing.forecast.risk_bench import advisor_bands
from spotwise.pricing.forecast.risk_forecasters import RISK_FORECASTERS, SHIPPED_RISK
from tests.conftest import CliRun


@pytest.fixture
def cli(cli_in_process: CliRun) -> CliRun:
    """Commands whose arguments, messages and output are under test run in process."""
    return cli_in_process


@pytest.mark.slow
def test_bench_risk_beats_climatology_and_persistence_on_bundled_traces(cli: CliRun) -> None:
    result = cli("bench", "risk", "--test-from-hours", "480", "--horizon-minutes", "60", "--json")
    assert result.returncode == 0, result.stderr
    scores = json.loads(result.stdout)
    assert set(scores) >= {"models", "climatology_brier", "persistence_auc", "n"}
    best_auc = max(m["auc"] for m in scores["models"].values())
    best_brier = min(m["brier"] for m in scores["models"].values())
    assert best_auc > scores["persistence_auc"] + 0.03
    assert best_brier < scores["climatology_brier"] - 0.05
    assert scores["n"] > 5000
    # the forecasters the decisions read are scored on the same rows, with history and cold
    forecasters = scores["forecasters"]
    assert set(forecasters) == {f"{n}{c}" for n in RISK_FORECASTERS for c in ("", "/cold")}
    assert forecasters[SHIPPED_RISK.forecaster]["brier"] < scores["climatology_brier"] - 0.05
    assert forecasters[SHIPPED_RISK.forecaster]["auc"] > scores["persistence_auc"]
    assert scores["forecaster_choice"] in RISK_FORECASTERS
    assert scores["shipped_forecaster"] == SHIPPED_RISK.forecaster


def test_bench_risk_rejects_a_test_start_past_the_traces(cli: CliRun) -> None:
    result = cli("bench", "risk", "--test-from-hours", "5000")
    assert result.returncode != 0 and "no training or no test" in result.stderr


def test_advisor_bands_come_from_the_newest_snapshot_before_the_traces(tmp_path: Path) -> None:
    def snapshot(day: str, east: int, west: int) -> Path:
        doc = {
            "spot_advisor": {
                "us-east-1": {"Linux": {"p3.2xlarge": {"r": east, "s": 70}}},
                "us-west-2": {"Linux": {"p3.2xlarge": {"r": west, "s": 60}}},
            }
        }
        path = tmp_path / f"spot-advisor-data_{day}.json"
        path.write_text(json.dumps(doc))
        return path

    files = [
        snapshot("2022-01-01", 0, 1),
        snapshot("2023-01-01", 1, 3),
        snapshot("2024-01-01", 4, 4),
    ]
    names = ["us-east-1a_v100_1", "us-west-2b_v100_1", "us-east-2a_v100_1", "us-east-1a_k80_1"]
    bands = advisor_bands(names, pd.Timestamp("2023-02-15", tz="UTC"), files)
    # 2023-01-01 is the newest before the traces; 2024 would look ahead; unknown pools: None
    assert bands == {names[0]: 1.0, names[1]: 3.0, names[2]: None, names[3]: None}
    features = pool_features(
        np.ones((4, 3), dtype=bool), 195, pd.Timestamp("2023-02-15", tz="UTC"), list(bands.values())
    )
    assert features.groupby("pool")["advisor_band"].first().tolist() == [1.0, 3.0, 2.0, 2.0]
    assert advisor_bands(names, pd.Timestamp("2021-06-01", tz="UTC"), files) == dict.fromkeys(names)


def test_bench_risk_names_a_missing_or_wrong_advisor_file(cli: CliRun, tmp_path: Path) -> None:
    missing = cli("bench", "risk", "--advisor", str(tmp_path / "spot-advisor-data_2022-01-01.json"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    wrong = tmp_path / "spot-advisor-data_2022-01-01.json"
    wrong.write_text('{"regions": []}')
    result = cli("bench", "risk", "--advisor", str(wrong), "--json")
    assert result.returncode == 1 and result.stdout == ""
    assert "not a Spot Advisor document" in result.stderr

"""`spotwise forecast run` writes forecasts; `spotwise forecast schedule` survives a failure."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from pricing.store import MarketStore
from tests.conftest import DATA, CliRun


def test_forecast_run_writes_price_and_risk_forecasts_and_replaces_them(
    cli: CliRun, store_file: Path
) -> None:
    loaded = cli(
        "data",
        "load",
        str(DATA / "prices/aws_spot_price_history_2019-12_2020-01.csv"),
        str(DATA / "traces/cbl/availability/1-node/aws-02-15-2023"),
    )
    assert loaded.returncode == 0, loaded.stderr
    first = cli("forecast", "run", "--horizon-hours", "6")
    assert first.returncode == 0, first.stderr
    with MarketStore.open(store_file, read_only=True) as market:
        models = market.query(
            "SELECT model, count(*) AS n, count(DISTINCT unique_id) AS series "
            "FROM forecasts GROUP BY model ORDER BY model"
        )
        risk = market.query("SELECT * FROM forecasts WHERE model = 'risk-logistic'")
        before = market.summary()["tables"]["forecasts"]
    assert dict(zip(models["model"], models["series"], strict=True)) == {
        "ARIMA": 98,
        "GBM": 98,
        "Naive": 98,
        "risk-logistic": 9,
    }
    assert (models["n"][models["model"] == "Naive"] == 98 * 6).all()
    assert risk["p_preempt"].between(0, 1).all() and (risk["mean"] >= 0).all()
    assert cli("forecast", "run", "--horizon-hours", "6").returncode == 0
    with MarketStore.open(store_file, read_only=True) as market:
        assert market.summary()["tables"]["forecasts"] == before


def test_schedule_survives_a_failing_run_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    blocker = tmp_path / "store"
    blocker.write_text("not a folder")  # the first run cannot open the store
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "spotwise",
            "forecast",
            "schedule",
            "--every",
            "1s",
            "--store",
            str(blocker / "market.duckdb"),
        ],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert process.stderr is not None
    lines: list[str] = []
    deadline = time.monotonic() + 60
    for line in process.stderr:
        lines.append(line)
        if "run 1 failed" in line:
            blocker.unlink()
            blocker.mkdir()
        if "ok:" in line or time.monotonic() > deadline:
            break
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=30)
    text = "".join(lines)
    assert "run 1 failed" in text and "cannot open the store" in text
    assert "ok: 0 forecast rows" in text
    assert process.returncode == 0

"""`spotwise forecast run` writes forecasts; `spotwise forecast schedule` survives a failure."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from spotwise.pricing.forecast.risk_rows import RISK_MODEL
from spotwise.pricing.operational import open_operational
from spotwise.pricing.store import MarketStore
from tests.conftest import DATA, CliRun, hold_store
from tests.pricing.conftest import unused_url
from tests.pricing.ec2_endpoint import PriceHistoryEndpoint


@pytest.mark.e2e  # 18-27 s of a worker: in make test-e2e (CI), to keep make test under 10 min
@pytest.mark.slow
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
    with open_operational(store_file, read_only=True) as market:
        models = market.query(
            "SELECT model, count(*) AS n, count(DISTINCT unique_id) AS series "
            "FROM forecasts GROUP BY model ORDER BY model"
        )
        risk = market.query("SELECT * FROM forecasts WHERE model = ?", [RISK_MODEL])
        before = market.records("SELECT count(*) AS n FROM forecasts")
    assert dict(zip(models["model"], models["series"], strict=True)) == {
        "ARIMA": 98,
        "GBM": 98,
        "Naive": 98,
        RISK_MODEL: 9,
    }
    assert (models["n"][models["model"] == "Naive"] == 98 * 6).all()
    assert risk["p_preempt"].between(0, 1).all() and (risk["mean"] >= 0).all()
    assert cli("forecast", "run", "--horizon-hours", "6").returncode == 0
    with open_operational(store_file, read_only=True) as market:
        assert market.records("SELECT count(*) AS n FROM forecasts") == before


def schedule(store: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "spotwise",
            "forecast",
            "schedule",
            "--every=1s",
            f"--store={store}",
        ],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200", "SPOTWISE_STORE_WAIT_S": "1"},
    )


@pytest.mark.slow
def test_schedule_survives_a_store_held_by_another_process_and_stops_on_sigterm(
    tmp_path: Path,
) -> None:
    store = tmp_path / "market.duckdb"
    MarketStore.open(store).close()
    holder = hold_store(store)
    process = schedule(store)
    assert process.stderr is not None
    lines: list[str] = []
    deadline = time.monotonic() + 60
    try:
        for line in process.stderr:
            lines.append(line)
            if "run 1 failed" in line:
                holder.kill()  # the other process lets go: the next run succeeds
            if "ok:" in line or time.monotonic() > deadline:
                break
    finally:
        holder.kill()
        holder.wait()
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=30)
    text = "".join(lines)
    assert "run 1 failed" in text and "in use by another process" in text
    assert "ok: 0 forecast rows" in text
    assert process.returncode == 0


@pytest.mark.slow
def test_schedule_stops_after_the_first_run_on_an_error_that_cannot_heal(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "store"
    blocker.write_text("not a folder")
    process = schedule(blocker / "market.duckdb")
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 1
    assert "will not heal" in stderr and "run 2" not in stderr
    assert "another process" not in stderr and "Close other" not in stderr


def test_store_open_errors_say_whether_waiting_can_help(tmp_path: Path) -> None:
    from spotwise.pricing.errors import StoreError
    from spotwise.pricing.store import _open_error

    not_a_store = tmp_path / "notes.duckdb"
    not_a_store.write_text("just text")
    with pytest.raises(StoreError) as refused:
        MarketStore.open(not_a_store)
    assert refused.value.permanent and "Is it a Spotwise store" in str(refused.value)
    denied = _open_error(tmp_path / "m.duckdb", PermissionError(13, "Permission denied"))
    assert denied.permanent and "permission denied" in str(denied)
    assert "another process" not in str(denied)


class CountedSteps:
    """Steps a test can read back."""

    def __init__(self) -> None:
        self.expected = self.done = 0

    def expect(self, n: int) -> None:
        self.expected += n

    def advance(self, n: int = 1) -> None:
        self.done += n
        assert self.done <= self.expected  # never past what was announced


def test_price_forecasts_count_every_series_and_model_for_a_progress_bar() -> None:
    import pandas as pd

    from spotwise.pricing.clouds.aws.spot_prices import read_price_history_csv
    from spotwise.pricing.forecast.run import price_forecasts

    parsed = read_price_history_csv(DATA / "prices/aws_spot_price_history_2019-12_2020-01.csv")
    prices = parsed.frames["prices"]
    few = sorted(set(prices["zone"]))[:2]  # a few series keep the test fast
    prices = prices[prices["zone"].isin(few)].reset_index(drop=True)
    steps, lines = CountedSteps(), list[str]()
    _, n_series, _ = price_forecasts(
        prices,
        horizon_hours=6,
        level=90,
        created=pd.Timestamp.now(tz="UTC"),
        progress=lines.append,
        steps=steps,
    )
    assert steps.expected == steps.done >= 2 * n_series > 0  # the last value and ARIMA at least
    assert lines and all("hourly" in line for line in lines)


@pytest.mark.slow
def test_a_collected_source_with_too_little_history_is_left_out_named_and_removable(
    cli: CliRun, us_east_1_history, store_file: Path
) -> None:
    """`collect aws` of one price point, then `forecast run`: the short series are
    named and left out (no traceback), and `data remove --source` drops them."""
    few = us_east_1_history[us_east_1_history["instance_type"] == "p3.2xlarge"]
    few = few.sort_values("timestamp").tail(1)  # one price: a grid of one point
    endpoint = PriceHistoryEndpoint(few)
    try:
        collected = cli(
            "collect", "aws", "--region", "us-east-1", "--endpoint-url", endpoint.url,
            "--instance-types", "p3.2xlarge", "--advisor-url", unused_url(),
            "--since", "2019-12-01T00:00:00Z",
        )  # fmt: skip
    finally:
        endpoint.close()
    assert collected.returncode == 0, collected.stderr
    forecast = cli("forecast", "run", "--horizon-hours", "3")
    assert forecast.returncode == 0, forecast.stderr
    assert "Traceback" not in forecast.stderr
    assert f"left out {len(few)} price series with fewer than 3 points" in forecast.stderr
    with MarketStore.open(store_file, read_only=True) as market:
        sources = set(market.summary().sources)
    (source,) = sources
    removed = cli("data", "remove", "--source", source)
    assert removed.returncode == 0, removed.stderr
    assert f"removed {source}: {len(few)} prices rows" in removed.stderr
    with MarketStore.open(store_file, read_only=True) as market:
        assert market.summary().tables["prices"] == 0
    unknown = cli("data", "remove", "--source", source)
    assert unknown.returncode == 1 and "holds no source" in unknown.stderr


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs, mounted for this test only (skipped where mounting is not allowed)."""
    folder = tmp_path / "disk"
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.mark.slow
def test_a_load_onto_a_full_disk_is_one_clear_error_and_the_store_keeps_what_it_held(
    cli: CliRun, small_disk: Path
) -> None:
    store = small_disk / "market.duckdb"
    env = {"SPOTWISE_STORE": str(store)}
    assert cli("data", "load", str(DATA / "traces/bamboo"), env=env).returncode == 0
    before = json.loads(cli("data", "summary", "--json", env=env).stdout)
    full = cli("data", "load", str(DATA / "prices"), env=env)
    assert full.returncode == 1
    assert "No space left on device" in full.stderr and "nothing was stored" in full.stderr
    assert "Free space on its disk" in full.stderr and "Traceback" not in full.stderr
    after = json.loads(cli("data", "summary", "--json", env=env).stdout)
    assert after["tables"] == before["tables"] and after["tables"]["events"] > 0


@pytest.mark.slow
def test_schedule_on_a_read_only_disk_stops_at_once_saying_so(
    cli: CliRun, small_disk: Path
) -> None:
    store = small_disk / "market.duckdb"
    assert cli("data", "load", str(DATA / "traces/parcae"), f"--store={store}").returncode == 0
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    process = schedule(store)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 1
    assert "its disk is read-only" in stderr and "will not heal" in stderr
    assert "run 2" not in stderr and "Traceback" not in stderr

"""`collect aws` on a new account, then `forecast run`, then `forecast schedule` for two
cycles: a source with too little history is named and left out, never a traceback, and the
schedule keeps collecting and forecasting."""

from __future__ import annotations

import signal
import time

import pandas as pd
import pytest

from tests.journeys.conftest import Stranger
from tests.pricing.conftest import unused_url
from tests.pricing.ec2_endpoint import PriceHistoryEndpoint


@pytest.mark.slow
def test_collect_then_forecast_then_two_scheduled_cycles(
    stranger: Stranger, us_east_1_history: pd.DataFrame
) -> None:
    rows = us_east_1_history[us_east_1_history["instance_type"] == "p3.2xlarge"]
    rows = rows.sort_values("timestamp")
    newest_zone = rows["availability_zone"].iloc[-1]
    # a long history in two zones, and a single price in a third: too little to forecast
    longer = sorted(set(rows["availability_zone"]) - {newest_zone})[:2]
    rows = pd.concat([rows[rows["availability_zone"].isin(longer)], rows.tail(1)])
    endpoint = PriceHistoryEndpoint(rows)
    aws = {"AWS_ENDPOINT_URL_EC2": endpoint.url}
    try:
        collected = stranger.spotwise(
            "collect", "aws", "--region", "us-east-1", "--instance-types", "p3.2xlarge",
            "--advisor-url", unused_url(), "--since", "2019-12-01T00:00:00Z", env=aws,
        )  # fmt: skip
        assert collected.returncode == 0, collected.stderr
        forecast = stranger.spotwise("forecast", "run", "--horizon-hours", "3")
        assert forecast.returncode == 0 and "Traceback" not in forecast.stderr, forecast.stderr
        assert "wrote" in forecast.stderr and "forecast rows" in forecast.stderr
        assert "left out 1 price series" in forecast.stderr and newest_zone in forecast.stderr
        schedule = stranger.start(
            "forecast", "schedule", "--every", "2s", "--collect", "aws:us-east-1",
            "--horizon-hours", "3", env=aws,
        )  # fmt: skip
        assert schedule.stderr is not None
        seen: list[str] = []
        deadline = time.monotonic() + 240
        try:
            for line in schedule.stderr:
                seen.append(line)
                if "run 2 ok" in line or "failed" in line or time.monotonic() > deadline:
                    break
        finally:
            schedule.send_signal(signal.SIGTERM)
            _, rest = schedule.communicate(timeout=60)
    finally:
        endpoint.close()
    text = "".join(seen) + rest
    assert "run 1 ok" in text and "run 2 ok" in text, text[-3000:]
    assert "left out 1 price series" in text and "failed" not in text
    assert schedule.returncode == 0, text[-2000:]

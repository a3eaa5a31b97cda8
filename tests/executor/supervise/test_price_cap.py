"""Bids are real: a capped spot instance whose stored price forecast crosses its cap before its
next checkpoint moves first (a checkpoint, then a relaunch elsewhere); one whose forecast stays
under the cap runs on. Real subprocess jobs, a real store holding the forecasts and the ledger."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from spotwise.executor.errors import ExecutorError
from spotwise.executor.launchers.base import Placement
from spotwise.executor.launchers.local import Replay
from spotwise.executor.ledger.ledger import JobInfo, Ledger, job_report
from spotwise.executor.ledger.prices import PriceBook
from spotwise.executor.supervise.price_cap import StoredPriceForecasts, first_crossing
from spotwise.executor.supervise.supervisor import (
    RunReport,
    Supervisor,
    SupervisorConfig,
    checkpoint_interval,
)
from spotwise.policy.service.client import PolicyClient, in_process_for
from spotwise.policy.service.schemas import (
    Decision,
    DecisionRequest,
    JobTerms,
    PoolForecast,
    PoolRank,
)
from spotwise.pricing.operational import open_operational
from spotwise.pricing.store import FORECAST_COLUMNS, MarketStore
from tests.conftest import CliRun
from tests.executor.supervise.test_supervisor import FAKE_JOB, GAP, PAST, SCALE, job, market

BID = 0.9
INSTANCE_TYPE = "p3.2xlarge"


class Bidding:
    """The policy's own in-process client, its spot decisions carrying ``bid`` (today's
    policies bid nothing: this is the policy with a bid)."""

    def __init__(self, client: PolicyClient, bid: float) -> None:
        self.client, self.bid = client, bid

    def decide(self, request: DecisionRequest) -> Decision:
        decision = self.client.decide(request)
        if decision.action != "spot":
            return decision
        return decision.model_copy(update={"bid": self.bid})

    def rank_pools(self, job: JobTerms) -> list[PoolRank]:
        return self.client.rank_pools(job)

    def forecast(self, pool: str) -> PoolForecast:
        return self.client.forecast(pool)


def bidding_for(history: np.ndarray, gap: int, pools: tuple[str, ...]) -> PolicyClient:
    return Bidding(in_process_for(history, gap, pools), BID)


def store_forecast(store: Path, pool: str, steps: list[tuple[float, float]]) -> None:
    """Write an ARIMA forecast of ``pool``'s spot price: (epoch seconds, USD/h) per step."""
    created = pd.Timestamp.now(tz="UTC")
    frame = pd.DataFrame(
        {
            "unique_id": f"aws:{pool}:{INSTANCE_TYPE}:spot",
            "ds": [pd.Timestamp(t, unit="s", tz="UTC") for t, _ in steps],
            "model": "ARIMA",
            "horizon": list(range(1, len(steps) + 1)),
            "mean": [p for _, p in steps],
            "lo": [p * 0.9 for _, p in steps],
            "hi": [p * 1.1 for _, p in steps],
            "level": 80.0,
            "p_preempt": np.nan,
            "created_at": created,
        }
    )
    with MarketStore.open(store) as market_store:
        market_store.replace_forecasts(frame.loc[:, list(FORECAST_COLUMNS)])


def run_capped(tmp_path: Path, work_s: float) -> tuple[RunReport, Ledger, Path]:
    """A fake job on two always-up pools, its spot decisions bidding :data:`BID`, watched
    against the forecasts stored in ``tmp_path``'s store."""
    store = tmp_path / "store.duckdb"
    traces = market("1" * 60, "1" * 60)
    terms = job(work_s)
    ledger = Ledger(
        store,
        JobInfo(
            name="fake",
            command="fake_job",
            launcher="local",
            compute_hours=terms.compute_hours,
            deadline_hours=terms.deadline_hours,
            on_demand_price=terms.on_demand_price,
            simulated=True,
            prices=PriceBook.flat(traces.names, terms.spot_price, terms.on_demand_price),
        ),
    )
    supervisor = Supervisor(
        Replay(traces=traces, start_hours=PAST * GAP / 3600, scale=SCALE).launcher(),
        bidding_for,
        SupervisorConfig(job=terms, lead_s=0.4, grace_s=2.0, move_check_s=None, price_check_s=0.5),
        ledger,
        outlook=StoredPriceForecasts(store, provider="aws", instance_type=INSTANCE_TYPE),
    )
    command = [sys.executable, str(FAKE_JOB), "--work-s", str(work_s)]
    report = supervisor.run([*command, "--state", str(tmp_path / "progress")])
    return report, ledger, store


@pytest.mark.slow
def test_a_job_moves_with_its_checkpoint_before_its_price_crosses_the_bid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # its guard checkpoints every 2 s (run --checkpoint-minutes): the next interval and one
    # read (0.5 s) reach the crossing 2.5 s before it, some seconds into the job's work
    monkeypatch.setenv("SPOTWISE_CHECKPOINT_S", "2")
    now = time.time()
    crossing_at = now + 12.0
    store_forecast(tmp_path / "store.duckdb", "z0", [(now - 600, 0.5), (crossing_at, 1.4)])
    store_forecast(tmp_path / "store.duckdb", "z1", [(now - 600, 0.5), (now + 3600, 0.6)])
    report, ledger, store = run_capped(tmp_path, work_s=12.0)
    assert report.completed
    assert (report.migrations, report.preemptions) == (1, 0)
    assert report.placements == ["spot in z0", "spot in z1"]
    # z0's instance saved its progress and left before the forecast crossing; z1's resumed it
    saved = [e for e in report.events if e.get("event") == "preempted"]
    resumed = [e for e in report.events if e.get("event") == "resumed"]
    assert len(saved) == 1 and crossing_at - 3.5 <= float(str(saved[0]["t"])) < crossing_at
    saved_step = int(str(saved[0]["step"]))
    assert len(resumed) == 1 and resumed[0]["step"] == saved_step and saved_step > 0
    assert report.lost_hours == 0.0
    with open_operational(store) as market_store:
        assert job_report(market_store, ledger.job_id).migrations == 1
        details = market_store.query(
            "SELECT detail FROM ledger WHERE job_id = ? AND kind = 'migration'", [ledger.job_id]
        )["detail"].tolist()
    assert len(details) == 1 and "above the $0.9000/h cap" in details[0]


@pytest.mark.slow
def test_a_job_whose_forecast_stays_under_the_bid_in_its_next_interval_runs_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SPOTWISE_CHECKPOINT_S", raising=False)  # the guard's 60 s
    now = time.time()
    # under the bid now and through the next checkpoint interval; above it only in 3 hours
    steps = [(now - 600, 0.5), (now + 1800, 0.85), (now + 3 * 3600, 1.4)]
    store_forecast(tmp_path / "store.duckdb", "z0", steps)
    store_forecast(tmp_path / "store.duckdb", "z1", steps)
    report, ledger, store = run_capped(tmp_path, work_s=3.0)
    assert report.completed
    assert (report.migrations, report.preemptions, report.instances) == (0, 0, 1)
    with open_operational(store) as market_store:
        assert job_report(market_store, ledger.job_id).migrations == 0


def test_the_step_in_effect_counts_and_a_step_past_the_window_does_not() -> None:
    steps = pd.DataFrame(
        {"ds": [0.0, 100.0, 200.0], "mean": [1.0, 0.5, 2.0], "model": ["ARIMA"] * 3}
    )
    # the step begun at 0 is already above the cap at 50: crossing now
    now_above = first_crossing(steps, "z0", cap=0.8, start=50.0, end=150.0)
    assert now_above is not None and (now_above.at, now_above.price) == (50.0, 1.0)
    # from 100 the price is under the cap until 200, past a window ending at 150
    assert first_crossing(steps, "z0", cap=0.8, start=120.0, end=150.0) is None
    later = first_crossing(steps, "z0", cap=0.8, start=120.0, end=250.0)
    assert later is not None and (later.at, later.price) == (200.0, 2.0)


def test_the_window_is_the_guards_last_said_interval() -> None:
    assert checkpoint_interval([]) == 60.0  # the guard's default before it measures a save
    assert checkpoint_interval([], given_s=450.0) == 450.0  # run --checkpoint-minutes 7.5
    assert checkpoint_interval([{"event": "fresh", "interval_s": 300.0}], 450.0) == 300.0


def test_no_store_or_no_forecast_is_no_crossing(tmp_path: Path) -> None:
    outlook = StoredPriceForecasts(
        tmp_path / "absent.duckdb", provider="aws", instance_type=INSTANCE_TYPE
    )
    assert outlook.crossing("us-east-1a", 0.1, time.time(), time.time() + 60) is None
    store = tmp_path / "store.duckdb"
    store_forecast(store, "us-east-1a", [(time.time(), 5.0)])
    outlook = StoredPriceForecasts(store, provider="aws", instance_type=INSTANCE_TYPE)
    assert outlook.crossing("us-east-1b", 0.1, time.time(), time.time() + 60) is None
    assert outlook.series("us-east-1a_v100_1") == (
        "aws:us-east-1a:p3.2xlarge:spot",
        "aws:us-east-1:p3.2xlarge:spot",
    )


def test_the_supervisor_run_builds_is_capped_by_its_max_price(
    cli_in_process: CliRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``spotwise run --max-price`` caps the supervisor's spot instances as it caps the cloud's
    bid: the price forecast is watched against it with no bid, and against a lower bid."""
    caps: list[float | None] = []

    def stop_before_launching(self: Supervisor, command: list[str]) -> RunReport:
        for bid in (None, 0.9, 0.6):
            caps.append(self._cap(Placement(market="spot", pool="z0", price=0.5, bid=bid)))
        raise ExecutorError("stopped before launching")

    monkeypatch.setattr(Supervisor, "run", stop_before_launching)
    pools = ("--pools", "us-east-1a_v100_1")
    for cap in ((), ("--max-price", "0.7")):
        result = cli_in_process("run", *pools, *cap, "--", "true")
        assert result.returncode == 1 and "stopped before launching" in result.stderr
    assert caps == [None, 0.9, 0.6, 0.7, 0.7, 0.6]  # the bid alone, then never above 0.7

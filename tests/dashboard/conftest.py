"""A store with real bundled data, fresh forecasts, a policy bench result and a ledger job."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from spotwise.executor.ledger import EntryKind, JobInfo, JobStatus, Ledger
from spotwise.executor.prices import PriceBook
from spotwise.policy.bench import run_bench, save_summary
from spotwise.policy.job import REFERENCE
from spotwise.policy.traces import load_traces
from spotwise.pricing.forecast.run import run_forecasts
from spotwise.pricing.ingest import load_paths
from spotwise.pricing.store import MarketStore
from tests.conftest import DATA

TRACES = DATA / "traces/cbl/availability/1-node/aws-02-15-2023"


@pytest.fixture(scope="session")
def filled_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("dashboard") / "market.duckdb"
    with MarketStore.open(path) as store:
        load_paths(
            store,
            [
                DATA / "prices/aws_spot_price_history_2019-12_2020-01.csv",
                DATA / "prices/gcp_spot_ondemand_changepoints.csv",
                TRACES,
                DATA / "advisor/spot-advisor-data_2025-06-28.json",
            ],
        )
    run_forecasts(path)
    spec = REFERENCE
    run = run_bench(
        load_traces(TRACES),
        spec,
        zones="multi",
        policies=["greedy", "best", "omniscient"],
        test_from_hours=480,
        start_every_hours=24,
    )
    save_summary(run.summary(), path.parent)
    ledger = Ledger(
        path,
        JobInfo(
            name="train",
            command="python train.py",
            launcher="local",
            compute_hours=2,
            deadline_hours=3,
            on_demand_price=3.06,
            simulated=True,
            prices=PriceBook.flat(("z1",), 0.9, 3.06).to_dict(),
        ),
    )
    spot = {"pool": "z1", "market": "spot", "price": 0.9, "on_demand_price": 3.06}
    ledger.record(EntryKind.INSTANCE, hours=1.5, cost_usd=1.35, **spot)  # type: ignore[arg-type]
    ledger.record(EntryKind.PREEMPTION, pool="z1", market="spot")
    ledger.record(
        EntryKind.INSTANCE,
        market="on-demand",
        hours=0.6,
        price=3.06,
        cost_usd=1.836,
        on_demand_price=3.06,
    )
    ledger.finish(JobStatus.COMPLETED)
    return path


@pytest.fixture
def use_store(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Path], None]]:
    def use(path: Path) -> None:
        monkeypatch.setenv("SPOTWISE_STORE", str(path))

    yield use

"""A store with real bundled data, fresh forecasts, a policy bench result and a ledger job."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from spotwise.executor.ledger.ledger import EntryKind, JobInfo, JobStatus, Ledger
from spotwise.executor.ledger.prices import PriceBook
from spotwise.policy.job import REFERENCE
from spotwise.policy.lab.bench import run_bench, save_summary
from spotwise.policy.traces import load_traces
from spotwise.pricing.forecast.run import run_forecasts
from spotwise.pricing.ingest import load_paths
from spotwise.pricing.store import MarketStore
from tests.conftest import DATA
from tests.postgres import PostgresServer

TRACES = DATA / "traces/cbl/availability/1-node/aws-02-15-2023"


@pytest.fixture(scope="session")
def dashboard_database(request: pytest.FixtureRequest) -> str | None:
    """Under ``--operational-store postgresql``, the database the dashboard store's jobs,
    ledger and forecasts live in (one for the session, as the store file is)."""
    if request.config.getoption("--operational-store") != "postgresql":
        return None
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return server.fresh_database()


@pytest.fixture(autouse=True)
def operational_store(dashboard_database: str | None, monkeypatch: pytest.MonkeyPatch) -> str:
    """The dashboard tests share one store: under PostgreSQL, its database too."""
    if dashboard_database is None:
        monkeypatch.delenv("SPOTWISE_OPERATIONAL_STORE", raising=False)
        return "file"
    monkeypatch.setenv("SPOTWISE_OPERATIONAL_STORE", dashboard_database)
    return dashboard_database


@pytest.fixture(scope="session")
def filled_store(
    tmp_path_factory: pytest.TempPathFactory, dashboard_database: str | None
) -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as patch:
        if dashboard_database is not None:
            patch.setenv("SPOTWISE_OPERATIONAL_STORE", dashboard_database)
        yield _fill(tmp_path_factory.mktemp("dashboard") / "market.duckdb")


def _fill(path: Path) -> Path:
    with MarketStore.open(path) as store:
        load_paths(
            store,
            [
                DATA / "prices/aws_spot_price_history_2019-12_2020-01.csv",
                TRACES,
                DATA / "advisor/spot-advisor-data_2025-06-28.json",
            ],
        )
    run_forecasts(path)
    # GCP's prices come after the forecasts: its 2200 series would double their time, and
    # the pages' tests read forecasts of AWS pools only.
    with MarketStore.open(path) as store:
        load_paths(store, [DATA / "prices/gcp_spot_ondemand_changepoints.csv"])
    spec = REFERENCE
    run = run_bench(
        load_traces(TRACES),
        spec,
        zones="multi",
        policies=["greedy", "best", "omniscient"],
        test_from_hours=480,
        start_every_hours=24,
    )
    save_summary(run.summary(), path)
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
            prices=PriceBook.flat(("z1",), 0.9, 3.06),
            sweep="lr-sweep",
            trial=3,
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


@pytest.fixture
def empty_operational_store(
    dashboard_database: str | None, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No jobs and no forecasts: under PostgreSQL, a fresh database of this test's own."""
    if dashboard_database is not None:
        server: PostgresServer = request.getfixturevalue("postgres_server")
        monkeypatch.setenv("SPOTWISE_OPERATIONAL_STORE", server.fresh_database())

"""The prices a supervised job pays and is compared against: from the store with their source
and time, given by the user, estimated, or a labelled reference; and the ledger's baseline."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from spotwise.executor.launchers.local import Replay
from spotwise.executor.ledger.ledger import JobInfo, Ledger, job_report
from spotwise.executor.ledger.prices import PriceBook, price_book
from spotwise.executor.supervise.supervisor import Supervisor, SupervisorConfig
from spotwise.policy.service.client import in_process_for
from spotwise.pricing.errors import StoreError
from spotwise.pricing.operational import open_operational
from spotwise.pricing.quotes import REFERENCE_SOURCE
from spotwise.pricing.store import MarketStore
from tests.conftest import CliRun
from tests.executor.supervise.test_supervisor import FAKE_JOB, GAP, PAST, SCALE, job, market

POOLS = ("us-east-1a_v100_1", "us-west-2b_v100_1")
# by name: the table may grow a column (a SKU id) these rows have no value for
PRICE_COLUMNS = "(source, provider, region, zone, instance_type, market, ts, price)"


def _price(store: MarketStore, market_: str, region: str, zone: str, price: float, ts: str) -> None:
    store.execute(
        f"INSERT INTO prices {PRICE_COLUMNS} "
        "VALUES ('test-prices', 'aws', ?, ?, 'p3.2xlarge', ?, ?, ?)",
        [region, zone, market_, ts, price],
    )


def _band(store: MarketStore, region: str, saving: float, observed: str) -> None:
    store.execute(
        "INSERT INTO bands VALUES ('test-advisor', 'aws', ?, 'p3.2xlarge', ?, 1, ?)",
        [region, observed, saving],
    )


def test_each_price_comes_from_the_store_with_its_source_and_time(tmp_path: Path) -> None:
    with MarketStore.open(tmp_path / "m.duckdb") as store:
        _price(store, "spot", "us-east-1", "us-east-1a", 0.90, "2024-01-01 00:00:00+00")
        _price(store, "spot", "us-east-1", "us-east-1a", 0.95, "2024-02-01 00:00:00+00")
        _price(store, "on_demand", "us-east-1", "", 3.06, "2024-02-01 00:00:00+00")
        _price(store, "spot", "us-west-2", "us-west-2b", 1.20, "2024-02-01 00:00:00+00")
        _band(store, "us-west-2", 60.0, "2024-03-01 00:00:00+00")
        book = price_book(store, POOLS, instance_type="p3.2xlarge")
    east = book.spot_quote("us-east-1a_v100_1")
    assert east.usd_per_hour == 0.95 and east.as_of and east.as_of.startswith("2024-02-01")
    assert "test-prices" in east.source
    assert book.on_demand_quote("us-east-1a_v100_1").usd_per_hour == 3.06
    # no on-demand price in us-west-2: the same-era Spot Advisor saving turns spot into one
    west = book.on_demand_quote("us-west-2b_v100_1")
    assert west.usd_per_hour == pytest.approx(1.20 / 0.4)
    assert "Spot Advisor saving of 60% in us-west-2" in west.source
    assert book.home_region == "us-east-1"


def test_a_saving_of_another_era_and_an_unknown_type_are_not_used(tmp_path: Path) -> None:
    with MarketStore.open(tmp_path / "m.duckdb") as store:
        _price(store, "spot", "us-west-2", "us-west-2b", 1.20, "2020-01-01 00:00:00+00")
        _band(store, "us-west-2", 60.0, "2025-06-28 00:00:00+00")  # five years later
        book = price_book(store, POOLS[1:], instance_type="p3.2xlarge")
        assert book.on_demand_quote().source == REFERENCE_SOURCE  # labelled, not a quote
        with pytest.raises(ValueError, match=r"no spot price of us-east-1a .* --spot-price"):
            price_book(store, ["us-east-1a"], instance_type="g5.xlarge")
        with pytest.raises(ValueError, match=r"g5\.xlarge in us-east-1 .* --on-demand-price"):
            price_book(store, ["us-east-1a"], instance_type="g5.xlarge", spot_price=0.5)
        given = price_book(
            store, ["us-east-1a"], instance_type="g5.xlarge", spot_price=0.5, on_demand_price=1.0
        )
    assert given.spot_quote("us-east-1a").source == "given with --spot-price"
    assert given.on_demand_quote().source == "given with --on-demand-price"


@pytest.mark.slow
def test_an_on_demand_only_run_saves_nothing(tmp_path: Path) -> None:
    store = tmp_path / "store.duckdb"
    terms = job(2.0)
    book = PriceBook.flat(("z0",), terms.spot_price, terms.on_demand_price)
    ledger = Ledger(
        store,
        JobInfo(
            name="fake",
            command="fake_job",
            launcher="local",
            compute_hours=terms.compute_hours * 10,  # declared far more than it needs
            deadline_hours=terms.deadline_hours,
            on_demand_price=terms.on_demand_price,
            simulated=True,
            prices=book,
        ),
    )
    replay = Replay(traces=market("1" * 60), start_hours=PAST * GAP / 3600, scale=SCALE)
    supervisor = Supervisor(
        replay.launcher(),
        in_process_for,
        SupervisorConfig(job=terms, on_demand_after=0, move_check_s=None, prices=book),
        ledger,
    )
    command = [sys.executable, str(FAKE_JOB), "--work-s", "2", "--state", str(tmp_path / "p")]
    assert supervisor.run(command).completed
    with open_operational(store, read_only=True) as market_store:
        report = job_report(market_store, ledger.job_id)
    assert list(report.markets) == ["on-demand"]
    assert report.on_demand_cost_usd == pytest.approx(report.cost_usd)
    assert report.savings_pct == 0.0
    assert report.hours_needed == pytest.approx(report.markets["on-demand"].hours)
    assert report.prices and report.prices.on_demand[""].source == REFERENCE_SOURCE


def test_a_quote_older_than_a_week_is_flagged_stale_by_the_rule_plan_uses(tmp_path: Path) -> None:
    import pandas as pd

    from spotwise.pricing.quotes import is_stale

    fresh = (pd.Timestamp.now(tz="UTC") - pd.Timedelta(days=1)).isoformat()
    with MarketStore.open(tmp_path / "m.duckdb") as store:
        _price(store, "spot", "us-east-1", "us-east-1a", 0.92, "2020-03-01 00:00:00+00")
        _price(store, "spot", "us-west-2", "us-west-2b", 1.10, fresh)
        _price(store, "on_demand", "us-east-1", "", 3.06, fresh)
        _price(store, "on_demand", "us-west-2", "", 3.06, fresh)
        book = price_book(store, POOLS, instance_type="p3.2xlarge")
    assert book.priced_at is not None
    old = book.spot_quote("us-east-1a_v100_1")
    assert is_stale(old.as_of, pd.Timestamp(book.priced_at))  # plan's rule, not a second one
    assert book.stale_lines() == [
        "stale spot prices (us-east-1a_v100_1; the newest of 2020-03-01), older than 7 days: "
        "`spotwise collect aws --region R` stores fresh ones"
    ]


def test_a_jobs_report_shows_the_prices_of_the_pools_it_ran_in_stale_ones_flagged(
    tmp_path: Path,
) -> None:
    """What ``jobs show`` and a sweep's report print of a job that ran in us-east-1a only."""
    import pandas as pd

    fresh = (pd.Timestamp.now(tz="UTC") - pd.Timedelta(days=1)).isoformat()
    with MarketStore.open(tmp_path / "m.duckdb") as store:
        _price(store, "spot", "us-east-1", "us-east-1a", 0.92, "2020-03-01 00:00:00+00")
        _price(store, "spot", "us-west-2", "us-west-2b", 1.10, fresh)
        _price(store, "on_demand", "us-east-1", "", 3.06, fresh)
        _price(store, "on_demand", "us-west-2", "", 3.06, fresh)
        book = price_book(store, POOLS, instance_type="p3.2xlarge")
    lines = book.used_by(["us-east-1a_v100_1"]).quote_lines()
    assert [line.split(":")[0] for line in lines] == [
        "spot us-east-1a_v100_1",
        "on-demand us-east-1",
    ]
    assert lines[0].endswith(" (stale: older than 7 days when the job was priced)")
    assert "stale" not in lines[1]
    # a job that has not launched yet: the on-demand price of its home region only
    assert [line.split(":")[0] for line in book.used_by([]).quote_lines()] == [
        "on-demand us-east-1"
    ]


def test_a_sweeps_report_flags_stale_prices_as_the_run_report_does(tmp_path: Path) -> None:
    from spotwise.executor.ledger.ledger import EntryKind, JobStatus
    from spotwise.executor.sweeps.report import _quoted_prices

    with MarketStore.open(tmp_path / "m.duckdb") as store:
        _price(store, "spot", "us-east-1", "us-east-1a", 0.92, "2020-03-01 00:00:00+00")
        book = price_book(store, POOLS, instance_type="p3.2xlarge", on_demand_price=3.0)
    terms = job(1.0)
    info = JobInfo(
        name="trial",
        command="train.py",
        launcher="local",
        compute_hours=terms.compute_hours,
        deadline_hours=terms.deadline_hours,
        on_demand_price=3.0,
        simulated=True,
        prices=book,
        sweep="s",
        trial=0,
    )
    ledger = Ledger(tmp_path / "ops.duckdb", info)
    ledger.record(EntryKind.LAUNCH, pool="us-east-1a_v100_1", market="spot")
    ledger.finish(JobStatus.COMPLETED)
    with open_operational(tmp_path / "ops.duckdb") as ops:
        report = job_report(ops, ledger.job_id)
    assert sorted(_quoted_prices([report])) == sorted(book.used_by(report.pools_used).quote_lines())
    [spot] = [line for line in _quoted_prices([report]) if line.startswith("spot")]
    assert spot.startswith("spot us-east-1a_v100_1: $0.920/h")
    assert spot.endswith("(stale: older than 7 days when the job was priced)")


@pytest.mark.slow  # CLI subprocesses
def test_jobs_show_prices_a_job_from_spot_rows_collected_after_it_ran_not_the_reference(
    tmp_path: Path, cli: CliRun
) -> None:
    from spotwise.executor.ledger.ledger import EntryKind, JobStatus

    path = tmp_path / "store.duckdb"
    pool = "us-east-1a_v100_1"
    with MarketStore.open(path) as store:
        book = price_book(store, [pool, "us-west-2b_v100_1"], instance_type="p3.2xlarge")
    assert book.spot_quote(pool).source == REFERENCE_SOURCE  # no rows yet: the reference
    spot, on_demand = book.spot_quote(pool).usd_per_hour, book.on_demand_quote(pool).usd_per_hour
    info = JobInfo(
        name="train.py",
        command="python train.py",
        launcher="local",
        compute_hours=2.0,
        deadline_hours=4.0,
        on_demand_price=on_demand,
        simulated=True,
        prices=book,
    )
    ledger = Ledger(path, info)
    ledger.record(
        EntryKind.INSTANCE,
        pool=pool,
        market="spot",
        hours=2.0,
        price=spot,
        cost_usd=2.0 * spot,
        on_demand_price=on_demand,
    )
    ledger.finish(JobStatus.COMPLETED)
    env = {"SPOTWISE_STORE": str(path)}

    def shown() -> dict:
        result = cli("jobs", "show", ledger.job_id, "--json", env=env)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    assert shown()["cost_usd"] == pytest.approx(2.0 * spot)
    with MarketStore.open(path) as store:  # `spotwise collect aws` ran since
        _price(store, "spot", "us-east-1", "us-east-1a", 0.50, "2024-02-01 00:00:00+00")
        _price(store, "on_demand", "us-east-1", "", 4.00, "2024-02-01 00:00:00+00")
    report = shown()
    assert report["cost_usd"] == pytest.approx(1.0)
    assert report["on_demand_cost_usd"] == pytest.approx(8.0)
    assert report["prices"]["spot"][pool]["source"] == "store: test-prices, us-east-1a"
    text = cli("jobs", "show", ledger.job_id, env=env).stdout
    assert f"spot {pool}: $0.500/h" in text and "not a quote" not in text


def test_a_stored_price_book_reads_back_as_it_was_or_says_what_is_wrong() -> None:
    book = PriceBook.flat(("z1", "z2"), 0.9, 3.06)
    assert PriceBook.from_dict(book.to_dict(), "job j's prices") == book
    bad = {**book.to_dict(), "spot": {"z1": {"usd_per_hour": "cheap", "source": "given"}}}
    with pytest.raises(StoreError, match=r"job j's prices: spot\['z1'\]: usd_per_hour must be"):
        PriceBook.from_dict(bad, "job j's prices")
    with pytest.raises(StoreError, match="job j's prices: instance_type must be text"):
        PriceBook.from_dict({"spot": {}}, "job j's prices")

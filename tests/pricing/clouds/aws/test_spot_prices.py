"""The AWS collector against real HTTP endpoints on 127.0.0.1 (boto3 does the talking)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import boto3
import pandas as pd
import pytest
from botocore.config import Config

from spotwise.pricing.clouds.aws.spot_prices import CollectReport, collect_aws, stored_resume_point
from spotwise.pricing.store import MarketStore
from tests.conftest import CliRun
from tests.pricing.conftest import unused_url
from tests.pricing.ec2_endpoint import PriceHistoryEndpoint

NOW = pd.Timestamp("2020-03-01", tz="UTC")


@pytest.fixture
def store(store_file: Path) -> Iterator[MarketStore]:
    with MarketStore.open(store_file) as market:
        yield market


def ec2(endpoint: str, attempts: int = 5):
    return boto3.client(
        "ec2",
        region_name="us-east-1",
        endpoint_url=endpoint,
        config=Config(retries={"max_attempts": attempts, "mode": "standard"}),
    )


def collect(
    store: MarketStore,
    endpoint: str,
    types: list[str],
    advisor_url: str | None = None,
    placement_scores: bool = False,
) -> CollectReport:
    report = collect_aws(
        ec2(endpoint),
        region="us-east-1",
        instance_types=types,
        resume_from=stored_resume_point(store, "us-east-1"),
        since=None,
        now=NOW,
        advisor_url=advisor_url,
        placement_scores=placement_scores,
    )
    store.upsert(report.frames)
    return report


def stored_prices(store: MarketStore) -> pd.DataFrame:
    return store.query("SELECT zone, instance_type, ts, price FROM prices ORDER BY ALL")


def test_collector_follows_next_token_pages_and_stores_every_row(
    store: MarketStore, us_east_1_history: pd.DataFrame
) -> None:
    endpoint = PriceHistoryEndpoint(us_east_1_history, page_size=100)
    try:
        report = collect(store, endpoint.url, [])
    finally:
        endpoint.close()
    expected_pages = -(-len(us_east_1_history) // 100)
    assert report.pages == expected_pages > 5
    assert [r.get("NextToken") for r in endpoint.requests][1:3] == ["100", "200"]
    got = stored_prices(store)
    assert len(got) == len(us_east_1_history)
    assert got["price"].sum() == pytest.approx(us_east_1_history["spot_price"].astype(float).sum())


def test_collector_resumes_each_series_from_its_newest_stored_price(
    store: MarketStore, us_east_1_history: pd.DataFrame
) -> None:
    cutoff = pd.Timestamp("2020-01-10", tz="UTC")
    stamps = pd.to_datetime(us_east_1_history["timestamp"], utc=True)
    types = ["p3.2xlarge", "p2.xlarge"]
    endpoint = PriceHistoryEndpoint(us_east_1_history[stamps < cutoff], page_size=50)
    try:
        collect(store, endpoint.url, types)
        newest = {t: store.newest("prices", {"instance_type": t}) for t in types}
        endpoint.rows = PriceHistoryEndpoint(us_east_1_history).rows  # the market moved on
        endpoint.requests.clear()
        collect(store, endpoint.url, types)
    finally:
        endpoint.close()
    starts = {
        r["InstanceType.1"]: pd.Timestamp(r["StartTime"])
        for r in endpoint.requests
        if "NextToken" not in r
    }
    assert starts == newest
    expected = us_east_1_history[us_east_1_history["instance_type"].isin(types)]
    assert len(stored_prices(store)) == len(expected)
    refetched = sum(1 for r in endpoint.requests) * 50
    assert refetched < len(expected)  # the second run did not page through everything again


@pytest.mark.slow
def test_collector_backs_off_and_retries_when_throttled(
    store: MarketStore, us_east_1_history: pd.DataFrame
) -> None:
    endpoint = PriceHistoryEndpoint(us_east_1_history, page_size=500, throttle=2)
    try:
        collect(store, endpoint.url, [])
    finally:
        endpoint.close()
    assert len(endpoint.requests) == 2 + -(-len(us_east_1_history) // 500)
    assert len(stored_prices(store)) == len(us_east_1_history)


@pytest.mark.slow
def test_collector_fails_loudly_when_throttling_outlasts_the_retries(
    store: MarketStore, us_east_1_history: pd.DataFrame
) -> None:
    from botocore.exceptions import ClientError

    endpoint = PriceHistoryEndpoint(us_east_1_history, throttle=100)
    try:
        with pytest.raises(ClientError, match="RequestLimitExceeded"):
            collect_aws(
                ec2(endpoint.url, attempts=2),
                region="us-east-1",
                instance_types=[],
                resume_from=lambda t: None,
                since=None,
                now=NOW,
                advisor_url=None,
            )
    finally:
        endpoint.close()
    assert store.summary().tables["prices"] == 0


def test_collector_against_moto_server_reports_unavailable_sources_and_keeps_the_rest(
    store: MarketStore, moto_server: str
) -> None:
    report = collect(
        store, moto_server, ["t3.micro"], placement_scores=True, advisor_url=unused_url()
    )
    assert len(report.frames["prices"]) >= 1  # moto's placeholder history
    assert set(report.frames["prices"]["instance_type"]) == {"t3.micro"}
    assert any(m.startswith("placement scores: skipped") for m in report.messages)
    assert any(m.startswith("spot advisor: skipped") for m in report.messages)
    assert all("\n" not in m for m in report.messages)
    assert store.summary().tables["prices"] == len(report.frames["prices"])


def test_collector_stores_advisor_bands_from_the_feed(
    store: MarketStore, moto_server: str, file_server: str
) -> None:
    url = f"{file_server}/advisor/spot-advisor-data_2025-06-28.json"
    report = collect(store, moto_server, ["t3.micro"], advisor_url=url)
    bands = store.query(
        "SELECT * FROM bands WHERE region = 'us-east-1' AND instance_type = 'p3.2xlarge'"
    )
    assert len(bands) == 1 and 0 <= bands["interruption_band"].iloc[0] <= 4
    assert len(report.frames["bands"]) > 1000


@pytest.mark.slow
def test_collect_command_runs_against_the_endpoint_and_prints_skipped_sources(
    cli: CliRun, us_east_1_history: pd.DataFrame, store_file: Path
) -> None:
    endpoint = PriceHistoryEndpoint(us_east_1_history, page_size=300, throttle=1)
    try:
        result = cli(
            "collect",
            "aws",
            "--region",
            "us-east-1",
            "--endpoint-url",
            endpoint.url,
            "--instance-types",
            "p3.2xlarge",
            "--advisor-url",
            unused_url(),
            "--since",
            "2019-12-01T00:00:00Z",
        )
    finally:
        endpoint.close()
    assert result.returncode == 0, result.stderr
    assert "placement scores: skipped" in result.stderr
    assert "spot advisor: skipped" in result.stderr
    with MarketStore.open(store_file, read_only=True) as market:
        stored = market.summary().tables["prices"]
    assert stored == (us_east_1_history["instance_type"] == "p3.2xlarge").sum()


def test_collect_help_documents_every_flag(cli: CliRun) -> None:
    result = cli(
        "collect", "aws", "--help", env={"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}
    )
    assert result.returncode == 0
    for flag in (
        "--region",
        "--instance-types",
        "--since",
        "--endpoint-url",
        "--advisor-url",
        "--placement-scores",
        "--max-attempts",
        "--store",
    ):
        assert flag in result.stdout


def test_a_stored_price_from_the_future_does_not_stop_collection(
    store: MarketStore, us_east_1_history: pd.DataFrame
) -> None:
    """A row dated 2099 (stored before loads refused future times) used to make every later
    run resume from 2099 and collect nothing."""
    store.execute(
        "INSERT INTO prices VALUES ('x', 'aws', 'us-east-1', 'us-east-1a', 'p3.2xlarge', "
        "'spot', TIMESTAMPTZ '2099-01-01 00:00:00+00', 1.0)"
    )
    endpoint = PriceHistoryEndpoint(us_east_1_history, page_size=500)
    try:
        report = collect(store, endpoint.url, ["p3.2xlarge"])
    finally:
        endpoint.close()
    assert any("lies in the future" in m for m in report.messages)
    assert "StartTime" not in endpoint.requests[0]
    assert len(report.frames["prices"]) > 0

"""``collect gcp`` with google-cloud-billing's own client against a loopback fake of the Cloud
Billing Catalog that checks every request against Google's discovery document
(tests/fakes/gcp_billing.py)."""

from __future__ import annotations

import copy
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pandas as pd
import pytest

from spotwise.executor.local_clouds.http import Answer
from spotwise.pricing import gpus
from spotwise.pricing.clouds.gcp.billing import (
    CatalogReport,
    catalog_client,
    catalog_windows,
    collect_gcp,
    collect_gcp_into,
    stored_resume_point,
)
from spotwise.pricing.errors import InputError, SourceUnavailable
from spotwise.pricing.sources.skus import with_skus
from spotwise.pricing.store import MarketStore
from tests.conftest import DATA, CliRun
from tests.fakes.gcp_billing import PROJECT_NUMBER, CloudBillingFake
from tests.fakes.google import catalog

NOW = pd.Timestamp("2025-03-20T00:00:00Z")
SINCE = pd.Timestamp("2025-01-15T00:00:00Z")
SHAPES = gpus.on_cloud("gcp")


def fake_at(now: pd.Timestamp, page_size: int) -> CloudBillingFake:
    later = (now + pd.Timedelta(minutes=2)).to_pydatetime()
    return CloudBillingFake(now=lambda: later, page_size=page_size)


@pytest.fixture
def google_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No gcloud configuration, no metadata server: only what a test sets."""
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    monkeypatch.setenv("NO_GCE_CHECK", "True")
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_QUOTA_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


@pytest.fixture
def billing(google_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[CloudBillingFake]:
    fake = fake_at(NOW, page_size=7)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(fake.credentials_file(google_env)))
    monkeypatch.setenv("SPOTWISE_GCP_BILLING_ENDPOINT", fake.url)
    yield fake
    fake.close()
    assert fake.refused == []  # every request the client sent is one the document allows


def collect(
    fake: CloudBillingFake,
    *,
    since: pd.Timestamp | None = SINCE,
    now: pd.Timestamp = NOW,
    resume: pd.Timestamp | None = None,
    attempts: int = 5,
) -> CatalogReport:
    return collect_gcp(
        catalog_client(fake.url),
        shapes=SHAPES,
        resume_from=resume,
        since=since,
        now=now,
        max_attempts=attempts,
        sleep=lambda _: None,
    )


def price(frame: pd.DataFrame, shape: str, region: str, market: str) -> pd.Series:
    rows = frame[
        (frame["instance_type"] == shape)
        & (frame["region"] == region)
        & (frame["market"] == market)
    ]
    return rows.set_index("ts")["price"].sort_index()


def test_collect_gcp_pages_the_catalog_month_by_month_and_prices_each_shape(
    billing: CloudBillingFake,
) -> None:
    report = collect(billing)
    sent = billing.sku_requests()
    skus = len(catalog.compute_engine_skus())
    assert report.windows == 3  # Jan 15 .. Feb 1, February, March 1 .. 20 (Los Angeles months)
    assert report.pages == len(sent) == 3 * -(-skus // 7) > 3
    assert [r.get("pageToken") is None for r in sent[:3]] == [True, False, False]
    assert [(r["startTime"], r["endTime"]) for r in sent if "pageToken" not in r] == [
        ("2025-01-15T00:00:00Z", "2025-02-01T08:00:00Z"),
        ("2025-02-01T08:00:00Z", "2025-03-01T08:00:00Z"),
        ("2025-03-01T08:00:00Z", "2025-03-20T00:00:00Z"),
    ]
    frame = with_skus(report.frames)
    assert set(frame["source"]) == {"gcp-billing"} and set(frame["market"]) == {"spot", "on_demand"}
    assert set(frame["region"]) == {"us-central1", "europe-west4"}
    europe = set(frame[frame["region"] == "europe-west4"]["instance_type"])
    assert europe == {
        s.shape for s in SHAPES if s.shape.startswith(("a2-highgpu", "a2-mega", "g2"))
    }
    assert any(m.startswith("a3-megagpu-8g: no complete set of SKUs") for m in report.messages)


def test_an_a2_shape_costs_its_parts_as_the_bundled_change_point_file_says(
    billing: CloudBillingFake,
) -> None:
    """12 vCPUs × the A2 core SKU + 85 GiB × the A2 RAM SKU + one A100 SKU: Google's list
    prices of the parts add up to the whole-shape price in the bundled file."""
    frame = with_skus(collect(billing).frames)
    on_demand = price(frame, "a2-highgpu-1g", "us-central1", "on_demand")
    bundled = pd.read_csv(DATA / "prices" / "gcp_spot_ondemand_changepoints.csv")
    listed = bundled[
        (bundled["machine_type"] == "a2-highgpu-1g") & (bundled["region"] == "us-central1")
    ]["hour_ondemand_usd"]
    assert on_demand.tolist() == pytest.approx([3.673385] * len(on_demand))
    assert listed.iloc[-1] == pytest.approx(on_demand.iloc[-1])
    row = frame[frame["instance_type"] == "a2-highgpu-1g"].iloc[0]
    core, ram, gpu = row["sku"].split(",")
    place = "Americas" if row["region"] == "us-central1" else "Netherlands"
    usage = "OnDemand" if row["market"] == "on_demand" else "Preemptible"
    prefix = "" if usage == "OnDemand" else "Spot Preemptible "
    assert (core, ram, gpu) == tuple(
        catalog.sku_id(f"{prefix}{name} running in {place}", usage, row["region"])
        for name in ("A2 Instance Core", "A2 Instance Ram", "Nvidia Tesla A100 GPU")
    )
    n1 = price(frame, "n1-standard-8+1xnvidia-tesla-v100", "us-central1", "on_demand")
    assert n1.iloc[-1] == pytest.approx(8 * 0.031611 + 30 * 0.004237 + 2.48)


def test_spot_prices_come_from_preemptible_skus_and_change_when_one_does(
    billing: CloudBillingFake,
) -> None:
    frame = with_skus(collect(billing).frames)
    spot = price(frame, "g2-standard-4", "us-central1", "spot")
    change = pd.Timestamp(catalog.SPOT_CHANGE)
    before = 4 * 0.010508 + 16 * 0.0010428 + 0.2240
    after = 4 * 0.010508 + 16 * 0.0010428 + 0.2240 * catalog.SPOT_GPU_AFTER_CHANGE
    assert spot[spot.index < change].tolist() == pytest.approx([before, before])
    assert spot[change] == pytest.approx(after)
    assert spot.index.tolist() == sorted(
        [
            pd.Timestamp("2025-01-15T00:00:00Z"),
            pd.Timestamp("2025-02-01T08:00:00Z"),
            change,
            pd.Timestamp("2025-03-01T08:00:00Z"),
        ]
    )
    assert (price(frame, "g2-standard-4", "us-central1", "on_demand") > spot.max()).all()


def test_committed_sole_tenant_dws_and_custom_skus_never_price_a_shape(
    billing: CloudBillingFake,
) -> None:
    frame = with_skus(collect(billing).frames)
    used = {sku for skus in frame["sku"] for sku in skus.split(",")}
    decoys = {catalog.sku_id(d, u, "us-central1") for d, u, *_ in catalog.DECOYS}
    assert used and not used & decoys


def test_collect_gcp_resumes_month_by_month_from_the_newest_stored_price(
    google_env: Path, monkeypatch: pytest.MonkeyPatch, store_file: Path
) -> None:
    first_now = pd.Timestamp("2025-02-10T00:00:00Z")
    fake = fake_at(first_now, page_size=50)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(fake.credentials_file(google_env)))
    try:
        with MarketStore.open(store_file) as store:
            store.upsert(collect(fake, now=first_now).frames)
            resume = stored_resume_point(store, SHAPES, ())
        assert resume == pd.Timestamp("2025-02-01T08:00:00Z")  # February's first price
        fake.requests.clear()
        fake.now = lambda: (NOW + pd.Timedelta(minutes=2)).to_pydatetime()
        report = collect(fake, since=None, resume=resume)
        with MarketStore.open(store_file) as store:
            added = store.upsert(report.frames)["prices"]
            stored = store.query("SELECT count(*) AS n FROM prices")["n"].iloc[0]
    finally:
        fake.close()
    starts = [r["startTime"] for r in fake.sku_requests() if "pageToken" not in r]
    assert starts == ["2025-02-01T08:00:00Z", "2025-03-01T08:00:00Z"]
    per_series = report.frames["prices"].groupby(["instance_type", "region", "market"]).size()
    spot_series = len(per_series.xs("spot", level="market"))
    assert added == len(report.frames["prices"]) - len(per_series) == spot_series + len(per_series)
    assert stored == len(report.frames["prices"]) + len(per_series)  # January's first rows stay
    assert fake.refused == []


def test_catalog_windows_are_cut_at_los_angeles_months() -> None:
    windows = catalog_windows(
        pd.Timestamp("2024-12-31T20:00:00Z"), pd.Timestamp("2025-01-01T12:00:00Z")
    )
    # 2024-12-31 20:00 UTC is noon in Los Angeles: December there until 08:00 UTC on Jan 1.
    assert windows == [
        (pd.Timestamp("2024-12-31T20:00:00Z"), pd.Timestamp("2025-01-01T08:00:00Z")),
        (pd.Timestamp("2025-01-01T08:00:00Z"), pd.Timestamp("2025-01-01T12:00:00Z")),
    ]


def test_without_credentials_collect_gcp_says_in_one_line_how_to_sign_in(
    google_env: Path, cli_in_process: CliRun
) -> None:
    result = cli_in_process("collect", "gcp", "--gpu", "A100")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "no Google credentials found" in lines[0]
    assert "gcloud auth application-default login" in lines[0]
    assert "GOOGLE_APPLICATION_CREDENTIALS" in lines[0]


def test_an_api_not_enabled_is_one_line_naming_the_project_and_the_command(
    billing: CloudBillingFake, store_file: Path
) -> None:
    billing.disabled = True
    with pytest.raises(SourceUnavailable) as failed:
        collect_gcp_into(store_file, shapes=SHAPES, endpoint=billing.url, now=NOW)
    line = str(failed.value)
    assert "\n" not in line
    assert f"not enabled in project {PROJECT_NUMBER}" in line
    assert f"gcloud services enable cloudbilling.googleapis.com --project {PROJECT_NUMBER}" in line


@pytest.mark.slow
def test_a_5xx_is_retried_a_bounded_number_of_times_then_one_line_and_nothing_is_stored(
    billing: CloudBillingFake, store_file: Path
) -> None:
    with MarketStore.open(store_file) as store:
        store.upsert(collect(billing).frames)
        before = store.query("SELECT * FROM prices ORDER BY ALL")
    billing.requests.clear()
    billing.fail_next = 100
    with pytest.raises(SourceUnavailable) as failed:
        collect_gcp_into(store_file, shapes=SHAPES, endpoint=billing.url, max_attempts=3, now=NOW)
    assert len(billing.requests) == 3
    line = str(failed.value)
    assert "\n" not in line and "failed with 503" in line and "3 times" in line
    assert "run again in a few minutes" in line
    with MarketStore.open(store_file, read_only=True) as store:
        pd.testing.assert_frame_equal(store.query("SELECT * FROM prices ORDER BY ALL"), before)


def test_a_passing_5xx_is_retried_and_the_collection_completes(
    billing: CloudBillingFake,
) -> None:
    billing.fail_next = 2
    report = collect(billing, attempts=3)
    assert len(report.frames["prices"]) > 0
    assert len(billing.requests) == report.pages + 2


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"usageUnit": "GiBy.mo"}, r"priced per 'GiBy\.mo', not per 'GiBy\.h'"),
        (
            {
                "tieredRates": [
                    {
                        "startUsageAmount": 0,
                        "unitPrice": {"currencyCode": "USD", "units": "9000", "nanos": 0},
                    }
                ]
            },
            "not plausible",
        ),
    ],
)
@pytest.mark.slow
def test_a_sku_spotwise_cannot_use_is_refused_in_one_line_and_nothing_is_stored(
    billing: CloudBillingFake, store_file: Path, change: dict, problem: str
) -> None:
    with MarketStore.open(store_file) as store:
        store.upsert(collect(billing).frames)
        before = store.query("SELECT * FROM prices ORDER BY ALL")
    skus = copy.deepcopy(billing.skus)
    sku = next(s for s in skus if s["description"] == "A2 Instance Ram running in Americas")
    if "tieredRates" in change:
        sku = next(s for s in skus if s["description"].startswith("Nvidia Tesla A100 GPU"))
    sku["timeline"] = [(t, {**e, **change}) for t, e in sku["timeline"]]
    billing.skus = skus
    with pytest.raises(InputError, match=problem) as failed:
        collect_gcp_into(store_file, shapes=SHAPES, endpoint=billing.url, since=SINCE, now=NOW)
    assert "\n" not in str(failed.value) and "nothing was stored" in str(failed.value)
    with MarketStore.open(store_file, read_only=True) as store:
        pd.testing.assert_frame_equal(store.query("SELECT * FROM prices ORDER BY ALL"), before)


def test_without_the_gcp_extra_collect_gcp_names_it_in_one_line(
    billing: CloudBillingFake, cli_in_process: CliRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    import google.cloud

    monkeypatch.setitem(sys.modules, "google.cloud.billing_v1", None)
    monkeypatch.delattr(google.cloud, "billing_v1", raising=False)
    result = cli_in_process("collect", "gcp")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: collect gcp needs Google's client libraries: pip install 'spotwise[gcp]', then "
        "run again"
    ]


@pytest.mark.slow
def test_collect_gcp_command_stores_prices_with_their_skus_and_a_rerun_adds_nothing(
    google_env: Path, monkeypatch: pytest.MonkeyPatch, cli: CliRun, store_file: Path
) -> None:
    fake = CloudBillingFake(page_size=20)  # the real clock: this month, from its first day
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(fake.credentials_file(google_env)))
    monkeypatch.setenv("SPOTWISE_GCP_BILLING_ENDPOINT", fake.url)
    try:
        first = cli("collect", "gcp", "--gpu", "A100", "--regions", "us-central1")
        again = cli("collect", "gcp", "--gpu", "A100", "--regions", "us-central1")
    finally:
        fake.close()
    assert first.returncode == 0, first.stderr
    assert (
        "collected gcp from" in first.stderr
        and "18 prices (18 new) of 9 shapes in 1 region" in first.stderr
    )
    assert again.returncode == 0 and "(0 new)" in again.stderr
    with MarketStore.open(store_file, read_only=True) as store:
        rows = store.query(
            "SELECT instance_type, market, price, sku FROM prices JOIN price_skus "
            "USING (source, provider, region, zone, instance_type, market, ts)"
        )
    assert len(rows) == 18 and rows["sku"].str.count(",").eq(2).all()
    assert fake.refused == []


def test_the_fake_refuses_what_the_discovery_document_does_not_allow(
    billing: CloudBillingFake,
) -> None:
    """The checks have teeth: each request below breaks the document and is answered 400."""
    base = f"{billing.url}/v1/services/6F81-5844-456A/skus"
    month = {"startTime": "2025-02-01T08:00:00Z", "endTime": "2025-02-10T00:00:00Z"}
    for url, params in [
        (base, {"pageSize": "ten"}),
        (base, {"filter": "x"}),
        (base, {"startTime": "2025-02-01"}),
        (base, {**month, "endTime": "2025-03-10T00:00:00Z"}),  # two Los Angeles months
        (base, {"$alt": "xml"}),
        (f"{billing.url}/v1/services/6F81-5844-456A/skus/extra", {}),
        (f"{billing.url}/v2/services", {}),
    ]:
        answer = httpx.get(url, params=params)
        assert answer.status_code == 400, (url, params)
        assert answer.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert len(billing.refused) == 7
    no_token = httpx.get(base, params=month)
    assert no_token.status_code == 401 and no_token.json()["error"]["status"] == "UNAUTHENTICATED"
    billing.refused.clear()


def test_a_price_from_gcp_keeps_its_sku_and_other_sources_store_none(
    billing: CloudBillingFake, store_file: Path
) -> None:
    from spotwise.pricing.ingest import load_paths

    collect_gcp_into(
        store_file,
        shapes=SHAPES[:2],
        endpoint=billing.url,
        since=pd.Timestamp("2025-03-01T00:00:00Z"),
        now=NOW,
    )
    with MarketStore.open(store_file) as store:
        load_paths(store, [DATA / "prices" / "gcp_spot_ondemand_changepoints.csv"])
        skus = store.query(
            "SELECT source, count(sku) AS n, count(*) AS rows FROM prices LEFT JOIN price_skus "
            "USING (source, provider, region, zone, instance_type, market, ts) GROUP BY ALL"
        )
    by_source = skus.set_index("source")
    assert by_source.loc["gcp-billing", "n"] == by_source.loc["gcp-billing", "rows"] > 0
    assert by_source.loc["gcp-prices", "n"] == 0


def test_an_old_store_gains_the_price_skus_table_and_keeps_its_prices(store_file: Path) -> None:
    import duckdb

    from spotwise.pricing.schemas import MARKET

    store_file.parent.mkdir(parents=True)
    con = duckdb.connect(str(store_file))
    con.execute(MARKET.migrations[0])
    con.execute("CREATE TABLE schemas (name VARCHAR PRIMARY KEY, version INTEGER)")
    con.execute("INSERT INTO schemas VALUES ('market', 1)")
    con.execute(
        "INSERT INTO prices VALUES ('aws-price-history', 'aws', 'us-east-1', 'us-east-1a', "
        "'p3.2xlarge', 'spot', TIMESTAMPTZ '2020-01-01 00:00:00+00', 0.918)"
    )
    con.close()
    with MarketStore.open(store_file) as store:
        assert store.schema_versions()["market"] == MARKET.version == 2
        assert store.records("SELECT price FROM prices") == [{"price": 0.918}]
        assert store.records("SELECT count(*) AS n FROM price_skus") == [{"n": 0}]


def test_an_unreachable_endpoint_is_tried_a_bounded_number_of_times_then_one_line(
    billing: CloudBillingFake,
) -> None:
    from tests.pricing.conftest import unused_url

    nowhere = unused_url().rsplit("/", 1)[0]
    with pytest.raises(SourceUnavailable) as failed:
        collect_gcp(
            catalog_client(nowhere),
            shapes=SHAPES,
            resume_from=None,
            since=SINCE,
            now=NOW,
            max_attempts=2,
            sleep=lambda _: None,
        )
    assert str(failed.value) == (
        f"collect gcp: could not reach the Cloud Billing API at {nowhere} after 2 tries "
        "(ConnectionError); check SPOTWISE_GCP_BILLING_ENDPOINT and the network"
    )


@pytest.mark.parametrize(
    ("body", "what"),
    [
        (b'{"skus": [{"name": "services/6F81-5844-456A/skus/0000-', "cut short"),
        (b'{"skus": "A2 Instance Core", "nextPageToken": 7}', "wrongly typed"),
        (b'{"skus": [{"pricingInfo": {"effectiveTime": 5}}]}', "a field wrongly typed"),
        (b"<!DOCTYPE html><html><body>Sign in</body></html>", "a web page"),
    ],
)
def test_an_answer_that_is_not_the_catalogs_json_is_one_line_and_nothing_is_stored(
    billing: CloudBillingFake, store_file: Path, body: bytes, what: str
) -> None:
    with MarketStore.open(store_file) as store:
        store.upsert(collect(billing).frames)
        before = store.query("SELECT * FROM prices ORDER BY ALL")
    headers = {"Content-Type": "text/html"} if body.startswith(b"<") else {}
    billing.damaged_next = [Answer(200, body, headers)]
    with pytest.raises(SourceUnavailable) as failed:
        collect_gcp_into(store_file, shapes=SHAPES, endpoint=billing.url, since=SINCE, now=NOW)
    line = str(failed.value)
    assert "\n" not in line, what
    assert line.startswith(f"collect gcp: the Cloud Billing API at {billing.url} answered ")
    assert "documented JSON" in line and "nothing was stored" in line
    assert "<html" not in line  # the page is not echoed
    with MarketStore.open(store_file, read_only=True) as store:
        pd.testing.assert_frame_equal(store.query("SELECT * FROM prices ORDER BY ALL"), before)


def test_a_page_that_comes_too_late_is_tried_again_as_max_attempts_allows(
    billing: CloudBillingFake,
) -> None:
    billing.stall_next, billing.stall_s = 1, 1.5
    report = collect_gcp(
        catalog_client(billing.url),
        shapes=SHAPES,
        resume_from=None,
        since=SINCE,
        now=NOW,
        max_attempts=2,
        sleep=lambda _: None,
        timeout_s=0.5,
    )
    assert len(report.frames["prices"]) > 0
    assert len(billing.sku_requests()) == report.pages + 1


def test_a_read_timeout_on_every_try_is_one_line_naming_the_tries(
    billing: CloudBillingFake,
) -> None:
    billing.stall_next, billing.stall_s = 2, 1.5
    with pytest.raises(SourceUnavailable) as failed:
        collect_gcp(
            catalog_client(billing.url),
            shapes=SHAPES,
            resume_from=None,
            since=SINCE,
            now=NOW,
            max_attempts=2,
            sleep=lambda _: None,
            timeout_s=0.5,
        )
    assert str(failed.value) == (
        f"collect gcp: could not reach the Cloud Billing API at {billing.url} after 2 tries "
        "(ReadTimeout); check SPOTWISE_GCP_BILLING_ENDPOINT and the network"
    )

"""``collect azure`` against loopback fakes of the Retail Prices API (httpx) and of Resource
Graph (azure-mgmt-resourcegraph with azure-identity's DefaultAzureCredential), which check every
request against the documented query, the response schema and the library's request model
(tests/fakes/azure_prices.py)."""

from __future__ import annotations

import copy
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pandas as pd
import pytest

from spotwise.executor.clouds.azure.fake.servers import no_azure_sign_in
from spotwise.executor.local_clouds.http import Answer
from spotwise.pricing import gpus
from spotwise.pricing.clouds.azure.prices import AzureReport, collect_azure, collect_azure_into
from spotwise.pricing.errors import InputError, SourceUnavailable
from spotwise.pricing.sources.skus import with_skus
from spotwise.pricing.store import MarketStore
from tests.conftest import CliRun
from tests.fakes.azure import catalog
from tests.fakes.azure_prices import ResourceGraphFake, RetailPricesFake

NOW = pd.Timestamp("2026-01-10T00:00:00Z")
SIZES = gpus.on_cloud("azure")
REGIONS = ["eastus", "westeurope"]


@pytest.fixture
def azure_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No Azure sign-in of this machine's: no az cache, no managed identity, no IMDS."""
    no_azure_sign_in(monkeypatch, tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


@pytest.fixture
def retail(azure_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RetailPricesFake]:
    fake = RetailPricesFake(page_size=40)
    monkeypatch.setenv("SPOTWISE_AZURE_PRICES_URL", fake.url)
    yield fake
    fake.close()
    assert fake.refused == []


@pytest.fixture
def graph(azure_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ResourceGraphFake]:
    fake = ResourceGraphFake(page_size=7)
    for name, value in fake.identity_env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SPOTWISE_AZURE_RESOURCE_GRAPH_URL", fake.url)
    yield fake
    fake.close()
    assert fake.refused == []


def collect(
    retail: RetailPricesFake, graph_url: str | None, attempts: int = 5, **options: object
) -> AzureReport:
    return collect_azure(
        regions=REGIONS,
        shapes=SIZES,
        prices_url=retail.url,
        graph_url=graph_url,
        now=NOW,
        max_attempts=attempts,
        sleep=lambda _: None,
        **options,  # type: ignore[arg-type]
    )


def stored(store_file: Path) -> dict[str, pd.DataFrame]:
    with MarketStore.open(store_file, read_only=True) as store:
        return {
            t: store.query(f"SELECT * FROM {t} ORDER BY ALL")
            for t in ("prices", "price_skus", "bands")
        }


def test_collect_azure_follows_next_page_links_and_keeps_linux_hourly_meters(
    retail: RetailPricesFake,
) -> None:
    report = collect(retail, None)
    sent = [dict(r.query) for r in retail.requests]
    first = [q for q in sent if "$skip" not in q]
    assert [q["$filter"] for q in first] == [
        f"serviceName eq 'Virtual Machines' and priceType eq 'Consumption' and armRegionName eq "
        f"'{region}'"
        for region in REGIONS
    ]
    assert all(q["api-version"] == "2023-01-01-preview" for q in sent)
    assert report.retail_pages == len(sent) > len(REGIONS)  # pages followed by NextPageLink
    prices = report.frames["prices"]
    east = prices[prices["region"] == "eastus"]
    assert set(east["instance_type"]) == {s.shape for s in SIZES}  # every size, no filler
    nc6 = east[east["instance_type"] == "Standard_NC6s_v3"].set_index("market")
    # Linux only: not Windows (1.4x), not Low Priority, not DevTest, not the reservation
    assert nc6.loc["on_demand", "price"] == pytest.approx(3.06)
    assert nc6.loc["spot", "price"] == pytest.approx(3.06 * catalog.SPOT_SHARE)
    assert {"ND40rs_v2", "ND96isr_H100_v5"} & {
        s.removeprefix("Standard_")
        for s in prices[prices["region"] == "westeurope"]["instance_type"]
    } == set()
    assert report.messages == ()


def test_each_azure_price_is_dated_by_its_effective_start_date_and_names_its_sku(
    retail: RetailPricesFake,
) -> None:
    prices = with_skus(collect(retail, None).frames)
    assert set(prices["source"]) == {"azure-retail"}
    spot = prices[prices["market"] == "spot"]
    assert set(spot["ts"]) == {pd.Timestamp(catalog.SPOT_FROM)}
    assert set(prices[prices["market"] == "on_demand"]["ts"]) == {
        pd.Timestamp(catalog.ON_DEMAND_FROM)
    }
    items = {
        (i["armSkuName"], i["armRegionName"], i["skuName"].endswith(" Spot")): i["skuId"]
        for i in retail.items
        if "Windows" not in i["productName"]
        and i["type"] == "Consumption"
        and not i["skuName"].endswith("Low Priority")
    }
    for row in prices.itertuples():
        assert row.sku == items[(row.instance_type, row.region, row.market == "spot")]


def test_eviction_bands_and_spot_history_come_from_resource_graph_page_by_page(
    retail: RetailPricesFake, graph: ResourceGraphFake
) -> None:
    report = collect(retail, graph.url)
    queries = graph.queries()
    assert len(queries) == report.graph_pages > 2  # $skipToken pages of 7 rows
    assert all(q["options"]["resultFormat"] == "objectArray" for q in queries)
    assert any("$skipToken" in q["options"] for q in queries)
    bands = report.frames["bands"].set_index(["region", "instance_type"])
    assert len(bands) == sum(2 if europe else 1 for _, _, europe in catalog.SIZES.values())
    h100 = bands.loc[("eastus", "Standard_ND96isr_H100_v5")]
    assert h100["interruption_band"] == 4  # "20+"
    assert h100["savings_pct"] == pytest.approx(100 * (1 - catalog.SPOT_SHARE))
    assert bands.loc[("westeurope", "Standard_NC24ads_A100_v4"), "interruption_band"] == 2
    assert set(bands["observed"]) == {NOW.floor("D")}
    history = with_skus(report.frames)
    history = history[history["source"] == "azure-resource-graph"]
    assert set(history["market"]) == {"spot"} and history["sku"].isna().all()
    nc6 = history[
        (history["instance_type"] == "Standard_NC6s_v3") & (history["region"] == "eastus")
    ]
    assert len(nc6) == 3 and nc6["ts"].max() == pd.Timestamp("2025-11-01T00:00:00Z")


def test_a_rerun_of_collect_azure_adds_nothing(
    retail: RetailPricesFake, graph: ResourceGraphFake, store_file: Path
) -> None:
    def run() -> tuple[AzureReport, dict[str, int]]:
        return collect_azure_into(
            store_file, regions=["eastus"], shapes=SIZES, prices_url=retail.url, graph_url=graph.url
        )

    first, added = run()
    _, added_again = run()
    assert added["prices"] == len(first.frames["prices"]) > 0 and added["bands"] > 0
    assert added_again == {"prices": 0, "price_skus": 0, "bands": 0}


@pytest.mark.slow
def test_without_azure_credentials_resource_graph_is_one_line_and_retail_prices_are_kept(
    retail: RetailPricesFake, azure_env: Path, store_file: Path
) -> None:
    graph = ResourceGraphFake()  # reachable, but this machine has no identity to ask it with
    try:
        report, added = collect_azure_into(
            store_file, regions=["eastus"], shapes=SIZES, prices_url=retail.url, graph_url=graph.url
        )
    finally:
        graph.close()
    assert report.messages == (
        "resource graph: skipped, no Azure credentials found: run `az login`, or set "
        "AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_CLIENT_SECRET (the retail prices were "
        "collected)",
    )
    assert added == {
        "prices": len(report.frames["prices"]),
        "price_skus": len(report.frames["prices"]),
    }
    assert "bands" not in report.frames
    assert graph.queries() == []


def test_a_forbidden_resource_graph_is_one_line_and_retail_prices_are_kept(
    retail: RetailPricesFake, graph: ResourceGraphFake
) -> None:
    graph.forbidden = True
    report = collect(retail, graph.url)
    (line,) = report.messages
    assert line.startswith("resource graph: skipped, this identity may not query it (403 ")
    assert "AuthorizationFailed" in line and "Reader role" in line
    assert set(report.frames) == {"prices", "price_skus"} and len(report.frames["prices"]) > 0


def test_a_5xx_of_resource_graph_is_retried_then_one_line(
    retail: RetailPricesFake, graph: ResourceGraphFake
) -> None:
    graph.fail_next = 100
    report = collect(retail, graph.url, attempts=3)
    assert len([r for r in graph.requests if r.method == "POST"]) == 3
    assert report.messages == (
        f"resource graph: skipped, {graph.url} failed with 503 after 3 tries; run again later "
        "(the retail prices were collected)",
    )


def test_a_5xx_of_the_retail_api_is_retried_a_bounded_number_of_times_then_one_line(
    retail: RetailPricesFake, store_file: Path
) -> None:
    collect_azure_into(
        store_file, regions=["eastus"], shapes=SIZES, prices_url=retail.url, graph_url=None
    )
    before = stored(store_file)
    retail.requests.clear()
    retail.fail_next = 100
    with pytest.raises(SourceUnavailable) as failed:
        collect_azure_into(
            store_file,
            regions=["eastus"],
            shapes=SIZES,
            prices_url=retail.url,
            graph_url=None,
            max_attempts=3,
        )
    assert len(retail.requests) == 3
    assert str(failed.value) == (
        f"collect azure: the Retail Prices API at {retail.url} failed with 503 3 times; run "
        "again in a few minutes (the store is unchanged)"
    )
    after = stored(store_file)
    for table in before:
        pd.testing.assert_frame_equal(after[table], before[table])


def test_a_passing_5xx_of_the_retail_api_is_retried_and_the_collection_completes(
    retail: RetailPricesFake,
) -> None:
    retail.fail_next = 2
    report = collect(retail, None, attempts=3)
    assert len(retail.requests) == report.retail_pages + 2 and len(report.frames["prices"]) > 0


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"retailPrice": -1.0}, "item .*field 'retailPrice'.*price must be a positive number"),
        ({"effectiveStartDate": "2099-01-01T00:00:00Z"}, "field 'effectiveStartDate'.*future"),
        ({"skuName": None}, "not a documented price item"),
    ],
)
def test_a_bad_retail_item_is_refused_in_one_line_and_the_store_is_unchanged(
    retail: RetailPricesFake, store_file: Path, change: dict, problem: str
) -> None:
    collect_azure_into(
        store_file, regions=["eastus"], shapes=SIZES, prices_url=retail.url, graph_url=None
    )
    before = stored(store_file)
    items = copy.deepcopy(retail.items)
    bad = next(
        i
        for i in items
        if i["armSkuName"] == "Standard_NC6s_v3"
        and i["armRegionName"] == "eastus"
        and i["skuName"] == "NC6s v3"
        and "Windows" not in i["productName"]
    )
    bad.update(change)
    retail.items = items
    if change.get("skuName", "") is None:
        retail._schema = type(retail._schema)({})  # the fake itself would not send it
    with pytest.raises(InputError, match=problem) as failed:
        collect_azure_into(
            store_file, regions=["eastus"], shapes=SIZES, prices_url=retail.url, graph_url=None
        )
    assert "\n" not in str(failed.value) and "nothing was stored" in str(failed.value)
    after = stored(store_file)
    for table in before:
        pd.testing.assert_frame_equal(after[table], before[table])


@pytest.mark.parametrize(
    ("body", "wrong"),
    [
        ({"Items": {}}, "Items a dict, not a list"),
        ({"Items": "Standard_NC6s_v3"}, "Items a str, not a list"),
        ({"Items": None}, "Items a NoneType, not a list"),
        ({"Items": [["Standard_NC6s_v3", 0.9]]}, "item 0 a list, not an object"),
        ({"Items": [{"armSkuName": 6, "retailPrice": 0.9}]}, "item 0's armSkuName 6, not text"),
        ({"Items": [], "NextPageLink": 2}, "NextPageLink a int, not text"),
    ],
)
def test_a_wrongly_typed_retail_answer_fails_in_one_line_never_as_a_region_selling_nothing(
    retail: RetailPricesFake, cli: CliRun, store_file: Path, body: dict, wrong: str
) -> None:
    retail.damaged_next = [Answer(200, body)]
    result = cli("collect", "azure", "--regions", "eastus", "--gpu", "V100")
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"error: collect azure: the Retail Prices API at {retail.url} answered its JSON with "
        f"{wrong}; check SPOTWISE_AZURE_PRICES_URL (nothing was stored)"
    ]
    assert all(frame.empty for frame in stored(store_file).values())


def test_a_next_page_link_to_another_host_is_refused(retail: RetailPricesFake) -> None:
    class Elsewhere(httpx.Client):
        def get(self, url: object, **kwargs: object) -> httpx.Response:
            answer = super().get(url, **kwargs)  # type: ignore[arg-type]
            body = answer.json()
            body["NextPageLink"] = "https://prices.example.net/api/retail/prices?$skip=40"
            return httpx.Response(200, json=body)

    from spotwise.pricing.clouds.azure.prices import fetch_retail

    with Elsewhere() as http, pytest.raises(SourceUnavailable, match="on another host"):
        fetch_retail(http, retail.url, "eastus", max_attempts=1)


def test_without_the_azure_extra_resource_graph_names_it_and_retail_prices_are_kept(
    retail: RetailPricesFake, graph: ResourceGraphFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "azure.mgmt.resourcegraph", None)
    report = collect(retail, graph.url)
    assert report.messages == (
        "resource graph: skipped, it needs Azure's client libraries: pip install "
        "'spotwise[azure]' (the retail prices were collected)",
    )
    assert len(report.frames["prices"]) > 0


def test_a_region_that_could_not_be_one_never_reaches_a_query(retail: RetailPricesFake) -> None:
    with pytest.raises(InputError, match="not an Azure region name"):
        collect_azure(
            regions=["eastus' or serviceName eq 'x"],
            shapes=SIZES,
            prices_url=retail.url,
            graph_url=None,
            now=NOW,
        )
    assert retail.requests == []


@pytest.mark.slow
def test_collect_azure_command_prints_what_it_stored_and_a_rerun_adds_nothing(
    retail: RetailPricesFake, graph: ResourceGraphFake, cli: CliRun, store_file: Path
) -> None:
    first = cli("collect", "azure", "--regions", "eastus,westeurope", "--gpu", "A100")
    again = cli("collect", "azure", "--regions", "eastus,westeurope", "--gpu", "A100")
    assert first.returncode == 0, first.stderr
    assert "collected azure from" in first.stderr and "Resource Graph page" in first.stderr
    assert "of 5 shapes in 2 regions" in first.stderr and "eviction bands: 10 rows" in first.stderr
    assert again.returncode == 0 and "(0 new)" in again.stderr
    tables = stored(store_file)
    assert set(tables["prices"]["source"]) == {"azure-retail", "azure-resource-graph"}
    assert len(tables["bands"]) == 10


def test_an_endpoint_setting_over_plain_http_elsewhere_is_refused_in_one_line(
    cli: CliRun,
) -> None:
    result = cli(
        "collect",
        "azure",
        "--regions",
        "eastus",
        env={"SPOTWISE_AZURE_PRICES_URL": "http://prices.example.net/api/retail/prices"},
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: SPOTWISE_AZURE_PRICES_URL: must be https:// (plain http only to "
        "127.0.0.1 or localhost); fix or unset the variable"
    ]


def test_the_fakes_refuse_what_the_documentation_does_not_allow(
    retail: RetailPricesFake, graph: ResourceGraphFake
) -> None:
    """The checks have teeth: each request below breaks the documentation and is refused."""
    for params in [
        {"$filter": "colour eq 'blue'"},
        {"$filter": "serviceName eq 'Virtual Machines' or armRegionName eq 'eastus'"},
        {"$top": "5"},
        {"api-version": "2019-01-01"},
    ]:
        assert httpx.get(retail.url, params=params).status_code == 400, params
    assert len(retail.refused) == 4
    retail.refused.clear()
    token = httpx.get(
        graph.identity_env()["IDENTITY_ENDPOINT"],
        params={"api-version": "2019-08-01", "resource": "https://management.azure.com"},
        headers={"X-IDENTITY-HEADER": graph.identity_secret},
    ).json()["access_token"]
    url = f"{graph.url}/providers/Microsoft.ResourceGraph/resources"
    for body in [
        {"query": "Resources | take 1"},  # not a SpotResources query the fake answers
        {"subscriptions": "s1", "query": "x"},  # subscriptions is a list in QueryRequest
        {"query": "x", "options": {"resultFormat": "csv"}},
        {"query": "x", "colour": "blue"},
        {"subscriptions": ["s1"]},  # QueryRequest requires query
    ]:
        answer = httpx.post(
            url,
            params={"api-version": "2021-03-01"},
            json=body,
            headers={"Authorization": f"Bearer {token}"},
        )
        assert answer.status_code == 400, body
    assert len(graph.refused) == 5
    graph.refused.clear()

"""``spotwise collect huawei`` with the real SDK against the loopback ECS and BSS fake: BSS list
prices and spot sell status stored with their source and time, given spot prices labelled, a
rerun adding nothing; bad flags refused before a store exists; then ``plan --gpu A100`` ranks the
Huawei pool."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from spotwise.executor.clouds.huawei.fake.api import ACCESS_KEY, SECRET_KEY, HuaweiApi
from spotwise.executor.clouds.huawei.fake.bss import PriceCatalog
from spotwise.executor.clouds.huawei.fake.ecs import SOLD, SOLD_OUT, EcsProject
from tests.conftest import CliRun

PROJECT = "0123456789abcdef0123456789abcdef"
A100 = "p3.2xlarge.8"


@pytest.fixture
def huawei() -> Iterator[HuaweiApi]:
    sell = {("ap-southeast-1a", A100): SOLD, ("ap-southeast-1b", A100): SOLD_OUT}
    api = HuaweiApi(
        EcsProject(PROJECT, sell), PriceCatalog({("ap-southeast-1", f"{A100}.linux"): 3.9})
    )
    try:
        yield api
    finally:
        api.close()


def env(api: HuaweiApi, **more: str) -> dict[str, str]:
    return {
        "HUAWEICLOUD_SDK_AK": ACCESS_KEY,
        "HUAWEICLOUD_SDK_SK": SECRET_KEY,
        "HUAWEICLOUD_SDK_PROJECT_ID": PROJECT,
        "HUAWEICLOUD_SDK_DOMAIN_ID": "0123456789abcdef0123456789abcdee",
        "SPOTWISE_HUAWEI_ECS_URL": api.url,
        "SPOTWISE_HUAWEI_BSS_URL": api.url,
        **more,
    }


def rows(store_file: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(store_file), read_only=True) as db:
        return db.execute(sql).fetchall()


@pytest.mark.slow
def test_collect_huawei_stores_list_prices_sell_status_and_given_spot_prices_then_plan_ranks_them(
    huawei: HuaweiApi, cli: CliRun, store_file: Path
) -> None:
    args = ("collect", "huawei", "--regions", "ap-southeast-1", "--gpu", "A100")
    given = ("--spot-prices", f"{A100}@ap-southeast-1a=1.25")
    first = cli(*args, *given, env=env(huawei))
    assert first.returncode == 0, first.stderr
    said = " ".join((first.stdout + first.stderr).split())
    assert "2 prices (2 new)" in said and "spot sells in 1 of 2 pools" in said
    prices = rows(
        store_file,
        "SELECT source, region, zone, instance_type, market, price FROM prices ORDER BY market",
    )
    assert prices == [
        ("huawei-bss-list", "ap-southeast-1", "", A100, "on_demand", 3.9),
        ("huawei-given", "ap-southeast-1", "ap-southeast-1a", A100, "spot", 1.25),
    ]
    sells = rows(
        store_file,
        "SELECT source, zone, available_nodes, target_nodes FROM availability ORDER BY zone",
    )
    assert sells == [
        ("huawei-sell-policies", "ap-southeast-1a", 1, 1),
        ("huawei-sell-policies", "ap-southeast-1b", 0, 1),
    ]
    (rated,) = huawei.sent("list_on_demand_resource_ratings")
    assert rated.body["product_infos"][0]["resource_spec"] == f"{A100}.linux"

    plan = cli("plan", "--gpu", "A100", "--gpu-hours", "100", "--deadline-hours", "200", "--json")
    assert plan.returncode == 0, plan.stderr
    best = json.loads(plan.stdout)["recommended"][0]
    assert (best["pool"], best["spot_price"], best["on_demand_price"]) == (
        f"huawei:ap-southeast-1a:{A100}",
        1.25,
        3.9,
    )
    assert best["spot_price_source"] == "store: huawei-given, ap-southeast-1a"
    assert best["on_demand_source"] == "store: huawei-bss-list, ap-southeast-1"


@pytest.mark.parametrize(
    ("flags", "refused"),
    [
        (("--spot-prices", "p3.2xlarge.8=1.2"), "is not FLAVOR@ZONE=USD"),
        (("--spot-prices", "p3.2xlarge.8@eu-west-0a=1.2"), "eu-west-0 is not one of --regions"),
        (("--flavors", "m6.large.8"), "not in the GPU table for huawei"),
    ],
)
def test_a_bad_flag_is_refused_in_one_line_and_leaves_no_store(
    huawei: HuaweiApi, cli_in_process: CliRun, store_file: Path, flags: tuple, refused: str
) -> None:
    result = cli_in_process(
        "collect", "huawei", "--regions", "ap-southeast-1", *flags, env=env(huawei)
    )
    assert result.returncode != 0
    assert refused in result.stdout + result.stderr
    assert not store_file.exists()
    assert huawei.log == []


def test_a_region_that_is_not_huaweis_never_reaches_an_endpoint(
    huawei: HuaweiApi, cli_in_process: CliRun
) -> None:
    region = "ap-southeast-1.evil.example"
    result = cli_in_process("collect", "huawei", "--regions", region, env=env(huawei))
    assert (
        result.returncode != 0 and "is not a Huawei Cloud region" in result.stdout + result.stderr
    )
    assert huawei.log == []


def test_where_bss_refuses_the_sell_status_is_kept_and_the_refusal_is_a_line(
    cli_in_process: CliRun, store_file: Path
) -> None:
    sell = {("ap-southeast-1a", A100): SOLD}
    api = HuaweiApi(EcsProject(PROJECT, sell), PriceCatalog({}, currency="CNY"))
    try:
        result = cli_in_process(
            "collect", "huawei", "--regions", "ap-southeast-1", "--gpu", "A100", env=env(api)
        )
    finally:
        api.close()
    said = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 0, said
    assert "list prices of ap-southeast-1: skipped" in said and "no price for" in said
    assert rows(store_file, "SELECT zone, available_nodes FROM availability") == [
        ("ap-southeast-1a", 1)
    ]
    assert rows(store_file, "SELECT count(*) FROM prices") == [(0,)]

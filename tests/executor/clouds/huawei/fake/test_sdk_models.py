"""The wire form read from the installed SDK: routes, required fields, types, named faults."""

from __future__ import annotations

import pytest

from spotwise.executor.clouds.huawei.fake.sdk_models import Sdk, WireError


@pytest.fixture(scope="module")
def ecs() -> Sdk:
    return Sdk.load("huaweicloudsdkecs.v2", "EcsClient")


def test_an_operation_is_read_from_the_clients_http_info(ecs: Sdk) -> None:
    create = ecs.operation("create_servers")
    assert (create.method, create.path, create.body) == (
        "POST",
        "/v1.1/{project_id}/cloudservers",
        "CreateServersRequestBody",
    )
    policies = ecs.operation("list_flavor_sell_policies")
    assert {"flavor_id", "sell_status", "availability_zone_id"} <= policies.query
    assert policies.match("GET", "/v1/p1/cloudservers/flavor-sell-policies") == {"project_id": "p1"}
    assert policies.match("POST", "/v1/p1/cloudservers/flavor-sell-policies") is None


def test_required_fields_are_those_the_init_sets_unconditionally(ecs: Sdk) -> None:
    assert ecs.required("CreateServersRequestBody") == {"server"}
    assert {"imageRef", "flavorRef", "name", "vpcid", "nics", "root_volume"} <= ecs.required(
        "PrePaidServer"
    )
    assert "extendparam" not in ecs.required("PrePaidServer")


def test_the_spot_fields_take_their_wire_names_and_types(ecs: Sdk) -> None:
    spot = {"marketType": "spot", "spotPrice": "1.25", "interruption_policy": "immediate"}
    ecs.check("PrePaidServerExtendParam", spot)
    with pytest.raises(WireError, match=r"body\.spotPrice: a str, not a number"):
        ecs.check("PrePaidServerExtendParam", spot | {"spotPrice": 1.25})
    with pytest.raises(WireError, match=r"body\.market_type: PrePaidServerExtendParam has no such"):
        ecs.check("PrePaidServerExtendParam", {"market_type": "spot"})


def test_a_nested_fault_is_named_by_its_json_path(ecs: Sdk) -> None:
    server = {
        "imageRef": "i",
        "flavorRef": "f",
        "name": "n",
        "vpcid": "v",
        "nics": [{"subnet_id": "s"}, {"subnet_id": 7}],
        "root_volume": {"volumetype": "SSD"},
    }
    with pytest.raises(WireError) as wrong:
        ecs.check("CreateServersRequestBody", {"server": server})
    assert wrong.value.field == "body.server.nics[1].subnet_id"
    with pytest.raises(WireError, match="a bool, not a string"):
        ecs.check("CreateServersRequestBody", {"server": server | {"nics": []}, "dry_run": "yes"})


def test_an_answer_may_leave_required_fields_out(ecs: Sdk) -> None:
    ecs.check("ServerDetail", {"id": "x", "status": "ACTIVE"}, complete=False)
    with pytest.raises(WireError, match="required by ServerDetail"):
        ecs.check("ServerDetail", {"id": "x", "status": "ACTIVE"})


def test_a_missing_sdk_names_the_extra_that_brings_it() -> None:
    with pytest.raises(RuntimeError, match=r"spotwise\[huawei\]"):
        Sdk.load("huaweicloudsdknotthere.v2", "NoClient")

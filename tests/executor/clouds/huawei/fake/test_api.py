"""The ECS and BSS fake, driven by the real SDK clients: a spot server created with its bid and
interruption policy, listed by tag, shown, tagged, taken back, deleted; a sold-out pool fails
its job; list prices; a request the SDK's models do not allow is refused by name."""

from __future__ import annotations

import pytest

from spotwise.executor.clouds.huawei.fake.api import HuaweiApi
from tests.executor.clouds.huawei.conftest import (
    A100,
    PROJECT,
    REGION,
    ZONE_A,
    ZONE_B,
    bss_client,
    ecs_client,
)


def spot_server(zone: str, bid: str = "1.20") -> object:
    from huaweicloudsdkecs import v2

    return v2.CreateServersRequest(
        body=v2.CreateServersRequestBody(
            server=v2.PrePaidServer(
                image_ref="img-ubuntu-2204",
                flavor_ref=A100,
                name="spotwise-job",
                vpcid="vpc-1",
                nics=[v2.PrePaidServerNic(subnet_id="subnet-1")],
                root_volume=v2.PrePaidServerRootVolume(volumetype="SSD", size=100),
                availability_zone=zone,
                extendparam=v2.PrePaidServerExtendParam(
                    market_type="spot", spot_price=bid, interruption_policy="immediate"
                ),
                server_tags=[v2.PrePaidServerTag(key="spotwise-job", value="j-1")],
            )
        )
    )


def test_a_spot_server_is_created_with_its_bid_and_found_by_its_tag(huawei: HuaweiApi) -> None:
    from huaweicloudsdkecs import v2

    client = ecs_client(huawei)
    created = client.create_servers(spot_server(ZONE_A, bid="1.75"))
    assert client.show_job(v2.ShowJobRequest(job_id=created.job_id)).status == "SUCCESS"
    (server_id,) = created.server_ids
    sent = huawei.sent("create_servers")[0].body["server"]["extendparam"]
    assert sent == {"marketType": "spot", "spotPrice": "1.75", "interruption_policy": "immediate"}
    listed = client.list_servers_details(v2.ListServersDetailsRequest(tags="spotwise-job=j-1"))
    assert [s.id for s in listed.servers] == [server_id]
    assert (
        client.list_servers_details(v2.ListServersDetailsRequest(tags="spotwise-job=j-2")).count
        == 0
    )
    tag = v2.BatchAddServerTag(key="spotwise-run", value="r-1")
    client.batch_create_server_tags(
        v2.BatchCreateServerTagsRequest(
            server_id=server_id,
            body=v2.BatchCreateServerTagsRequestBody(action="create", tags=[tag]),
        )
    )
    tags = client.show_server_tags(v2.ShowServerTagsRequest(server_id=server_id)).tags
    assert {(t.key, t.value) for t in tags} == {("spotwise-job", "j-1"), ("spotwise-run", "r-1")}
    shown = client.show_server(v2.ShowServerRequest(server_id=server_id)).server
    assert (shown.status, shown.os_ext_a_zavailability_zone) == ("ACTIVE", ZONE_A)


def test_a_taken_back_server_shows_deleted_and_a_deleted_one_is_gone(huawei: HuaweiApi) -> None:
    from huaweicloudsdkcore.exceptions.exceptions import ClientRequestException
    from huaweicloudsdkecs import v2

    client = ecs_client(huawei)
    first, second = (client.create_servers(spot_server(ZONE_A)).server_ids[0] for _ in range(2))
    huawei.ecs.take_back(first)
    assert client.show_server(v2.ShowServerRequest(server_id=first)).server.status == "DELETED"
    client.delete_servers(
        v2.DeleteServersRequest(body=v2.DeleteServersRequestBody(servers=[v2.ServerId(id=second)]))
    )
    with pytest.raises(ClientRequestException) as gone:
        client.show_server(v2.ShowServerRequest(server_id=second))
    assert gone.value.status_code == 404


def test_a_sold_out_pool_fails_the_create_job(huawei: HuaweiApi) -> None:
    from huaweicloudsdkecs import v2

    client = ecs_client(huawei)
    created = client.create_servers(spot_server(ZONE_B))
    job = client.show_job(v2.ShowJobRequest(job_id=created.job_id))
    assert (job.status, created.server_ids) == ("FAIL", [])
    assert "sold out" in job.fail_reason


def test_sell_policies_filter_by_zone_and_status(huawei: HuaweiApi) -> None:
    from huaweicloudsdkecs import v2

    client = ecs_client(huawei)
    sold = client.list_flavor_sell_policies(v2.ListFlavorSellPoliciesRequest(sell_status="sellout"))
    assert [(p.availability_zone_id, p.flavor_id) for p in sold.sell_policies] == [(ZONE_B, A100)]


def test_bss_rates_a_flavor_by_the_hour(huawei: HuaweiApi) -> None:
    from huaweicloudsdkbss import v2

    product = v2.DemandProductInfo(
        id="1",
        cloud_service_type="hws.service.type.ec2",
        resource_type="hws.resource.type.vm",
        resource_spec=f"{A100}.linux",
        region=REGION,
        usage_factor="Duration",
        usage_value=1,
        usage_measure_id=4,
        subscription_num=1,
    )
    request = v2.RateOnDemandReq(project_id=PROJECT, product_infos=[product])
    rated = bss_client(huawei).list_on_demand_resource_ratings(
        v2.ListOnDemandResourceRatingsRequest(body=request)
    )
    assert (float(rated.official_website_amount), rated.currency) == (3.9, "USD")


def test_a_body_the_models_do_not_allow_is_refused_naming_the_field(huawei: HuaweiApi) -> None:
    from huaweicloudsdkcore.exceptions.exceptions import ClientRequestException

    request = spot_server(ZONE_A)
    request.body.server.extendparam.spot_price = 1.2  # type: ignore[attr-defined]
    with pytest.raises(ClientRequestException) as refused:
        ecs_client(huawei).create_servers(request)
    assert refused.value.status_code == 400
    assert "body.server.extendparam.spotPrice: a str, not a number" in refused.value.error_msg
    assert huawei.sent("create_servers") == []

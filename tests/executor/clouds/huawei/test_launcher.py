"""The Huawei Cloud launcher with the real ECS SDK against the loopback ECS fake and moto's S3
server as OBS: a spot server created with the bid as ``spotPrice`` (read from the request the
fake recorded), tagged with the job id; its output and exit code read back from the bucket; a
take-back told from a failure; a sold-out zone is no capacity; secrets refused."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator

import boto3
import pytest

from spotwise.executor.clouds.base import CloudOptions
from spotwise.executor.clouds.code_bundle import ShippedCode
from spotwise.executor.clouds.huawei.fake.api import HuaweiApi
from spotwise.executor.clouds.huawei.launcher import HuaweiLauncher
from spotwise.executor.clouds.huawei.target import HuaweiTarget
from spotwise.executor.errors import PREEMPTED_EXIT_CODE, ExecutorError, NoCapacity
from spotwise.executor.launchers.base import Placement
from tests.executor.clouds.huawei.conftest import (
    A100,
    PROJECT,
    ZONE_A,
    ZONE_B,
    csms_client,
    ecs_client,
)

CODE = ShippedCode("spotwise/code/aa11/workdir.tar.gz", "spotwise/code/bb22/spotwise-0.1-any.whl")


@pytest.fixture
def obs(moto_server: str) -> Iterator[tuple[object, str]]:
    """An S3 client of moto's server (OBS's S3 API) and a fresh bucket."""
    bucket = f"spotwise-{uuid.uuid4().hex[:10]}"
    client = boto3.client("s3", endpoint_url=moto_server, region_name="us-east-1")
    client.create_bucket(Bucket=bucket)
    yield client, bucket


def launcher(
    huawei: HuaweiApi,
    obs: tuple[object, str],
    secrets: dict[str, str] | None = None,
    **options: object,
) -> HuaweiLauncher:
    client, bucket = obs
    values: dict[str, object] = {
        "project": PROJECT,
        "image": "img-ubuntu-2204-torch",
        "bucket": bucket,
        "identity": "spotwise-instance",
        "network": ("vpc-1/subnet-1",),
        "instance_type": A100,
        "zones": (ZONE_A, ZONE_B),
        "endpoint_url": huawei.url,
        "max_price": 2.0,
    }
    target = HuaweiTarget.from_options(CloudOptions(**(values | options)))  # type: ignore[arg-type]
    return HuaweiLauncher(
        target=target,
        ecs=ecs_client(huawei),
        obs=client,
        csms=csms_client(huawei),
        job_id="job-7",
        code=CODE,
        secrets=secrets,
    )


def spot(zone: str, bid: float | None) -> Placement:
    return Placement(market="spot", pool=zone, price=1.1, bid=bid)


def test_a_spot_server_carries_the_bid_as_spot_price_and_the_job_id(
    huawei: HuaweiApi, obs: tuple[object, str]
) -> None:
    jobs = launcher(huawei, obs)
    instance = jobs.launch(spot(ZONE_A, bid=1.5), ["python", "train.py"], {}, log=lambda _: None)
    (sent,) = huawei.sent("create_servers")
    server = sent.body["server"]
    assert server["extendparam"] == {
        "chargingMode": "postPaid",
        "regionID": "ap-southeast-1",
        "marketType": "spot",
        "spotPrice": "1.5000",
        "interruption_policy": "immediate",
    }
    assert {"key": "spotwise-job", "value": "job-7"} in server["server_tags"]
    assert server["metadata"] == {"agency_name": "spotwise-instance"}
    assert (
        "spotwise.executor.clouds.huawei.on_instance"
        in base64.b64decode(server["user_data"]).decode()
    )
    assert jobs.running_instances() == [instance.instance_id]


def test_the_bid_never_exceeds_max_price_and_on_demand_sends_none(
    huawei: HuaweiApi, obs: tuple[object, str]
) -> None:
    jobs = launcher(huawei, obs)
    jobs.launch(spot(ZONE_A, bid=9.0), ["true"], {}, log=lambda _: None)
    jobs.launch(Placement(market="on-demand", pool=ZONE_A, price=3.9), ["true"], {}, log=print)
    capped, on_demand = (r.body["server"]["extendparam"] for r in huawei.sent("create_servers"))
    assert capped["spotPrice"] == "2.0000"
    assert "marketType" not in on_demand and "spotPrice" not in on_demand


def test_output_and_exit_code_come_back_from_the_bucket(
    huawei: HuaweiApi, obs: tuple[object, str]
) -> None:
    client, bucket = obs
    lines: list[str] = []
    jobs = launcher(huawei, obs)
    instance = jobs.launch(spot(ZONE_A, bid=None), ["python", "train.py"], {}, log=lines.append)
    folder = f"spotwise/jobs/job-7/{instance.instance_id}"
    chunk = "\n".join(
        json.dumps(r)
        for r in ({"stream": "out", "line": "step 1"}, {"stream": "out", "line": '{"step": 2}'})
    )
    client.put_object(Bucket=bucket, Key=f"{folder}/log/00000001.jsonl", Body=chunk.encode())  # type: ignore[attr-defined]
    assert instance.poll() is None
    client.put_object(Bucket=bucket, Key=f"{folder}/exit", Body=b"0")  # type: ignore[attr-defined]
    assert instance.poll() == 0
    assert lines == ["step 1"] and instance.events[0]["step"] == 2


def test_a_taken_back_server_is_a_preemption_and_one_spotwise_ended_is_not(
    huawei: HuaweiApi, obs: tuple[object, str]
) -> None:
    jobs = launcher(huawei, obs)
    taken = jobs.launch(spot(ZONE_A, bid=None), ["true"], {}, log=lambda _: None)
    huawei.ecs.take_back(taken.instance_id)
    assert taken.poll() == PREEMPTED_EXIT_CODE
    ended = jobs.launch(spot(ZONE_A, bid=None), ["true"], {}, log=lambda _: None)
    ended.terminate()
    assert ended.poll() == 1
    assert jobs.running_instances() == []


def test_a_sold_out_zone_is_no_capacity(huawei: HuaweiApi, obs: tuple[object, str]) -> None:
    with pytest.raises(NoCapacity, match="sold out"):
        launcher(huawei, obs).launch(spot(ZONE_B, bid=None), ["true"], {}, log=lambda _: None)


def test_secrets_live_in_csms_as_long_as_the_launcher_and_only_their_names_boot(
    huawei: HuaweiApi, obs: tuple[object, str]
) -> None:
    jobs = launcher(huawei, obs, secrets={"HF_TOKEN": "s3cret"})
    assert list(huawei.secrets.secrets) == ["spotwise-job-7-HF_TOKEN"]
    jobs.launch(spot(ZONE_A, bid=None), ["true"], {}, log=lambda _: None)
    script = base64.b64decode(huawei.sent("create_servers")[0].body["server"]["user_data"])
    assert b"HF_TOKEN=spotwise-job-7-HF_TOKEN" in script and b"s3cret" not in script
    jobs.close()
    assert huawei.secrets.secrets == {}


def test_a_bad_secret_name_and_incomplete_settings_are_refused_before_any_request(
    huawei: HuaweiApi, obs: tuple[object, str]
) -> None:
    with pytest.raises(ExecutorError, match="use letters, digits and _"):
        launcher(huawei, obs, secrets={"HF-TOKEN;x": "v"})
    with pytest.raises(ExecutorError, match=r"needs --image, --bucket"):
        launcher(huawei, obs, image=None, bucket=None)
    assert huawei.log == []

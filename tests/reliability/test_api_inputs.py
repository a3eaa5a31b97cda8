"""The policy API under any input: any JSON (NaN and Infinity included), damaged valid
requests, huge and deeply nested bodies, bytes that are not JSON. Never a 5xx, never an echo of
a large input, and a real server stays up through all of it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spotwise.policy.service.api import MAX_BODY_BYTES, create_app
from spotwise.policy.service.service import DecisionService
from spotwise.policy.traces import load_traces
from tests.conftest import API_TOKEN, DATA

BUNDLED = DATA / "traces/cbl/availability/1-node/aws-02-15-2023"
CLIENT = TestClient(create_app(DecisionService(load_traces(BUNDLED)), None))
VALID: dict[str, Any] = {
    "policy": "best",
    "job": {
        "compute_hours": 48,
        "deadline_hours": 60,
        "spot_price": 0.918,
        "on_demand_price": 3.06,
    },
    "state": {"elapsed_hours": 1.0, "progress_hours": 0.5},
    "pools": {"us-east-1a_v100_1": {"available": True}, "us-west-2c_v100_1": {"available": False}},
}
LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
)
ANY_JSON = st.recursive(
    LEAVES,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner, max_size=5)
    ),
    max_leaves=25,
)


def post(body: bytes, path: str = "/v1/decision") -> httpx.Response:
    return CLIENT.post(path, content=body, headers={"Content-Type": "application/json"})


def assert_answered(response: httpx.Response, sent: bytes) -> None:
    assert response.status_code < 500, (response.status_code, sent[:200], response.text[:500])
    response.json()  # always a JSON body
    assert len(response.content) < 20_000  # errors never echo a large input


@settings(
    max_examples=250, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
@pytest.mark.slow
@given(body=ANY_JSON)
def test_any_json_body_gets_a_4xx_or_an_answer(body: object) -> None:
    sent = json.dumps(body, allow_nan=True).encode()
    assert_answered(post(sent), sent)


def _paths(node: object, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(node, dict):
        return [prefix] + [p for k, v in node.items() for p in _paths(v, (*prefix, k))]
    return [prefix]


@settings(
    max_examples=250, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
@pytest.mark.slow
@given(data=st.data())
def test_a_valid_request_with_one_field_damaged_never_makes_a_server_error(
    data: st.DataObject,
) -> None:
    body = json.loads(json.dumps(VALID))
    where = data.draw(st.sampled_from(_paths(body)[1:]))
    node = body
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = data.draw(ANY_JSON)
    sent = json.dumps(body, allow_nan=True).encode()
    assert_answered(post(sent), sent)


@pytest.mark.parametrize(
    "sent",
    [
        b'{"policy": NaN}',
        json.dumps({**VALID, "job": {**VALID["job"], "spot_price": float("nan")}}).encode(),
        json.dumps(
            {**VALID, "state": {"elapsed_hours": float("inf"), "progress_hours": 0}}
        ).encode(),
        b"[" * 60_000,
        b"\xff\xfe\x00garbage",
        b"",
        b"null",
        json.dumps({**VALID, "policy": "/tmp/model.zip"}).encode(),
    ],
    ids=[
        "nan-token",
        "nan-price",
        "inf-hours",
        "deep-nesting",
        "not-utf8",
        "empty",
        "null",
        "path",
    ],
)
def test_malformed_bodies_get_a_4xx(sent: bytes) -> None:
    response = post(sent)
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:300])
    assert_answered(response, sent)


def test_a_body_over_the_limit_gets_413_before_it_is_parsed() -> None:
    huge = b'{"pools": {' + b'"p": {"available": true},' * 500_000 + b"}}"
    response = post(huge)
    assert response.status_code == 413 and len(response.content) < 200

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams
        for _ in range(100):
            yield b" " * 10_000

    streamed = CLIENT.post(
        "/v1/decision", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert streamed.status_code == 413
    assert MAX_BODY_BYTES < 1_000_000


def test_a_real_server_stays_up_through_hostile_bodies(api_server: str) -> None:
    hostile = [
        b'{"job": {"compute_hours": NaN}}',
        b"[" * 60_000,
        b"x" * (10 * 1024 * 1024),
        b"\x00\x01\x02",
    ]
    auth = {"Authorization": f"Bearer {API_TOKEN}"}
    with httpx.Client(base_url=api_server, timeout=30, headers=auth) as client:
        for body in hostile:
            response = client.post(
                "/v1/decision", content=body, headers={"Content-Type": "application/json"}
            )
            assert 400 <= response.status_code < 500, response.status_code
            assert len(response.content) < 20_000
        assert client.get("/healthz").json()["status"] == "ok"
        answer = client.post("/v1/decision", json=VALID)
        assert answer.status_code == 200 and answer.json()["action"] in (
            "wait",
            "spot",
            "on-demand",
        )

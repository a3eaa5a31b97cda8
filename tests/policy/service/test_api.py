"""The policy API: auth, validation, decisions, a schema-driven fuzz run, real HTTP serving."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings

from spotwise.policy.policies.base import JobContext
from spotwise.policy.policies.risk import job_history
from spotwise.policy.policies.risk_aware import RiskAware
from spotwise.policy.service.api import create_app
from spotwise.policy.service.client import HttpClient, InProcessClient
from spotwise.policy.service.schemas import DecisionRequest, JobTerms
from spotwise.policy.service.service import DecisionService, RequestError
from spotwise.policy.traces import load_traces
from spotwise.pricing.forecast.risk_forecasters import SHIPPED_RISK
from tests.conftest import API_TOKEN, DATA, CliRun

BUNDLED = DATA / "traces/cbl/availability/1-node/aws-02-15-2023"
TOKEN = API_TOKEN
AUTH = {"Authorization": f"Bearer {TOKEN}"}
JOB = {"compute_hours": 48, "deadline_hours": 60, "spot_price": 0.918, "on_demand_price": 3.06}

SERVICE = DecisionService(load_traces(BUNDLED))
APP = create_app(SERVICE, TOKEN)


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(APP)


def body(**state: Any) -> dict[str, Any]:
    pools = {name: {"available": i % 3 == 0} for i, name in enumerate(SERVICE.pools)}
    return {
        "job": JOB,
        "state": {"elapsed_hours": 1.0, "progress_hours": 0.5, **state},
        "pools": pools,
    }


def test_health_is_open_and_everything_else_needs_the_token(client: TestClient) -> None:
    health = client.get("/healthz").json()
    assert health["status"] == "ok" and health["saturated"] is False
    assert (health["in_flight"], health["max_in_flight"], health["max_per_client"]) == (0, 4, 3)
    assert client.post("/v1/decision", json=body()).status_code == 401
    wrong = {"Authorization": "Bearer nope"}
    assert client.post("/v1/decision", json=body(), headers=wrong).status_code == 401
    assert client.get("/v1/forecast/us-east-1a_v100_1").status_code == 401
    assert client.post("/v1/decision", json=body(), headers=AUTH).status_code == 200


def test_a_decision_names_the_action_pool_cost_and_reason(client: TestClient) -> None:
    decision = client.post("/v1/decision", json=body(), headers=AUTH).json()
    assert decision["action"] == "spot" and decision["market"] == "spot"
    assert decision["pool"] in [p for i, p in enumerate(SERVICE.pools) if i % 3 == 0]
    assert decision["checkpoint_interval_minutes"] > 0
    assert 0 < decision["expected_cost_usd"] < 48.2 * 3.06
    assert decision["pool"] in decision["reason"]


def test_a_spot_decision_quotes_the_forecast_the_policy_decided_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reason's forecast run is the chosen pool's fresh run by the forecast the policy
    read, named by its label: here a variant with a 2 h half-life (not the service's own)."""
    policies: list[RiskAware] = []
    reset = RiskAware.reset

    def with_a_variant(self: RiskAware, context: JobContext) -> None:
        reset(self, context)
        self.forecast = SHIPPED_RISK.variant(half_life_hours=2.0).fit(job_history(context))
        policies.append(self)

    monkeypatch.setattr(RiskAware, "reset", with_a_variant)
    decision = SERVICE.decide(DecisionRequest.model_validate(body()))
    (chosen,) = policies
    assert decision.action == "spot" and decision.pool is not None
    assert decision.risk_model == "survival-h2-w1-r12"
    z = list(SERVICE.pools).index(decision.pool)
    run_h = chosen.forecast.expected_run(z, fresh=True) * SERVICE.history.gap_seconds / 3600
    assert round(run_h, 2) != round(SERVICE.forecast(decision.pool).mean_run_hours, 2)
    assert f"forecast run {run_h:.2f} h (survival-h2-w1-r12)" in decision.reason


def test_a_spot_decision_of_a_policy_without_a_forecast_quotes_the_shipped_one(
    client: TestClient,
) -> None:
    decision = client.post("/v1/decision", json={**body(), "policy": "greedy"}, headers=AUTH)
    assert decision.json()["action"] == "spot"
    assert decision.json()["risk_model"] == SHIPPED_RISK.label == "survival-v1"


def test_a_blind_controller_gets_a_launch_request_over_the_pools_worth_asking(
    client: TestClient,
) -> None:
    """A controller that sees only its own pool (probe mode) reports each pool as last seen,
    with its age or never; it is told to ask for capacity, best pools first, and a pool seen
    down just now is left out of the request."""
    names = list(SERVICE.pools)
    pools: dict[str, Any] = {n: {"available": False, "seen_minutes_ago": None} for n in names}
    pools[names[0]] = {"available": False, "seen_minutes_ago": 0}
    pools[names[1]] = {"available": True, "seen_minutes_ago": 90}
    request = {
        "job": JOB,
        "state": {"elapsed_hours": 1.0, "progress_hours": 0.5},
        "pools": pools,
        "observe": "probe",
    }
    decision = client.post("/v1/decision", json=request, headers=AUTH).json()
    assert decision["action"] == "spot" and decision["pool"] == decision["request_pools"][0]
    assert names[0] not in decision["request_pools"] and names[1] in decision["request_pools"]
    assert set(decision["request_pools"]) <= set(names)
    seeing = client.post("/v1/decision", json=body(), headers=AUTH).json()
    assert seeing["request_pools"] == [seeing["pool"]]  # seeing every pool: the one chosen


def test_the_safety_net_answers_on_demand_when_slack_is_gone(client: TestClient) -> None:
    late = body(elapsed_hours=11.7, progress_hours=0.0)
    decision = client.post("/v1/decision", json=late, headers=AUTH).json()
    assert decision["action"] == "on-demand"
    assert decision["reason"].startswith("safety net")


def test_an_on_demand_decision_by_rule_5_says_so(client: TestClient) -> None:
    """12 h into 48 h of work in 60 h with 5 h done, every pool down: 4.6 h behind uniform
    progress, and 43 h of work at the default prior's 2 h runs would take 4.8 h of
    changeovers, more than the slack above the safety net: on demand, by rule 5, and the
    reason says it."""
    request = body(elapsed_hours=12.0, progress_hours=5.0)
    request["job"] = {**JOB, "changeover_hours": 0.2}
    request["pools"] = {name: {"available": False} for name in SERVICE.pools}
    decision = client.post("/v1/decision", json=request, headers=AUTH).json()
    assert decision["action"] == "on-demand"
    assert decision["reason"].startswith("on-demand: 4.6")  # in whole ticks of the history
    assert "h behind uniform progress" in decision["reason"]
    assert "prior's 2.00 h runs" in decision["reason"]


@pytest.mark.parametrize("policy", SERVICE.policies)
def test_a_late_job_is_told_on_demand_on_spot_as_when_idle(client: TestClient, policy: str) -> None:
    """Slack -8 h (20 h gone, 48 h of work left, 60 h deadline): the deadline is lost wherever
    the job runs; on spot as idle it is told on-demand, where no preemption delays it more."""
    for state in ({}, {"instance": "spot", "pool": SERVICE.pools[0]}):
        late = {**body(elapsed_hours=20.0, progress_hours=0.0, **state), "policy": policy}
        decision = client.post("/v1/decision", json=late, headers=AUTH).json()
        assert decision["action"] == "on-demand", (state, decision)
        assert decision["reason"].startswith("late: the deadline cannot be met")
    if policy == "on_demand":
        return  # on-demand whatever the state
    on_time = body(elapsed_hours=5.0, progress_hours=4.0, instance="spot", pool=SERVICE.pools[0])
    kept = client.post("/v1/decision", json={**on_time, "policy": policy}, headers=AUTH).json()
    assert (kept["action"], kept["pool"]) == ("spot", SERVICE.pools[0])  # not late: kept


def test_progress_past_the_work_is_answered_done(client: TestClient) -> None:
    done = client.post("/v1/decision", json=body(progress_hours=50.0), headers=AUTH).json()
    assert (done["action"], done["pool"], done["market"]) == ("done", None, None)
    assert done["expected_cost_usd"] == 0 and done["reason"].startswith("the job is done")
    at_the_end = client.post(
        "/v1/decision", json=body(elapsed_hours=50.0, progress_hours=48.0), headers=AUTH
    ).json()
    assert at_the_end["action"] != "done"  # its command has yet to end: placed as usual


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("job", "compute_hours"), True),
        (("job", "compute_hours"), "48"),
        (("state", "progress_hours"), "1"),
        (("probe_seconds",), False),
        (("pools", "us-east-1a_v100_1", "available"), 1),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_not_coerced(
    client: TestClient, where: tuple[str, ...], value: object
) -> None:
    request = json.loads(json.dumps(body()))
    target = request
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    response = client.post("/v1/decision", json=request, headers=AUTH)
    assert response.status_code == 422, response.json()
    assert [str(p) for p in response.json()["detail"][0]["loc"]][-1] == where[-1]


def test_the_schema_documents_every_refusal_and_the_query_still_reads_numbers(
    client: TestClient,
) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    decision = paths["/v1/decision"]["post"]["responses"]
    assert {"200", "400", "401", "404", "408", "413", "422", "503"} <= set(decision)
    assert "Retry-After" in decision["503"]["headers"]
    assert {"401", "422", "503"} <= set(paths["/v1/pools"]["get"]["responses"])
    ranked = client.get("/v1/pools", params={**JOB, "compute_hours": "48"}, headers=AUTH)
    assert ranked.status_code == 200  # a query is text: read as numbers there


def test_the_docs_pages_need_no_network(client: TestClient) -> None:
    import re

    for page in ("/docs", "/redoc"):
        html = client.get(page)
        assert html.status_code == 200
        assets = re.findall(r'(?:src|href)="([^"]+)"', html.text)
        assert assets and all(a.startswith("/") and not a.startswith("//") for a in assets), (
            page,
            assets,
        )
        assert "http://" not in html.text and "https://" not in html.text
        for asset in assets:
            served = client.get(asset)
            assert served.status_code == 200 and len(served.content) > 1000, asset
    bundle = client.get("/static-offline-docs/swagger-ui-bundle.js").text
    assert "SwaggerUIBundle" in bundle  # Swagger UI 5: it reads OpenAPI 3.1
    assert client.get("/openapi.json").json()["openapi"].startswith("3.1")


@pytest.mark.parametrize(
    ("change", "status", "words"),
    [
        ({"policy": "cheapest"}, 422, "unknown policy"),
        ({"policy": "omniscient"}, 422, "this service serves"),
        ({"pools": {"mars-1a": {"available": True}}}, 404, "unknown pool"),
        ({"state": {"elapsed_hours": 1, "progress_hours": 0, "instance": "spot"}}, 422, "pool"),
        ({"surprise": 1}, 422, "surprise"),
    ],
)
def test_bad_requests_get_a_clear_4xx(
    client: TestClient, change: dict[str, Any], status: int, words: str
) -> None:
    response = client.post("/v1/decision", json={**body(), **change}, headers=AUTH)
    assert response.status_code == status
    assert words in json.dumps(response.json())


def test_a_job_that_cannot_meet_its_deadline_is_told_on_demand(client: TestClient) -> None:
    late = {**body(), "job": {**JOB, "deadline_hours": 10}}
    decision = client.post("/v1/decision", json=late, headers=AUTH).json()
    assert decision["action"] == "on-demand" and "cannot be met" in decision["reason"]


def test_a_spot_pool_missing_from_the_request_counts_as_available(client: TestClient) -> None:
    state = {"instance": "spot", "pool": "us-west-2c_v100_1"}
    request = {**body(**state), "pools": {"us-east-1a_v100_1": {"available": False}}}
    response = client.post("/v1/decision", json=request, headers=AUTH)
    assert response.status_code == 200
    assert response.json()["pool"] in (None, "us-west-2c_v100_1")


def test_a_request_without_pools_chooses_among_every_pool_counted_available(
    client: TestClient,
) -> None:
    """The docs' promise: pools left out (or none named) all count as available now, at the
    job's spot price; the decision is the one for every pool named available."""
    request = {k: v for k, v in body().items() if k != "pools"}
    left_out = client.post("/v1/decision", json=request, headers=AUTH)
    assert left_out.status_code == 200, left_out.json()
    every = {name: {"available": True} for name in SERVICE.pools}
    named = client.post("/v1/decision", json={**request, "pools": every}, headers=AUTH)
    assert left_out.json() == named.json()
    assert left_out.json()["action"] == "spot" and left_out.json()["pool"] in SERVICE.pools
    empty = client.post("/v1/decision", json={**request, "pools": {}}, headers=AUTH)
    assert empty.json() == left_out.json()


def test_the_schema_says_pools_may_be_left_out_and_names_the_service_s_own(
    client: TestClient,
) -> None:
    request = client.get("/openapi.json").json()["components"]["schemas"]["DecisionRequest"]
    assert "pools" not in request["required"]
    assert request["properties"]["pools"]["propertyNames"]["enum"] == list(SERVICE.pools)


def test_pools_are_ranked_by_expected_cost_and_forecasts_are_served(client: TestClient) -> None:
    ranks = client.get("/v1/pools", params=JOB, headers=AUTH).json()
    assert [r["pool"] for r in ranks] and len(ranks) == len(SERVICE.pools)
    costs = [r["expected_cost_usd"] for r in ranks]
    assert costs == sorted(costs) and costs[0] < ranks[0]["on_demand_cost_usd"]
    forecast = client.get("/v1/forecast/us-east-1a_v100_1", headers=AUTH).json()
    assert 0 <= forecast["available_share"] <= 1 and forecast["mean_run_hours"] > 0
    assert {r["risk_model"] for r in ranks} == {forecast["risk_model"]} == {"survival-v1"}
    assert client.get("/v1/forecast/mars-1a", headers=AUTH).status_code == 404


@pytest.fixture(scope="module")
def api_schema() -> schemathesis.schemas.BaseSchema:
    """The service's OpenAPI schema, loaded when a fuzz test runs (not at collection, where it
    took seconds in every worker). The learned models are built first, as a served API builds
    each at its first request: the fuzz judges answers, and a first ppo request that imports
    torch on a busy machine outlasted the ASGI client's 10 s (a timeout, not an answer)."""
    for name in SERVICE.models.names:
        SERVICE.models.policy(name)
    return schemathesis.openapi.from_asgi("/openapi.json", APP)


schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.mark.slow
@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_generated_request_makes_a_server_error(case: schemathesis.Case) -> None:
    response = case.call(headers=AUTH)
    assert response.status_code < 500, (case.path, case.body, response.text)


@pytest.mark.slow
@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_schema_valid_request_is_answered(case: schemathesis.Case) -> None:
    """The schema carries every rule the service enforces (schemathesis's positive data
    acceptance: a request the schema allows is not refused)."""
    from schemathesis.checks import positive_data_acceptance

    case.call_and_validate(headers=AUTH, checks=[positive_data_acceptance])


@pytest.mark.slow
def test_http_and_in_process_clients_give_the_same_answers(api_server: str) -> None:
    http, local = HttpClient(api_server, TOKEN), InProcessClient(SERVICE)
    request = DecisionRequest.model_validate(body(elapsed_hours=5.0, progress_hours=4.0))
    assert http.decide(request) == local.decide(request)
    job = JobTerms.model_validate(JOB)
    assert http.rank_pools(job) == local.rank_pools(job)
    assert http.forecast("us-west-2c_v100_1") == local.forecast("us-west-2c_v100_1")
    with pytest.raises(RequestError, match="401"):
        HttpClient(api_server).forecast("us-west-2c_v100_1")
    http.close()


@pytest.mark.slow
def test_serve_answers_token_holders_beside_slow_unauthenticated_sockets(api_server: str) -> None:
    """The measured attack on `spotwise serve`: eight sockets send decision headers announcing
    60,000 bytes, 7 bytes of body and no token, and stay open. Each is told 401 at once; every
    token holder's decision is served; /healthz says ok with no place taken."""
    import socket

    host, port = api_server.removeprefix("http://").split(":")
    head = (
        f"POST /v1/decision HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        "Content-Length: 60000\r\n\r\n"
    ).encode()
    socks = []
    try:
        for _ in range(8):
            sock = socket.create_connection((host, int(port)), timeout=15)
            socks.append(sock)
            sock.sendall(head + b'{"job":')
        for sock in socks:
            assert sock.recv(4096).startswith(b"HTTP/1.1 401 ")
        http = HttpClient(api_server, TOKEN, busy_wait_s=0)  # a 503 fails at once
        request = DecisionRequest.model_validate(body())
        assert [http.decide(request).action for _ in range(8)] == ["spot"] * 8
        health = httpx.get(f"{api_server}/healthz", timeout=15).json()
        assert health["status"] == "ok" and health["in_flight"] == 0
        http.close()
    finally:
        for sock in socks:
            sock.close()


def test_serve_refuses_a_public_address_without_a_token(cli: CliRun) -> None:
    result = cli("serve", "--host", "0.0.0.0", env={"SPOTWISE_API_TOKEN": ""})
    assert result.returncode == 1
    assert "without a token" in result.stderr


@pytest.mark.slow
def test_bench_api_measures_capacity_then_holds_twice_that_load(cli: CliRun) -> None:
    result = cli("bench", "api", "--seconds", "2", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["capacity_rps"] > 0 and report["server_stayed_up"] is True
    calm, busy = report["runs"]["1x"], report["runs"]["2x"]
    for run in (calm, busy):
        assert run["errors"] == 0 and run["no_answer"] == 0  # every refusal is a 503
        assert run["served"] + run["shed"] == run["requests"]
        assert 0 < run["served_p50_ms"] <= run["served_p99_ms"]
    assert busy["shed"] > 0  # twice what it can serve: the excess is turned away


@pytest.mark.slow
def test_serve_warns_when_the_token_file_is_readable_by_others(cli: CliRun, tmp_path: Path) -> None:
    import socket

    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    with socket.socket() as taken:  # serve warns, then fails to bind this port and exits
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        token_file.chmod(0o644)
        result = cli("serve", "--token-file", str(token_file), "--port", port)
        assert result.returncode != 0
        assert "readable by group or others" in result.stderr and "chmod 600" in result.stderr
        token_file.chmod(0o600)
        quiet = cli("serve", "--token-file", str(token_file), "--port", port)
        assert quiet.returncode != 0 and "readable by group" not in quiet.stderr

"""Learned models load without unpickling, only from the folder chosen at start-up, and only
when their weights match the hash recorded at training time; a request names a policy, never a
file."""

from __future__ import annotations

import base64
import io
import json
import pickle
import zipfile
from pathlib import Path

import pytest
import torch
from fastapi.testclient import TestClient

from spotwise.policy import load
from spotwise.policy.errors import PolicyError, UnknownPolicy
from spotwise.policy.rl.catalog import SHIPPED_MODELS, ModelCatalog, shipped_models
from spotwise.policy.rl.model_files import AgentConfig, sha256_of
from spotwise.policy.service.api import create_app
from spotwise.policy.service.service import DecisionService
from spotwise.policy.traces import load_traces
from tests.conftest import DATA

BUNDLED = DATA / "traces/cbl/availability/1-node/aws-02-15-2023"
JOB = {"compute_hours": 48, "deadline_hours": 60, "spot_price": 0.918, "on_demand_price": 3.06}


class _Payload:
    """Unpickling this creates ``marker``: proof that loading ran the file's code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.marker), "w"))


def sb3_zip_with_payload(path: Path, marker: Path) -> Path:
    """A stable-baselines3-style model zip whose serialized settings carry a payload."""
    serialized = base64.b64encode(pickle.dumps(_Payload(marker))).decode()
    data = {"policy_class": {":type:": "<class 'type'>", ":serialized:": serialized}}
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data", json.dumps(data))
    return path


def pt_with_payload(folder: Path, marker: Path, name: str = "evil") -> Path:
    """A ``.pt`` holding a pickled payload, with a config that records its true hash."""
    folder.mkdir(parents=True, exist_ok=True)
    weights = folder / f"{name}.pt"
    buffer = io.BytesIO()
    torch.save({"x": _Payload(marker)}, buffer)
    weights.write_bytes(buffer.getvalue())
    config = json.loads((SHIPPED_MODELS / "ppo.json").read_text())
    config["weights_sha256"] = sha256_of(weights)
    weights.with_suffix(".json").write_text(json.dumps(config))
    return weights


def body(policy: str) -> dict[str, object]:
    return {
        "policy": policy,
        "job": JOB,
        "state": {"elapsed_hours": 1.0, "progress_hours": 0.5},
        "pools": {"us-east-1a_v100_1": {"available": True}},
    }


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app(DecisionService(load_traces(BUNDLED)), None))


def test_a_request_naming_a_model_file_is_refused_and_the_file_never_runs(
    client: TestClient, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    evil = sb3_zip_with_payload(tmp_path / "evil.zip", marker)
    for name in (str(evil), "../../evil.zip", "evil.zip", str(tmp_path / "evil")):
        response = client.post("/v1/decision", json=body(name))
        assert response.status_code == 422, (name, response.text)
    assert not marker.exists()


def test_a_request_may_name_only_what_the_service_serves(client: TestClient) -> None:
    served = client.get("/healthz").json()["policies"]
    assert {"best", "risk_aware", "ppo"} <= set(served) and "omniscient" not in served
    assert client.post("/v1/decision", json=body("ppo")).status_code == 200
    refused = client.post("/v1/decision", json=body("omniscient"))
    assert refused.status_code == 422 and "serves" in refused.text


def test_weights_holding_a_pickled_payload_are_refused_without_running_it(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "pwned"
    pt_with_payload(tmp_path / "models", marker)
    catalog = ModelCatalog(tmp_path / "models")  # the hash matches: the file is as trained
    with pytest.raises(PolicyError, match="not plain weights"):
        catalog.policy("evil")
    assert not marker.exists()


def test_weights_that_differ_from_the_recorded_hash_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    for suffix in (".pt", ".json"):
        (folder / f"ppo{suffix}").write_bytes((SHIPPED_MODELS / f"ppo{suffix}").read_bytes())
    ModelCatalog(folder)  # intact: loads
    weights = bytearray((folder / "ppo.pt").read_bytes())
    weights[len(weights) // 2] ^= 0x01
    (folder / "ppo.pt").write_bytes(bytes(weights))
    with pytest.raises(PolicyError, match="sha256 differs"):
        ModelCatalog(folder)


def test_models_are_named_by_stem_and_a_path_is_no_name() -> None:
    catalog = shipped_models()
    assert catalog.names == ("ppo",)
    assert load("ppo").name == "ppo"
    with pytest.raises(UnknownPolicy, match="choose from"):
        load(str(SHIPPED_MODELS / "ppo.pt"))
    with pytest.raises(UnknownPolicy, match="no model"):
        catalog.policy("../ppo")


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("encoder", "transformer", "encoder must be one of mlp, set"),
        ("net_arch", [32, 64, 64], "encoder must be one of mlp, set"),
        ("moves", "yes", "moves must be true or false"),
    ],
)
def test_a_config_naming_an_unknown_network_is_refused_before_any_weight_is_read(
    tmp_path: Path, field: str, value: object, says: str
) -> None:
    config = json.loads((SHIPPED_MODELS / "ppo.json").read_text())
    config[field] = value
    (tmp_path / "ppo.json").write_text(json.dumps(config))
    with pytest.raises(PolicyError, match=says):
        AgentConfig.read(tmp_path / "ppo.json")

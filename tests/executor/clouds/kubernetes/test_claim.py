"""The checkpoint claim sized from the job's state: one checkpoint × (the kept ones + the one
being written) + a margin, in whole GiB; its manifest validates against Kubernetes' published
schema and the fake apiserver takes it through the official client; the local cluster's claims
are sized so; bad input is refused in one line, and the command prints what `kubectl apply`
reads."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from spotwise.executor.clouds.kubernetes.claim import (
    GIB,
    KEPT,
    checkpoint_claim,
    claim_bytes,
    quantity,
)

MODULE = "spotwise.executor.clouds.kubernetes.claim"


def test_a_claim_holds_the_kept_checkpoints_the_one_in_flight_and_a_margin() -> None:
    assert claim_bytes(10 * GIB) == 50 * GIB  # 10 GiB × (3 + 1) × 1.25
    assert claim_bytes(10 * GIB, kept=1, margin=0.0) == 20 * GIB
    assert claim_bytes(7 * 10**9, kept=5, margin=0.1) == 44 * GIB  # 46.2e9 B: 43.03 GiB, up
    assert claim_bytes(1) == GIB  # 1 GiB at least
    assert claim_bytes(10 * GIB, kept=9) > claim_bytes(10 * GIB)  # grows with what is kept


def test_the_kept_default_is_the_guards_and_the_managers() -> None:
    pytest.importorskip("torch")
    from spotwise.executor.checkpoint.manager import CheckpointManager
    from spotwise.executor.training.guard import guard

    assert inspect.signature(guard).parameters["keep_latest_k"].default == KEPT
    assert inspect.signature(CheckpointManager).parameters["keep_latest_k"].default == KEPT


@pytest.mark.parametrize(
    ("state", "kept", "margin", "says"),
    [
        (0, 3, 0.25, "positive number of bytes"),
        (-5, 3, 0.25, "positive number of bytes"),
        (1.5, 3, 0.25, "positive number of bytes"),
        (GIB, 0, 0.25, "1 or more"),
        (GIB, 3, -0.1, "share of 0 or more"),
        (GIB, 3, float("nan"), "share of 0 or more"),
    ],
)
def test_a_size_that_is_none_is_refused_naming_why(
    state: Any, kept: int, margin: float, says: str
) -> None:
    with pytest.raises(ValueError, match=says):
        claim_bytes(state, kept=kept, margin=margin)


def test_the_manifest_is_a_claim_kubernetes_takes() -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    from spotwise.executor.clouds.kubernetes.fake.schema import KUBERNETES_VERSION

    claim = checkpoint_claim("ckpt-llama", 14 * 10**9, storage_class="standard-rwx")
    assert claim["spec"] == {
        "accessModes": ["ReadWriteMany"],
        "resources": {"requests": {"storage": "66Gi"}},  # 14e9 × 4 × 1.25 = 65.2 GiB, up
        "storageClassName": "standard-rwx",
    }
    assert claim["metadata"]["annotations"]["spotwise.dev/state-bytes"] == str(14 * 10**9)
    assert "spotwise.dev/job" not in claim["metadata"]["labels"]  # gc never takes it
    kubernetes_validate.validate(claim, KUBERNETES_VERSION, strict=True)
    assert "storageClassName" not in checkpoint_claim("c", GIB)["spec"]  # the default class
    with pytest.raises(ValueError, match="no claim name"):
        checkpoint_claim("Not_A_Name", GIB)
    with pytest.raises(ValueError, match="access mode"):
        checkpoint_claim("c", GIB, access_mode="ReadMostly")
    with pytest.raises(ValueError, match="whole number of GiB"):
        quantity(GIB + 1)


def test_the_local_clusters_claim_is_sized_from_the_state_and_read_back_by_the_client(
    tmp_path: Path,
) -> None:
    pytest.importorskip("kubernetes_validate")
    kubernetes = pytest.importorskip("kubernetes")
    from spotwise.executor.clouds.kubernetes.fake.local_cluster import NAMESPACE, LocalCluster

    local = LocalCluster(tmp_path / "cluster", state_bytes=30 * 10**9)
    try:
        api = kubernetes.config.new_client_from_config(config_file=str(local.kubeconfig))
        core: Any = kubernetes.client.CoreV1Api(api)
        found = core.read_namespaced_persistent_volume_claim("checkpoints", NAMESPACE)
        assert found.spec.resources.requests == {"storage": "140Gi"}  # 139.7 GiB, up
        assert found.status.phase == "Bound"
        made = checkpoint_claim("more", 2 * GIB, access_mode="ReadWriteOnce")
        core.create_namespaced_persistent_volume_claim(NAMESPACE, made)  # checked by the fake
        assert local.cluster.get("persistentvolumeclaims", NAMESPACE, "more")["spec"][
            "resources"
        ] == {"requests": {"storage": "10Gi"}}
    finally:
        local.close()


def test_the_command_prints_the_manifest_and_refuses_bad_input_in_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", MODULE, "checkpoints", "14", "--kept", "2"],
        capture_output=True,
        text=True,
        check=True,
    )
    claim = json.loads(done.stdout)
    assert claim["spec"]["resources"]["requests"]["storage"] == "49Gi"  # 14e9 × 3 × 1.25
    for bad, says in (
        (["checkpoints", "0"], "positive number of GB"),
        (["checkpoints", "inf"], "positive number of GB"),
        (["checkpoints", "1e9"], "no one claim's"),
        (["checkpoints", "3", "--storage-class", "a;rm -rf /"], "no storage class name"),
        (["checkpoints", "3", "--kept", "0"], "1 or more"),
        (["Bad_Name", "3"], "no claim name"),
    ):
        refused = subprocess.run(
            [sys.executable, "-m", MODULE, *bad], capture_output=True, text=True
        )
        assert refused.returncode == 2, bad
        assert says in refused.stderr.splitlines()[-1]
        assert refused.stdout == ""

"""``gc`` on a namespace of the local cluster, through the one orphan rule: a Job beside its live
supervisor is left alone, one whose job has ended in the ledger is deleted with its Pods and
disruption budget, another host's is not this host's to judge, and the listing is paged."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kubernetes_validate")

from spotwise.core.clock import SYSTEM_CLOCK
from spotwise.executor.clouds.base import CloudOptions
from spotwise.executor.clouds.kubernetes import gc
from spotwise.executor.clouds.kubernetes.clients import api_client
from spotwise.executor.clouds.kubernetes.fake.local_cluster import (
    CONTEXT,
    NAMESPACE,
    LocalCluster,
)
from spotwise.executor.clouds.kubernetes.gc import KubernetesSweep
from spotwise.executor.clouds.kubernetes.launcher import KubernetesLauncher
from spotwise.executor.clouds.kubernetes.manifests import HOST_LABEL
from spotwise.executor.clouds.kubernetes.target import KubernetesTarget
from spotwise.executor.clouds.orphans import ledger_verdicts, this_host
from spotwise.executor.launchers.base import Placement
from spotwise.executor.ledger.ledger import JobInfo, JobStatus, Ledger, new_job_id
from spotwise.pricing.store import MarketStore

WAITING = ["python", "-c", "import time; time.sleep(600)"]


@pytest.fixture
def local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path / "cluster")
    monkeypatch.setenv("KUBECONFIG", str(cluster.kubeconfig))
    cluster.player.add_node("spot-a", labels={"karpenter.sh/capacity-type": "spot"})
    yield cluster
    cluster.close()


def target() -> KubernetesTarget:
    return KubernetesTarget.from_options(
        CloudOptions(
            project=f"{CONTEXT}/{NAMESPACE}",
            region="eks",
            image="python:3.11",
            bucket="checkpoints",
        )
    )


def ledger(store: Path, job_id: str) -> Ledger:
    """A job of this process (its supervisor, alive) in the ledger at ``store``."""
    with MarketStore.open(store):
        pass
    info = JobInfo(
        name="gc",
        command="python train.py",
        launcher="kubernetes",
        compute_hours=1.0,
        deadline_hours=2.0,
        on_demand_price=3.06,
        simulated=False,
    )
    return Ledger(store, info, job_id=job_id)


def launch(job_id: str, secrets: dict[str, str] | None = None) -> str:
    chosen = target()
    api = api_client(chosen, "test")
    launcher = KubernetesLauncher(target=chosen, api=api, job_id=job_id, secrets=secrets)
    return launcher.launch(Placement(market="spot", pool="any", price=1.0), WAITING, {}).name


def sweep() -> KubernetesSweep:
    chosen = target()
    return KubernetesSweep(chosen, api_client(chosen, "gc kubernetes"))


def test_gc_beside_a_live_job_ends_nothing_then_ends_it_once_the_ledger_has_it_ended(
    local: LocalCluster, tmp_path: Path
) -> None:
    store = tmp_path / "market.duckdb"
    job_id = new_job_id()
    record = ledger(store, job_id)
    name = launch(job_id, {"HF_TOKEN": "s3cret"})
    SYSTEM_CLOCK.sleep(0.3)
    judged = list(
        sweep().judged(ledger_verdicts(store), this_host(), named=frozenset(), store_path=store)
    )
    secret = f"spotwise-{job_id}"
    assert [(j.kind, j.resource, j.end) for j in judged] == [
        ("instance", name, False),
        ("secret", secret, False),
    ]
    assert all("live supervisor" in j.why for j in judged)

    record.finish(JobStatus.FAILED)  # its supervisor ended without cleaning up
    judged = list(
        sweep().judged(ledger_verdicts(store), this_host(), named=frozenset(), store_path=store)
    )
    assert [(j.resource, j.end) for j in judged] == [(name, True), (secret, True)]
    assert list(sweep().ended(judged)) == judged
    assert not local.cluster.items("jobs", NAMESPACE)
    assert not local.cluster.items("secrets", NAMESPACE)
    deadline = SYSTEM_CLOCK.monotonic() + 30
    while local.cluster.items("pods", NAMESPACE) and SYSTEM_CLOCK.monotonic() < deadline:
        SYSTEM_CLOCK.sleep(0.1)
    assert not local.cluster.items("pods", NAMESPACE)


def test_another_hosts_job_is_left_out_unless_named(local: LocalCluster, tmp_path: Path) -> None:
    store = tmp_path / "market.duckdb"
    name = launch("f00dfeedbeef")

    def other_host(job: dict) -> None:
        job["metadata"]["labels"][HOST_LABEL] = "another-box"

    local.cluster.update("jobs", NAMESPACE, name, other_host)
    assert list(sweep().judged(None, this_host(), named=frozenset(), store_path=store)) == []
    (named,) = sweep().judged(
        None, this_host(), named=frozenset({"f00dfeedbeef"}), store_path=store
    )
    assert (named.resource, named.end, named.why) == (name, True, "named with --job")


def test_the_listing_is_read_page_by_page(
    local: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gc, "PAGE", 1)
    names = {launch(new_job_id()) for _ in range(3)}
    judged = sweep().judged(None, None, named=frozenset(), store_path=tmp_path / "none.duckdb")
    found = [j for j in judged]
    assert {j.resource for j in found} == names and not any(j.end for j in found)
    pages = [p for m, p in local.server.requests if m == "GET" and p.endswith("/jobs")]
    assert len(pages) == 3

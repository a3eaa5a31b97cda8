"""The Kubernetes launcher end to end on the local cluster: the fake apiserver (every object
checked against the Kubernetes API's schema), reached through the official client from the
kubeconfig it writes, and the node player running each Pod as a process. The Job's first Pod
trains on a GKE Spot node under the guard; once it trained a step, the node is taken back
(tainted, ``DisruptionTarget``, SIGTERM): the guard commits its emergency checkpoint to the
claim within the grace and exits preempted, the Job's failure policy starts a new Pod without
using a retry on a new spot node, which resumes and ends bit for bit where an uninterrupted run
ends. Each Pod's log is read back apart; ``gc`` beside the live job ends nothing of it."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kubernetes_validate")

from spotwise.core.clock import SYSTEM_CLOCK
from spotwise.executor.clouds.base import CloudOptions
from spotwise.executor.clouds.kubernetes.clients import api_client
from spotwise.executor.clouds.kubernetes.fake.local_cluster import (
    CONTEXT,
    NAMESPACE,
    LocalCluster,
)
from spotwise.executor.clouds.kubernetes.gc import KubernetesSweep
from spotwise.executor.clouds.kubernetes.launcher import KubernetesLauncher
from spotwise.executor.clouds.kubernetes.target import KubernetesTarget
from spotwise.executor.clouds.orphans import ledger_verdicts, this_host
from spotwise.executor.launchers.base import Placement
from spotwise.executor.ledger.ledger import JobInfo, JobStatus, Ledger, new_job_id
from spotwise.executor.supervise.supervised import SupervisedJob, client_factory, supervise
from spotwise.executor.supervise.supervisor import SupervisorConfig
from spotwise.policy.service.schemas import JobTerms
from spotwise.pricing.operational import open_operational
from spotwise.pricing.store import MarketStore

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(420)]
SPOT = {"cloud.google.com/gke-spot": "true"}
ARGS = ("--epochs", "3", "--samples", "1024", "--step-sleep-s", "0.05")
TRAIN = ("python", "-m", "spotwise.executor.examples.train_mlp")


def reference(tmp_path: Path) -> dict[str, Any]:
    """The same training, uninterrupted, here."""
    out = tmp_path / "reference.json"
    ran = subprocess.run(
        [sys.executable, *TRAIN[1:], "--ckpt", str(tmp_path / "ref"), *ARGS, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    return dict(json.loads(out.read_text()))


def ledger(store: Path, job_id: str) -> Ledger:
    with MarketStore.open(store):
        pass
    info = JobInfo(
        name="e2e",
        command=" ".join(TRAIN),
        launcher="kubernetes",
        compute_hours=1.0,
        deadline_hours=2.0,
        on_demand_price=3.06,
        simulated=False,
    )
    return Ledger(store, info, job_id=job_id)


def test_a_reclaimed_gke_spot_pod_checkpoints_in_its_grace_and_a_new_pod_resumes_bit_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = LocalCluster(tmp_path / "cluster")
    monkeypatch.setenv("KUBECONFIG", str(local.kubeconfig))
    try:
        local.player.add_node("spot-a", labels=SPOT, gpus=1)
        target = KubernetesTarget.from_options(
            CloudOptions(
                project=f"{CONTEXT}/{NAMESPACE}",
                region="gke",
                image="us-docker.pkg.dev/acme/train/spotwise:1",
                bucket="checkpoints",
                instance_type="+1gpu",
            )
        )
        store = tmp_path / "market.duckdb"
        job_id = new_job_id()
        record = ledger(store, job_id)
        launcher = KubernetesLauncher(target=target, api=api_client(target, "e2e"), job_id=job_id)
        lines: list[str] = []
        command = [*TRAIN, "--ckpt", "/spotwise/checkpoints/e2e", *ARGS]
        command += ["--out", "/spotwise/result.json"]
        instance = launcher.launch(
            Placement(market="spot", pool="any", price=0.9), command, {}, lines.append
        )

        def trained() -> bool:
            assert instance.poll() is None, lines[-20:]
            return any(e["event"] == "first_step" for e in instance.events)

        deadline = SYSTEM_CLOCK.monotonic() + 120
        while not trained():
            assert SYSTEM_CLOCK.monotonic() < deadline, lines[-20:]
            SYSTEM_CLOCK.sleep(0.2)

        # gc beside the live job: its Job is left, nothing ends
        sweep = KubernetesSweep(target, api_client(target, "gc kubernetes"))
        beside = list(
            sweep.judged(ledger_verdicts(store), this_host(), named=frozenset(), store_path=store)
        )
        assert [(j.resource, j.end) for j in beside] == [(instance.name, False)]
        assert "live supervisor" in beside[0].why
        assert list(sweep.ended(beside)) == beside
        assert local.cluster.get("jobs", NAMESPACE, instance.name)

        began = SYSTEM_CLOCK.monotonic()
        local.player.take_back("spot-a")
        local.player.wait_gone("spot-a", timeout_s=target.grace + 10)
        took = SYSTEM_CLOCK.monotonic() - began
        assert took < target.grace and local.player.played.killed == [], took
        local.player.add_node("spot-b", labels=SPOT, gpus=1)

        deadline = SYSTEM_CLOCK.monotonic() + 240
        while (code := instance.poll()) is None:
            assert SYSTEM_CLOCK.monotonic() < deadline, lines[-20:]
            SYSTEM_CLOCK.sleep(0.3)
        assert code == 0, lines[-40:]
        assert instance.unknown == 0

        first, second = instance.pods()
        assert (first["node"], first["disrupted"], first["exit_code"]) == ("spot-a", True, 75)
        assert (second["node"], second["exit_code"]) == ("spot-b", 0)
        job = local.cluster.get("jobs", NAMESPACE, instance.name)
        assert job["status"].get("failed", 0) == 0  # the reclaim used no retry
        checkpoints = local.claims["checkpoints"] / "checkpoints" / "e2e"
        assert any(p.name.startswith("step-") for p in checkpoints.iterdir())
        resumed = [e for e in instance.events if e["event"] == "resumed"]
        assert len(resumed) == 1 and resumed[0]["step"] > 0
        result = json.loads((local.claims["checkpoints"] / "result.json").read_text())
        assert result == reference(tmp_path)

        logs = instance.pod_logs()  # per instance: each Pod's own log
        assert list(logs) == [first["name"], second["name"]]
        assert '"event": "fresh"' in logs[first["name"]]
        assert '"event": "resumed"' in logs[second["name"]]
        assert '"event": "fresh"' not in logs[second["name"]]

        record.finish(JobStatus.COMPLETED)
        instance.terminate()
        assert not local.cluster.items("jobs", NAMESPACE)
    finally:
        local.close()
    assert not local.player.errors


def test_the_supervisor_runs_a_job_through_a_reclaim_on_the_kubernetes_launcher(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The supervisor's own loop on the launcher: the job completes in the ledger, on one
    instance (the Job rode the reclaim out), its events those of both Pods; the ledger counts
    the reclaim a preemption and its SIGTERM a notice, with the disruption's reason."""
    local = LocalCluster(tmp_path / "cluster")
    monkeypatch.setenv("KUBECONFIG", str(local.kubeconfig))
    try:
        local.player.add_node("spot-a", labels=SPOT, gpus=1)
        target = KubernetesTarget.from_options(
            CloudOptions(
                project=f"{CONTEXT}/{NAMESPACE}",
                region="gke",
                image="us-docker.pkg.dev/acme/train/spotwise:1",
                bucket="checkpoints",
                instance_type="+1gpu",
            )
        )
        store = tmp_path / "market.duckdb"
        with MarketStore.open(store):
            pass
        job_id = new_job_id()
        launcher = KubernetesLauncher(target=target, api=api_client(target, "e2e"), job_id=job_id)
        config = SupervisorConfig(
            job=JobTerms(compute_hours=1, deadline_hours=3, spot_price=0.9, on_demand_price=3.06),
            stall_timeout_s=None,
        )
        command = [*TRAIN, "--ckpt", "/spotwise/checkpoints/sup", *ARGS]
        said: list[str] = []
        done: list[SupervisedJob] = []
        errors: list[BaseException] = []

        def run() -> None:
            try:
                done.append(
                    supervise(
                        command,
                        store_path=store,
                        launcher=launcher,
                        config=config,
                        client_for=client_factory("inproc", None),
                        name="k8s-e2e",
                        progress=said.append,
                        job_id=job_id,
                    )
                )
            except BaseException as error:
                errors.append(error)

        thread = threading.Thread(target=run)
        thread.start()
        logs = tmp_path / "cluster" / "logs" / NAMESPACE
        deadline = SYSTEM_CLOCK.monotonic() + 120
        while not any('"first_step"' in p.read_text() for p in logs.glob("*.log")):
            assert SYSTEM_CLOCK.monotonic() < deadline and not errors, (errors, said[-10:])
            SYSTEM_CLOCK.sleep(0.2)
        local.player.take_back("spot-a")
        local.player.add_node("spot-b", labels=SPOT, gpus=1)
        thread.join(timeout=240)
        assert not thread.is_alive() and not errors, (errors, said[-10:])
        (job,) = done
        assert job.report.status == "completed", said[-20:]
        kinds = [e["event"] for e in job.events]
        assert kinds.count("fresh") == 1 and kinds.count("resumed") == 1, kinds
        assert list(local.player.played.exits.values()) == [75, 0]  # preempted, then done
        report = job.report
        assert (report.instances, report.preemptions, report.notices) == (1, 1, 1), said[-20:]
        with open_operational(store) as kept:
            details = kept.query(
                "SELECT kind, detail FROM ledger WHERE job_id = ? AND kind IN "
                "('preemption', 'notice') ORDER BY kind",
                [job_id],
            )
        first = local.player.played.started[0]
        why = f"TerminationByKubelet ({first}; the instance rode it out)"
        assert [tuple(row) for row in details.itertuples(index=False)] == [
            ("notice", why),
            ("preemption", why),
        ]
        assert f"preempted on spot in any: {why}" in said
    finally:
        local.close()

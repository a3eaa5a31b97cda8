"""Kubernetes through the cloud seam, against the local cluster: the code is the image's (nothing
shipped, said on the run line), a Pod runs in a folder of the image, setup finds what the
cluster has and names what it lacks, a job's ended Jobs are not its instances, and its
checkpoints are not sized from here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kubernetes_validate")

from spotwise.executor.clouds.base import CloudOptions
from spotwise.executor.clouds.code_bundle import CodeInImage, ShippedCode
from spotwise.executor.clouds.kubernetes.cloud import KubernetesCloud
from spotwise.executor.clouds.kubernetes.fake.local_cluster import (
    CONTEXT,
    NAMESPACE,
    LocalCluster,
    spot_node,
)
from spotwise.executor.clouds.kubernetes.target import KubernetesTarget
from spotwise.executor.errors import ExecutorError
from spotwise.executor.launchers.base import Placement
from spotwise.executor.ledger.ledger import new_job_id

IMAGE = "us-docker.pkg.dev/acme/train/spotwise:1"


@pytest.fixture
def local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path / "cluster")
    monkeypatch.setenv("KUBECONFIG", str(cluster.kubeconfig))
    yield cluster
    cluster.close()


def target(**options: str) -> KubernetesTarget:
    given = {"project": f"{CONTEXT}/{NAMESPACE}", "region": "gke", "image": IMAGE}
    return KubernetesTarget.from_options(CloudOptions(**{**given, **options}))  # type: ignore[arg-type]


def test_ship_code_ships_nothing_and_says_the_image_runs_the_code(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = KubernetesCloud().ship_code(target(bucket="checkpoints", workdir="/app"))
    assert code == CodeInImage(image=IMAGE, workdir="/app")
    said = capsys.readouterr().err
    assert f"code: nothing shipped; each Pod runs the command in /app of {IMAGE}" in said
    with pytest.raises(ExecutorError, match="--bucket"):
        KubernetesCloud().ship_code(target())


def test_a_workdir_is_a_folder_inside_the_image_and_the_pods_working_dir(
    local: LocalCluster, tmp_path: Path
) -> None:
    for relative in ("src", "./app", "/app;rm -rf /"):
        with pytest.raises(ExecutorError, match="--workdir"):
            target(workdir=relative)
    work = tmp_path / "in-the-image"
    work.mkdir()
    cloud = KubernetesCloud()
    k8s = target(bucket="checkpoints", workdir=str(work))
    labels, taints = spot_node("gke")
    local.player.add_node("spot-1", labels=labels, taints=taints)
    launcher = cloud.launcher(k8s, cloud.ship_code(k8s), job_id=new_job_id())
    command = ["python", "-c", "import os; print(os.getcwd())"]
    instance = launcher.launch(Placement(market="spot", pool="any", price=1.0), command, {})
    (job,) = local.cluster.items("jobs", NAMESPACE)
    assert job["spec"]["template"]["spec"]["containers"][0]["workingDir"] == str(work)
    local.player.clock.sleep(0.1)
    deadline = local.player.clock.monotonic() + 60
    while (code := instance.poll()) is None:
        assert local.player.clock.monotonic() < deadline, instance.pods()
        local.player.clock.sleep(0.2)
    assert code == 0 and str(work) in "".join(instance.pod_logs().values())


def test_a_launcher_refuses_code_that_is_not_its_images(local: LocalCluster) -> None:
    cloud = KubernetesCloud()
    k8s = target(bucket="checkpoints")
    for other in (
        CodeInImage(image="ghcr.io/acme/other:2", workdir=None),
        ShippedCode("spotwise/code/w.tar.gz", "spotwise/code/spotwise-0.1.0-py3-none-any.whl"),
    ):
        with pytest.raises(ExecutorError, match=f"runs the code in its image {IMAGE}"):
            cloud.launcher(k8s, other, job_id=new_job_id())
    with pytest.raises(ExecutorError, match="job id"):
        cloud.launcher(k8s, cloud.ship_code(k8s), job_id="")


def test_setup_finds_the_namespace_and_claim_and_names_what_is_missing(
    local: LocalCluster,
) -> None:
    cloud, said = KubernetesCloud(), list[str]()
    done = cloud.set_up(target(bucket="checkpoints"), said.append)
    assert said == list(done.made) and all(line.startswith("found ") for line in said)
    assert any("check kubernetes" in line for line in done.next_steps)
    with pytest.raises(ExecutorError, match="--bucket CLAIM"):
        cloud.set_up(target(), said.append)
    with pytest.raises(ExecutorError, match=r"checkpoint claim: .*elsewhere.*fix: "):
        cloud.set_up(target(bucket="elsewhere"), said.append)
    with pytest.raises(ExecutorError, match=r"namespace: nowhere does not exist \(fix: kubectl"):
        cloud.set_up(target(bucket="checkpoints", project=f"{CONTEXT}/nowhere"), said.append)


def test_a_jobs_instances_are_its_jobs_that_have_not_ended(local: LocalCluster) -> None:
    cloud = KubernetesCloud()
    k8s = target(bucket="checkpoints")
    labels, taints = spot_node("gke")
    local.player.add_node("spot-1", labels=labels, taints=taints)
    job_id = new_job_id()
    launcher = cloud.launcher(k8s, cloud.ship_code(k8s), job_id=job_id)
    spot = Placement(market="spot", pool="any", price=1.0)
    done = launcher.launch(spot, ["python", "-c", "pass"], {})
    waiting = launcher.launch(spot, ["python", "-c", "import time; time.sleep(60)"], {})
    deadline = local.player.clock.monotonic() + 60
    while done.poll() is None:
        assert local.player.clock.monotonic() < deadline, done.pods()
        local.player.clock.sleep(0.2)
    assert cloud.job_instances(k8s, job_id) == [waiting.instance_id]
    assert cloud.job_instances(k8s, new_job_id()) == []
    waiting.kill()


def test_checkpoints_on_the_claim_are_not_sized_from_here() -> None:
    cloud = KubernetesCloud()
    k8s = target(bucket="checkpoints")
    url = cloud.checkpoint_url(k8s, "run-1")
    assert url == "/spotwise/checkpoints/run-1"
    with pytest.raises(ExecutorError, match="on the claim checkpoints in the cluster"):
        cloud.checkpoint_bytes(k8s, url)

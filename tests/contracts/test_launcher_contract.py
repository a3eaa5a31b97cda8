"""The Launcher / Instance contract: the local launcher (a replayed market, real processes),
the AWS launcher (moto's EC2 and S3 server) and the Kubernetes launcher (the fake apiserver
and its node player, through the official client) give the supervisor the same lifecycle.

- The market: every pool has an availability now and a history; the launcher's clock runs on.
- A launched instance runs (no exit code yet) until its command ends, then reports that code.
- A killed instance ends with a failure code; ``terminate`` leaves nothing running.
- An on-demand instance has no preemption coming.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import boto3
import numpy as np
import pytest

from spotwise.executor.clouds.aws.launcher import AwsInstance, AwsLauncher
from spotwise.executor.clouds.aws.local import amazon_image
from spotwise.executor.clouds.base import CloudOptions
from spotwise.executor.clouds.code_bundle import ShippedCode
from spotwise.executor.clouds.kubernetes.clients import api_client
from spotwise.executor.clouds.kubernetes.fake.local_cluster import (
    CONTEXT,
    NAMESPACE,
    LocalCluster,
)
from spotwise.executor.clouds.kubernetes.launcher import KubernetesInstance, KubernetesLauncher
from spotwise.executor.clouds.kubernetes.manifests import INSTANCE_LABEL
from spotwise.executor.clouds.kubernetes.target import KubernetesTarget
from spotwise.executor.launchers.base import Instance, Launcher, Placement
from spotwise.executor.launchers.local import LocalInstance, LocalLauncher, Replay
from spotwise.policy.service.schemas import JobTerms
from spotwise.policy.traces import Pool, TraceSet

JOB = JobTerms(compute_hours=1, deadline_hours=3, spot_price=0.9, on_demand_price=3.06)
RUNS = [  # until the file $EXIT_FILE names appears, then exit with the code in it
    sys.executable,
    "-c",
    "import os, pathlib, sys, time\n"
    "exit_file = pathlib.Path(os.environ['EXIT_FILE'])\n"
    "while not exit_file.exists(): time.sleep(0.02)\n"
    "sys.exit(int(exit_file.read_text()))",
]


class Rig(Protocol):
    """A launcher and the means to make its command end, as its cloud would report it."""

    @property
    def launcher(self) -> Launcher: ...

    env: dict[str, str]

    def finish(self, instance: Instance, code: int) -> None: ...

    def running(self, instance: Instance) -> bool: ...


@dataclass
class LocalRig:
    launcher: LocalLauncher
    env: dict[str, str]

    def finish(self, instance: Instance, code: int) -> None:
        Path(self.env["EXIT_FILE"]).write_text(str(code))

    def running(self, instance: Instance) -> bool:
        assert isinstance(instance, LocalInstance)
        return instance._process.poll() is None


@dataclass
class AwsRig:
    launcher: AwsLauncher
    env: dict[str, str]

    def finish(self, instance: Instance, code: int) -> None:
        """What the instance's user data does at the end: write the exit code, shut down."""
        assert isinstance(instance, AwsInstance)
        key = f"{self.launcher.prefix}/{instance.instance_id}/exit"
        self.launcher.s3.put_object(Bucket=self.launcher.bucket, Key=key, Body=f"{code}\n".encode())
        self.launcher.ec2.terminate_instances(InstanceIds=[instance.instance_id])

    def running(self, instance: Instance) -> bool:
        assert isinstance(instance, AwsInstance)
        return instance.instance_id in self.launcher.running_instances()


@dataclass
class KubernetesRig:
    launcher: KubernetesLauncher
    env: dict[str, str]

    def finish(self, instance: Instance, code: int) -> None:
        """The Pod's command ends with ``code`` (its process runs on this machine)."""
        Path(self.env["EXIT_FILE"]).write_text(str(code))

    def running(self, instance: Instance) -> bool:
        """A Pod of it runs and is not being deleted."""
        assert isinstance(instance, KubernetesInstance)
        found = self.launcher.core.list_namespaced_pod(
            self.launcher.target.namespace, label_selector=f"{INSTANCE_LABEL}={instance.name}"
        )
        return any(
            p.status and p.status.phase == "Running" and not p.metadata.deletion_timestamp
            for p in found.items
        )


def kubernetes_rig(request: pytest.FixtureRequest) -> Iterator[Rig]:
    """An EKS-like local cluster: one spot node and one on-demand node (Karpenter's labels)."""
    pytest.importorskip("kubernetes")
    pytest.importorskip("kubernetes_validate")
    tmp_path = request.getfixturevalue("tmp_path")
    cluster = LocalCluster(tmp_path / "cluster")
    request.getfixturevalue("monkeypatch").setenv("KUBECONFIG", str(cluster.kubeconfig))
    for name, capacity in (("spot-a", "spot"), ("on-demand-a", "on-demand")):
        cluster.player.add_node(name, labels={"karpenter.sh/capacity-type": capacity})
    options = CloudOptions(
        project=f"{CONTEXT}/{NAMESPACE}", region="eks", image="python:3.11", bucket="checkpoints"
    )
    target = KubernetesTarget.from_options(options)
    launcher = KubernetesLauncher(
        target=target, api=api_client(target, "contract"), job_id=f"c{time.monotonic_ns()}"
    )
    yield KubernetesRig(launcher, {"EXIT_FILE": str(tmp_path / "exit")})
    launcher.close()
    cluster.close()


@pytest.fixture(
    params=[
        "local",
        pytest.param("aws", marks=pytest.mark.slow),
        pytest.param("kubernetes", marks=pytest.mark.slow),
    ]
)
def rig(request: pytest.FixtureRequest) -> Iterator[Rig]:
    if request.param == "kubernetes":
        yield from kubernetes_rig(request)
        return
    if request.param == "local":
        pools = (Pool(name="z0"), Pool(name="z1"))
        traces = TraceSet(pools=pools, gap_seconds=60, available=np.ones((2, 200), dtype=bool))
        launcher = Replay(traces=traces, start_hours=1.0, scale=60.0).launcher()
        tmp_path = request.getfixturevalue("tmp_path")
        yield LocalRig(launcher, {"EXIT_FILE": str(tmp_path / "exit")})
        launcher.close()
        return
    moto = request.getfixturevalue("moto_server")
    session = boto3.Session(region_name="us-east-1")
    session.client("s3", endpoint_url=moto).create_bucket(Bucket="contract")
    ec2 = session.client("ec2", endpoint_url=moto)
    aws = AwsLauncher(
        session=session,
        region="us-east-1",
        zones=["us-east-1a", "us-east-1b"],
        instance_type="p3.2xlarge",
        image_id=amazon_image(ec2),
        bucket="contract",
        job_id=f"contract-{time.monotonic_ns()}",
        code=ShippedCode(
            "spotwise/code/a/workdir.tar.gz", "spotwise/code/b/spotwise-0-py3-none-any.whl"
        ),
        endpoint_url=moto,
    )
    yield AwsRig(aws, {})
    aws.close()


def until_ended(instance: Instance, timeout_s: float = 20.0) -> int:
    deadline = time.monotonic() + timeout_s
    while (code := instance.poll()) is None:
        assert time.monotonic() < deadline, "the instance never reported its end"
        time.sleep(0.05)
    return code


def test_the_market_has_every_pool_now_and_a_history_and_the_clock_runs_on(rig: Rig) -> None:
    launcher = rig.launcher
    assert launcher.pools and set(launcher.available()) == set(launcher.pools)
    history, gap = launcher.history()
    assert history.dtype == bool and history.shape[0] == len(launcher.pools) and gap > 0
    before = launcher.now_hours()
    launcher.wait(0.05)
    assert 0 <= before <= launcher.now_hours()


def test_an_instance_runs_until_its_command_ends_and_reports_its_code(rig: Rig) -> None:
    launcher = rig.launcher
    placement = Placement(market="on-demand", pool=None, price=JOB.on_demand_price)
    instance = launcher.launch(placement, RUNS, rig.env)
    assert instance.placement == placement and instance.started_hours >= 0
    assert instance.poll() is None and rig.running(instance)
    assert launcher.preemption(instance) is None  # on demand: nothing is coming
    rig.finish(instance, 3)
    assert until_ended(instance) == 3
    instance.terminate()
    assert not rig.running(instance)


def test_a_killed_spot_instance_ends_with_a_failure_and_leaves_nothing_running(rig: Rig) -> None:
    launcher = rig.launcher
    pool = launcher.pools[0]
    spot = Placement(market="spot", pool=pool, price=JOB.spot_price)
    instance = launcher.launch(spot, RUNS, rig.env)
    assert instance.poll() is None
    instance.kill()
    assert until_ended(instance) != 0
    instance.terminate()
    assert not rig.running(instance)

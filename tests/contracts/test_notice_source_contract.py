"""The NoticeSource contract, for every cloud source ``$SPOTWISE_NOTICES`` can name (against
the fake metadata endpoints on 127.0.0.1) and for SIGTERM, which is the notice of a cloud with
no metadata source (Kubernetes: the kubelet's SIGTERM to a Pod whose node is taken back, played
by the fake cluster's node player):

- nothing pending is no notice;
- garbage on every endpoint it reads is no notice, and no exception;
- an unreachable endpoint raises (the watcher counts it and polls on), never a notice;
- a pending preemption is a stop notice whose deadline is not in the past.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from spotwise.executor.clouds.registry import CLOUDS
from spotwise.executor.local_clouds.metadata import FakeMetadata
from spotwise.executor.notices import (
    NoticeSource,
    NoticeUnavailable,
    NoticeWatcher,
    SigtermSource,
)
from tests.conftest import ManualClock

GARBAGE = ["", "<html>oops</html>", "{{{", '{"action": 5}', "null", "\x00\xff" * 40, "TRUE " * 9]


def arm_garbage(fake: FakeMetadata, body: str) -> None:
    fake.aws_action = fake.aws_rebalance = body
    fake.gcp_preempted = body
    fake.azure_events = body
    fake.huawei_action = body


PREEMPTIONS: dict[str, Callable[[FakeMetadata], None]] = {
    "aws": lambda fake: setattr(
        fake, "aws_action", {"action": "terminate", "time": "2099-01-01T00:00:00Z"}
    ),
    "gcp": lambda fake: setattr(fake, "gcp_preempted", "TRUE"),
    "azure": lambda fake: setattr(
        fake,
        "azure_events",
        {"Events": [{"EventId": "E", "EventType": "Preempt", "NotBefore": ""}]},
    ),
    "huawei": lambda fake: setattr(
        fake, "huawei_action", {"action": "delete", "time": "2099-01-01T00:00:00Z"}
    ),
}


METADATA = sorted(name for name, cloud in CLOUDS.items() if cloud.notice_kind is not None)
"""The clouds whose notice is in their instances' metadata."""
SIGTERM = sorted(name for name, cloud in CLOUDS.items() if cloud.notice_kind is None)
"""The clouds whose notice is the SIGTERM their instances get (the guard always watches it)."""


def source(name: str, url: str) -> NoticeSource:
    """The source over the fake endpoint, patient enough for a loaded machine (what is under
    test here is what it makes of the answers, not how fast they come)."""
    kind = CLOUDS[name].notice_kind
    assert kind is not None
    return kind(url, timeout=10.0)


def test_every_cloud_source_has_a_preemption_case_here() -> None:
    assert set(PREEMPTIONS) == set(METADATA) and set(METADATA) | set(SIGTERM) == set(CLOUDS)
    assert SIGTERM == ["kubernetes"]


@pytest.mark.parametrize("name", METADATA)
def test_nothing_pending_is_no_notice(metadata: FakeMetadata, name: str) -> None:
    assert source(name, metadata.url).poll() is None


@pytest.mark.parametrize("name", METADATA)
@pytest.mark.parametrize("body", GARBAGE)
def test_garbage_is_no_notice(metadata: FakeMetadata, name: str, body: str) -> None:
    arm_garbage(metadata, body)
    watcher = NoticeWatcher([source(name, metadata.url)])
    watcher.poll_once()
    assert watcher.stop_notice is None and watcher.rebalances == 0 and watcher.errors == 0


@pytest.mark.parametrize("name", METADATA)
def test_an_unreachable_endpoint_raises_and_the_watcher_polls_on(name: str) -> None:
    kind = CLOUDS[name].notice_kind
    assert kind is not None
    unreachable = kind("http://127.0.0.1:9", timeout=0.5)
    with pytest.raises(NoticeUnavailable, match=r"127\.0\.0\.1:9"):
        unreachable.poll()
    watcher = NoticeWatcher([unreachable])
    watcher.poll_once()
    watcher.poll_once()
    assert watcher.errors == 2 and watcher.stop_notice is None


@pytest.mark.parametrize("name", METADATA)
def test_a_pending_preemption_is_a_stop_notice(metadata: FakeMetadata, name: str) -> None:
    PREEMPTIONS[name](metadata)
    notice = source(name, metadata.url).poll()
    assert notice is not None and notice.stop and notice.source == name
    assert notice.deadline is None or notice.deadline >= time.time() - 1


def test_sigterm_is_no_notice_until_the_signal_and_then_a_stop_notice() -> None:
    clock = ManualClock()
    sigterm = SigtermSource(grace_s=30, clock=clock)
    sigterm.install()
    try:
        assert sigterm.poll() is None
        os.kill(os.getpid(), signal.SIGTERM)
        notice = sigterm.poll()
    finally:
        sigterm.uninstall()
    assert notice is not None and notice.stop and notice.source == "sigterm"
    assert notice.deadline == clock.now + 30  # on the clock it was given


POD_UNDER_NOTICE = """
import json, sys, time
from spotwise.executor.notices import SigtermSource
source = SigtermSource(grace_s=float(sys.argv[1]))
source.install()
print("ready", flush=True)
while (notice := source.poll()) is None:
    time.sleep(0.05)
left_s = notice.deadline - time.time()
print(json.dumps({"source": notice.source, "stop": notice.stop, "left_s": left_s}), flush=True)
sys.exit(75)
"""
"""A Pod's command: a stop notice from the SIGTERM source, said as JSON, then exit 75."""


@pytest.mark.parametrize("name", SIGTERM)
def test_a_take_back_is_a_sigterm_stop_notice_inside_the_grace(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The node player takes back the Pod's node as a kubelet does: the Pod is marked
    DisruptionTarget and gets SIGTERM, which the guard's source turns into a stop notice with
    the cloud's window left, and it exits before its grace ends (no SIGKILL)."""
    from spotwise.executor.clouds.base import CloudOptions
    from spotwise.executor.clouds.kubernetes.fake.local_cluster import (
        CONTEXT,
        NAMESPACE,
        LocalCluster,
        spot_node,
    )
    from spotwise.executor.clouds.kubernetes.launcher import KubernetesInstance
    from spotwise.executor.launchers.base import Placement
    from spotwise.executor.ledger.ledger import new_job_id

    cloud = CLOUDS[name]
    local = LocalCluster(tmp_path / "cluster")
    try:
        labels, taints = spot_node("gke")
        local.player.add_node("spot-1", labels=labels, taints=taints, gpus=1)
        monkeypatch.setenv("KUBECONFIG", str(local.kubeconfig))
        target = cloud.target(
            CloudOptions(
                project=f"{CONTEXT}/{NAMESPACE}",
                region="gke",
                image="us-docker.pkg.dev/acme/train/spotwise:1",
                bucket="checkpoints",
            )
        )
        launcher = cloud.launcher(target, cloud.ship_code(target), job_id=new_job_id())
        command = ["python", "-c", POD_UNDER_NOTICE, str(cloud.notice_s)]
        instance = launcher.launch(Placement(market="spot", pool="any", price=1.0), command, {})
        assert isinstance(instance, KubernetesInstance)  # its Pods and their logs
        deadline = time.monotonic() + 60
        while "ready" not in "".join(instance.pod_logs().values()):
            assert time.monotonic() < deadline, instance.pods()
            time.sleep(0.1)
        local.player.take_back("spot-1")
        local.player.wait_gone("spot-1", timeout_s=cloud.notice_s + 10)
        pods = instance.pods()  # the Job's new Pod waits for a node
        (ended,) = [pod for pod in pods if pod["phase"] == "Failed"]
        assert ended["disrupted"] is True and ended["exit_code"] == 75, pods
        log = instance.pod_logs()[ended["name"]]
        (said,) = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
        assert said["source"] == "sigterm" and said["stop"] is True
        assert cloud.notice_s - 5 < said["left_s"] <= cloud.notice_s
        assert local.player.played.killed == []
        instance.terminate()
    finally:
        local.close()

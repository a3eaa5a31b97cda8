"""Notice sources against real endpoint shapes served on 127.0.0.1, and real signals."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

from spotwise.executor.clouds.aws.notice import AwsImds
from spotwise.executor.clouds.azure.notice import AzureScheduledEvents
from spotwise.executor.clouds.gcp.notice import GcpMetadata
from spotwise.executor.clouds.registry import sources_from_env
from spotwise.executor.notices import (
    Notice,
    NoticeWatcher,
    SigtermSource,
    preemption_times,
)
from spotwise.policy.traces import load_traces
from tests.conftest import DATA
from tests.executor.fake_metadata import FakeMetadata

PATIENT_S = 10.0
"""Seconds a source waits for the fake endpoint: a loaded machine may be slow to answer."""


def test_aws_nothing_pending_is_a_404_and_no_notice(metadata: FakeMetadata) -> None:
    source = AwsImds(metadata.url, timeout=PATIENT_S)
    assert source.poll() is None
    assert metadata.hits["/latest/api/token"] == 1
    assert metadata.hits["/latest/meta-data/spot/instance-action"] == 1


def test_aws_instance_action_is_a_stop_notice_with_its_deadline(metadata: FakeMetadata) -> None:
    metadata.aws_action = {"action": "terminate", "time": "2026-11-29T10:00:00Z"}
    notice = AwsImds(metadata.url, timeout=PATIENT_S).poll()
    assert notice is not None and notice.stop and notice.kind == "terminate"
    assert notice.deadline == pytest.approx(1795946400.0)


def test_aws_expired_token_gets_401_and_is_renewed_once(metadata: FakeMetadata) -> None:
    source = AwsImds(metadata.url, timeout=PATIENT_S)
    source.poll()
    metadata.expire_tokens()
    metadata.aws_action = {"action": "stop", "time": "2026-11-29T10:00:00Z"}
    notice = source.poll()
    assert notice is not None and notice.kind == "stop"
    assert metadata.hits["/latest/api/token"] == 2


def test_aws_rebalance_asks_for_a_checkpoint_not_a_stop_and_only_once(
    metadata: FakeMetadata,
) -> None:
    metadata.aws_rebalance = {"noticeTime": "2026-11-29T09:50:00Z"}
    source = AwsImds(metadata.url, timeout=PATIENT_S)
    first = source.poll()
    assert first is not None and first.kind == "rebalance" and not first.stop
    assert source.poll() is None


def test_gcp_preempted_true_is_a_stop_notice(metadata: FakeMetadata) -> None:
    source = GcpMetadata(metadata.url, timeout=PATIENT_S)
    assert source.poll() is None
    metadata.gcp_preempted = "garbage"
    assert source.poll() is None
    metadata.gcp_preempted = "TRUE"
    notice = source.poll()
    assert notice is not None and notice.kind == "preempt"
    assert notice.deadline == pytest.approx(time.time() + 30, abs=2)


def test_azure_preempt_event_is_a_stop_notice(metadata: FakeMetadata) -> None:
    source = AzureScheduledEvents(metadata.url, timeout=PATIENT_S)
    assert source.poll() is None
    metadata.azure_events = "{{{"
    assert source.poll() is None
    metadata.azure_events = {
        "DocumentIncarnation": 2,
        "Events": [
            {"EventId": "A1", "EventType": "Freeze", "NotBefore": ""},
            {"EventId": "B2", "EventType": "Preempt", "NotBefore": "Sun, 29 Nov 2026 10:00:00 GMT"},
        ],
    }
    notice = source.poll()
    assert notice is not None and notice.detail == "B2"
    assert notice.deadline == pytest.approx(1795946400.0)


def test_sigterm_is_a_stop_notice_and_the_handler_is_restored() -> None:
    before = signal.getsignal(signal.SIGTERM)
    source = SigtermSource(grace_s=30)
    watcher = NoticeWatcher([source], interval_s=0.05).start()
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        notice = watcher.check_signals()
        assert notice is not None and notice.kind == "terminate" and notice.stop
    finally:
        watcher.close()
    assert signal.getsignal(signal.SIGTERM) == before


def test_watcher_thread_picks_up_a_notice(metadata: FakeMetadata) -> None:
    seen: list[Notice] = []
    watcher = NoticeWatcher(
        [AwsImds(metadata.url, timeout=PATIENT_S)], interval_s=0.05, on_notice=seen.append
    ).start()
    try:
        metadata.aws_action = {"action": "terminate", "time": "2026-11-29T10:00:00Z"}
        deadline = time.monotonic() + 5
        while watcher.stop_notice is None and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        watcher.close()
    assert watcher.stop_notice is not None and seen == [watcher.stop_notice]


def test_a_real_trace_turns_into_its_preemption_times() -> None:
    traces = load_traces(DATA / "traces/cbl/preemption/1-node/aws-04-22-2023")
    available = traces.available[traces.names.index("us-east-1c_v100_1")]
    times = preemption_times(available, traces.gap_seconds, time_scale=100.0)
    losses = int(((available[:-1]) & (~available[1:])).sum())
    assert len(times) == losses > 3
    assert times == sorted(times) and times[0] > 0
    first_loss = int(np.flatnonzero(available[:-1] & ~available[1:])[0]) + 1
    assert times[0] == first_loss * traces.gap_seconds / 100.0


def test_sources_from_env_builds_named_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPOTWISE_NOTICES", "aws, gcp")
    monkeypatch.setenv("SPOTWISE_AWS_IMDS_URL", "http://127.0.0.1:1")
    sources = sources_from_env()
    assert [s.name for s in sources] == ["aws", "gcp"]
    monkeypatch.setenv("SPOTWISE_NOTICES", "oracle")
    with pytest.raises(ValueError, match="unknown source 'oracle'"):
        sources_from_env()

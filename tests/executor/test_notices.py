"""The notice watcher and SIGTERM (real signals), a source read on the fake metadata server on
127.0.0.1, preemption times from a trace, and sources named in the environment. Each cloud's
own source is tested in its folder (tests/executor/clouds/CLOUD/test_notice.py)."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

from spotwise.executor.clouds.aws.notice import AwsImds
from spotwise.executor.clouds.registry import sources_from_env
from spotwise.executor.local_clouds.metadata import FakeMetadata
from spotwise.executor.notices import (
    Notice,
    NoticeWatcher,
    SigtermSource,
    preemption_times,
)
from spotwise.policy.traces import load_traces
from tests.conftest import DATA
from tests.executor.conftest import PATIENT_S


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

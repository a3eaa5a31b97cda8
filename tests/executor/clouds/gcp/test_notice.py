"""GCP's notice source (the metadata server's ``preempted``) against the fake metadata server
on 127.0.0.1."""

from __future__ import annotations

import time

import pytest

from spotwise.executor.clouds.gcp.notice import GcpMetadata
from spotwise.executor.local_clouds.metadata import FakeMetadata
from tests.executor.conftest import PATIENT_S


def test_gcp_preempted_true_is_a_stop_notice(metadata: FakeMetadata) -> None:
    source = GcpMetadata(metadata.url, timeout=PATIENT_S)
    assert source.poll() is None
    metadata.gcp_preempted = "garbage"
    assert source.poll() is None
    metadata.gcp_preempted = "TRUE"
    notice = source.poll()
    assert notice is not None and notice.kind == "preempt"
    assert notice.deadline == pytest.approx(time.time() + 30, abs=2)

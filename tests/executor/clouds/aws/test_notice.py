"""AWS's notice source (IMDS: a token, then the spot instance action and the rebalance
recommendation) against the fake metadata server on 127.0.0.1."""

from __future__ import annotations

import pytest

from spotwise.executor.clouds.aws.notice import AwsImds
from spotwise.executor.local_clouds.metadata import FakeMetadata
from tests.executor.conftest import PATIENT_S


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

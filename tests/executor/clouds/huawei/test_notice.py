"""Huawei Cloud's notice source (``openstack/latest/spot/instance-action``) against a metadata
server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from spotwise.executor.clouds.huawei.notice import HuaweiSpotNotice
from spotwise.executor.local_clouds.http import Answer, LoopbackServer, Request
from spotwise.executor.notices import NoticeUnavailable
from tests.executor.conftest import PATIENT_S


class SpotMetadata:
    """The ECS metadata path of a spot server: 404 until ``action`` is set."""

    def __init__(self) -> None:
        self.action: Answer = Answer(404, {"error": "not found"})
        self.asked: list[str] = []
        self.server = LoopbackServer(self.answer)

    def answer(self, request: Request) -> Answer:
        self.asked.append(f"{request.method} {request.path}")
        if request.path == "/openstack/latest/spot/instance-action":
            return self.action
        return Answer(404)


@pytest.fixture
def metadata() -> Iterator[SpotMetadata]:
    served = SpotMetadata()
    try:
        yield served
    finally:
        served.server.close()


def test_no_notice_until_the_action_then_a_terminate_with_its_deadline(
    metadata: SpotMetadata,
) -> None:
    source = HuaweiSpotNotice(metadata.server.url, timeout=PATIENT_S)
    assert source.poll() is None
    metadata.action = Answer(200, {"action": "delete", "time": "2026-12-07T20:00:00Z"})
    notice = source.poll()
    assert notice is not None and (notice.kind, notice.source) == ("terminate", "huawei")
    assert notice.deadline == pytest.approx(1796673600.0)
    assert metadata.asked == ["GET /openstack/latest/spot/instance-action"] * 2


@pytest.mark.parametrize(
    "answer",
    [Answer(200, "{{{"), Answer(200, {"action": "reboot"}), Answer(500, {"error": "busy"})],
)
def test_an_unreadable_or_failed_answer_is_no_notice(
    metadata: SpotMetadata, answer: Answer
) -> None:
    metadata.action = answer
    assert HuaweiSpotNotice(metadata.server.url, timeout=PATIENT_S).poll() is None


def test_a_timestamp_without_time_is_read_too(metadata: SpotMetadata) -> None:
    metadata.action = Answer(200, {"action": "terminate", "timestamp": "2026-12-07T20:00:00+00:00"})
    notice = HuaweiSpotNotice(metadata.server.url, timeout=PATIENT_S).poll()
    assert notice is not None and notice.deadline == pytest.approx(1796673600.0)


def test_an_unreachable_endpoint_is_unavailable_not_a_notice() -> None:
    with pytest.raises(NoticeUnavailable):
        HuaweiSpotNotice("http://127.0.0.1:9", timeout=0.5).poll()


def test_its_endpoint_is_the_link_local_metadata_overridden_by_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert HuaweiSpotNotice.from_env().base_url == "http://169.254.169.254"
    monkeypatch.setenv("SPOTWISE_HUAWEI_METADATA_URL", "http://127.0.0.1:8123/")
    assert HuaweiSpotNotice.from_env().base_url == "http://127.0.0.1:8123"

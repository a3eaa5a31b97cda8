"""AWS's preemption notice: IMDSv2's ``spot/instance-action`` and rebalance recommendation."""

from __future__ import annotations

import json
import logging

from spotwise.core.settings import CloudEndpoint
from spotwise.executor.notices import (
    MetadataSource,
    Notice,
    iso_epoch,
    metadata_request,
)

log = logging.getLogger(__name__)

IMDS = CloudEndpoint("SPOTWISE_AWS_IMDS_URL", "http://169.254.169.254", https=False)
"""The instance metadata service (IMDSv2), on the link-local address."""


class AwsImds(MetadataSource):
    """AWS IMDSv2: ``spot/instance-action`` (2-minute notice) and the rebalance
    recommendation, with the session-token dance (a 401 renews the token once)."""

    name = "aws"
    notice_s = 120.0
    endpoint = IMDS

    def __init__(
        self,
        base_url: str = IMDS.default,
        *,
        timeout: float = 1.0,
        token_ttl_s: int = 21600,
    ) -> None:
        super().__init__(base_url, timeout=timeout)
        self.token_ttl_s = token_ttl_s
        self._token: str | None = None
        self.rebalance_seen: str | None = None

    def _renew_token(self) -> str:
        status, body = metadata_request(
            f"{self.base_url}/latest/api/token",
            {"X-aws-ec2-metadata-token-ttl-seconds": str(self.token_ttl_s)},
            self.timeout,
            method="PUT",
        )
        if status != 200 or not body.strip():
            raise ConnectionError(f"IMDS token request answered {status}")
        self._token = body.decode().strip()
        return self._token

    def _metadata(self, path: str) -> tuple[int, bytes]:
        token = self._token or self._renew_token()
        url = f"{self.base_url}/latest/meta-data/{path}"
        status, body = metadata_request(url, {"X-aws-ec2-metadata-token": token}, self.timeout)
        if status == 401:
            status, body = metadata_request(
                url, {"X-aws-ec2-metadata-token": self._renew_token()}, self.timeout
            )
        return status, body

    def poll(self) -> Notice | None:
        """A stop notice from ``instance-action``, else a rebalance recommendation (once)."""
        status, body = self._metadata("spot/instance-action")
        if status == 200:
            try:
                action = json.loads(body)
                kind = action["action"]
                if kind not in ("terminate", "stop", "hibernate"):
                    raise ValueError(f"unknown action {kind!r}")
                return Notice(
                    kind=kind,
                    source=self.name,
                    deadline=iso_epoch(action["time"]),
                    detail=body.decode(errors="replace"),
                )
            except (ValueError, KeyError, TypeError) as exc:
                log.warning(
                    "aws instance-action: ignoring an unreadable answer %r (%s)", body[:200], exc
                )
        elif status != 404:
            log.warning("aws instance-action answered HTTP %s", status)
        status, body = self._metadata("events/recommendations/rebalance")
        if status == 200:
            try:
                notice_time = json.loads(body)["noticeTime"]
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("aws rebalance: ignoring an unreadable answer %r (%s)", body[:200], exc)
                return None
            if notice_time != self.rebalance_seen:
                self.rebalance_seen = notice_time
                return Notice(kind="rebalance", source=self.name, detail=str(notice_time))
        return None

"""Preemption notices: AWS IMDSv2, GCP metadata, Azure Scheduled Events and SIGTERM, all behind
one ``NoticeSource`` interface and watched by ``NoticeWatcher``; and a real trace's preemption
times, for replays.

A notice either asks to stop (the instance goes away: checkpoint and exit) or, for AWS's
rebalance recommendation, only to checkpoint (it is an early and often false alarm: never stop
on it). A source that answers garbage, times out or refuses is logged and polled again; it
never stops the watcher.
"""

from __future__ import annotations

import email.utils
import json
import logging
import signal
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import FrameType
from typing import TYPE_CHECKING, Literal

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.core.endpoints import AWS_IMDS_URL, AZURE_METADATA_URL, GCP_METADATA_URL
from spotwise.executor.errors import ExecutorError

if TYPE_CHECKING:
    from spotwise.core.environment import Settings

log = logging.getLogger(__name__)

NoticeKind = Literal["terminate", "stop", "hibernate", "preempt", "rebalance"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Notice:
    """A notice from a source; ``deadline`` is when the instance goes (epoch seconds)."""

    kind: NoticeKind
    source: str
    deadline: float | None = None
    detail: str = ""

    @property
    def stop(self) -> bool:
        """True unless it is only a rebalance recommendation."""
        return self.kind != "rebalance"


class NoticeSource(ABC):
    """Something that can say the instance is about to be taken back."""

    name: str
    notice_s: float
    """Seconds between its notice and the take-back (the one definition of each cloud's
    window): what the guard's last save must fit in."""

    @abstractmethod
    def poll(self) -> Notice | None:
        """The pending notice, or None. May raise on transport errors (the watcher logs)."""


class NoticeUnavailable(ExecutorError):
    """A notice source could not be reached (the watcher counts it and polls on)."""


def _get(
    url: str, headers: dict[str, str], timeout: float, method: str = "GET"
) -> tuple[int, bytes]:
    """One request to a metadata endpoint, never through a proxy.

    Raises:
        NoticeUnavailable: when the endpoint cannot be reached in ``timeout`` seconds.
    """
    import httpx

    try:
        response = httpx.request(method, url, headers=headers, timeout=timeout, trust_env=False)
    except httpx.TransportError as exc:
        raise NoticeUnavailable(f"{url}: {exc or type(exc).__name__}") from exc
    return response.status_code, response.content


def _iso_epoch(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class AwsImds(NoticeSource):
    """AWS IMDSv2: ``spot/instance-action`` (2-minute notice) and the rebalance
    recommendation, with the session-token dance (a 401 renews the token once)."""

    name = "aws"
    notice_s = 120.0

    def __init__(
        self,
        base_url: str = AWS_IMDS_URL,
        *,
        timeout: float = 1.0,
        token_ttl_s: int = 21600,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.token_ttl_s = token_ttl_s
        self._token: str | None = None
        self.rebalance_seen: str | None = None

    def _renew_token(self) -> str:
        status, body = _get(
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
        status, body = _get(url, {"X-aws-ec2-metadata-token": token}, self.timeout)
        if status == 401:
            status, body = _get(
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
                    deadline=_iso_epoch(action["time"]),
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


class GcpMetadata(NoticeSource):
    """GCP: ``instance/preempted`` answers TRUE about 30 s before the VM is stopped."""

    name = "gcp"
    notice_s = 30.0

    def __init__(
        self,
        base_url: str = GCP_METADATA_URL,
        *,
        timeout: float = 1.0,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.clock = clock

    def poll(self) -> Notice | None:
        """A preempt notice once ``instance/preempted`` answers TRUE, else None."""
        status, body = _get(
            f"{self.base_url}/computeMetadata/v1/instance/preempted",
            {"Metadata-Flavor": "Google"},
            self.timeout,
        )
        text = body.decode(errors="replace").strip()
        if status == 200 and text == "TRUE":
            return Notice(
                kind="preempt", source=self.name, deadline=self.clock.time() + self.notice_s
            )
        if status != 200 or text not in ("TRUE", "FALSE"):
            log.warning("gcp preempted: ignoring HTTP %s %r", status, text[:200])
        return None


class AzureScheduledEvents(NoticeSource):
    """Azure: a ``Preempt`` event in Scheduled Events (at least 30 s ahead)."""

    name = "azure"
    notice_s = 30.0

    def __init__(self, base_url: str = AZURE_METADATA_URL, *, timeout: float = 1.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    def poll(self) -> Notice | None:
        """A preempt notice for the first ``Preempt`` scheduled event, else None."""
        status, body = _get(
            f"{self.base_url}/metadata/scheduledevents?api-version=2020-07-01",
            {"Metadata": "true"},
            self.timeout,
        )
        if status != 200:
            log.warning("azure scheduled events answered HTTP %s", status)
            return None
        try:
            events = json.loads(body)["Events"]
            for event in events:
                if event.get("EventType") == "Preempt":
                    not_before = event.get("NotBefore") or ""
                    parsed = email.utils.parsedate_to_datetime(not_before) if not_before else None
                    return Notice(
                        kind="preempt",
                        source=self.name,
                        deadline=parsed.timestamp() if parsed else None,
                        detail=str(event.get("EventId", "")),
                    )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning(
                "azure scheduled events: ignoring an unreadable answer %r (%s)", body[:200], exc
            )
        return None


class SigtermSource(NoticeSource):
    """SIGTERM (from a scheduler, torchrun or the supervisor) as a stop notice. Install from
    the main thread; the handler only records the signal."""

    name = "sigterm"

    def __init__(
        self,
        signals: Sequence[int] = (signal.SIGTERM,),
        grace_s: float = 30.0,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.signals = tuple(signals)
        self.grace_s = grace_s
        self.notice_s = grace_s
        self.clock = clock
        self._received: float | None = None
        self._previous: dict[int, object] = {}

    def install(self) -> None:
        """Start catching the signals."""
        for sig in self.signals:
            self._previous[sig] = signal.signal(sig, self._handle)

    def uninstall(self) -> None:
        """Restore the previous handlers."""
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)  # type: ignore[arg-type]
        self._previous.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._received is None:
            self._received = self.clock.time()

    def poll(self) -> Notice | None:
        """A terminate notice, ``grace_s`` after the signal came, once one has."""
        if self._received is None:
            return None
        return Notice(kind="terminate", source=self.name, deadline=self._received + self.grace_s)


def notice_window_s(sources: Sequence[NoticeSource]) -> float | None:
    """The shortest notice any of ``sources`` gives (None: no source)."""
    return min((s.notice_s for s in sources), default=None)


def preemption_times(
    available: Sequence[bool], gap_seconds: float, *, start_tick: int = 0, time_scale: float = 1.0
) -> list[float]:
    """Seconds (divided by ``time_scale``) after ``start_tick`` at which a running spot instance
    would have been taken back: every tick where availability turns from True to False."""
    times = []
    for tick in range(start_tick + 1, len(available)):
        if available[tick - 1] and not available[tick]:
            times.append((tick - start_tick) * gap_seconds / time_scale)
    return times


class NoticeWatcher:
    """Polls sources on a background thread; remembers the first stop notice and counts
    rebalance recommendations. Errors of a source are logged, never raised."""

    def __init__(
        self,
        sources: Sequence[NoticeSource],
        *,
        interval_s: float = 1.0,
        on_notice: Callable[[Notice], None] | None = None,
    ) -> None:
        self.sources = list(sources)
        self.interval_s = interval_s
        self.on_notice = on_notice
        self.stop_notice: Notice | None = None
        self.rebalances = 0
        self.errors = 0
        self._rebalance_pending = threading.Event()
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> NoticeWatcher:
        """Install signal sources and start polling."""
        for source in self.sources:
            if isinstance(source, SigtermSource):
                source.install()
        self._thread = threading.Thread(target=self._run, daemon=True, name="notice-watcher")
        self._thread.start()
        return self

    def poll_once(self) -> None:
        """Ask every source once."""
        for source in self.sources:
            try:
                notice = source.poll()
            except Exception as exc:  # a flaky endpoint must not stop the watcher
                self.errors += 1
                log.warning("notice source %s failed: %s", source.name, exc)
                continue
            if notice is None:
                continue
            if notice.stop:
                if self.stop_notice is None:
                    self.stop_notice = notice
                    if self.on_notice:
                        self.on_notice(notice)
            else:
                self.rebalances += 1
                self._rebalance_pending.set()
                if self.on_notice:
                    self.on_notice(notice)

    def check_signals(self) -> Notice | None:
        """Poll only the signal sources (cheap enough for every training step); return the
        stop notice if there is one."""
        if self.stop_notice is None:
            for source in self.sources:
                if isinstance(source, SigtermSource) and (notice := source.poll()) is not None:
                    self.stop_notice = notice
                    if self.on_notice:
                        self.on_notice(notice)
        return self.stop_notice

    def take_rebalance(self) -> bool:
        """True once per rebalance recommendation seen since the last call."""
        if self._rebalance_pending.is_set():
            self._rebalance_pending.clear()
            return True
        return False

    def _run(self) -> None:
        while not self._halt.is_set():
            self.poll_once()
            self._halt.wait(self.interval_s)

    def close(self) -> None:
        """Stop polling and restore signal handlers."""
        self._halt.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        for source in self.sources:
            if isinstance(source, SigtermSource):
                source.uninstall()


@dataclass(frozen=True, slots=True)
class CloudSource:
    """A cloud's notice source as ``$SPOTWISE_NOTICES`` names it."""

    kind: type[AwsImds] | type[GcpMetadata] | type[AzureScheduledEvents]
    url: Callable[[Settings], str]
    """Its endpoint (``$SPOTWISE_AWS_IMDS_URL``, ... override the clouds' own)."""


CLOUD_SOURCES: dict[str, CloudSource] = {
    "aws": CloudSource(AwsImds, lambda s: s.aws_imds_url),
    "gcp": CloudSource(GcpMetadata, lambda s: s.gcp_metadata_url),
    "azure": CloudSource(AzureScheduledEvents, lambda s: s.azure_metadata_url),
}


def sources_from_env() -> list[NoticeSource]:
    """Cloud sources named in ``$SPOTWISE_NOTICES`` (comma-separated names of
    :data:`CLOUD_SOURCES`), each at its endpoint."""
    from spotwise.core.settings import current

    settings = current()
    sources: list[NoticeSource] = []
    for name in filter(None, (n.strip() for n in settings.notices.split(","))):
        cloud = CLOUD_SOURCES.get(name)
        if cloud is None:
            raise ValueError(
                f"SPOTWISE_NOTICES: unknown source {name[:40]!r}; use {', '.join(CLOUD_SOURCES)}"
            )
        sources.append(cloud.kind(cloud.url(settings)))
    return sources

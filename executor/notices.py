"""Preemption notices behind one ``NoticeSource`` interface, watched by ``NoticeWatcher``:
SIGTERM here, and each cloud's metadata endpoint as a ``MetadataSource`` in its folder
(``executor/clouds/NAME/notice.py``: AWS IMDSv2, GCP metadata, Azure Scheduled Events); and a
real trace's preemption times, for replays.

A notice either asks to stop (the instance goes away: checkpoint and exit) or, for AWS's
rebalance recommendation, only to checkpoint (it is an early and often false alarm: never stop
on it). A source that answers garbage, times out or refuses is logged and polled again; it
never stops the watcher.
"""

from __future__ import annotations

import logging
import signal
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import FrameType
from typing import ClassVar, Literal, Self

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.core.settings import CloudEndpoint, endpoint_url
from spotwise.executor.errors import ExecutorError

log = logging.getLogger(__name__)

NoticeKind = Literal["terminate", "stop", "hibernate", "preempt", "rebalance"]
SIGTERM_GRACE_S = 30.0
"""The window a SIGTERM gives where nothing says otherwise (``SPOTWISE_NOTICE_S``)."""


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


class MetadataSource(NoticeSource):
    """A cloud's notice source: it polls the instance's metadata endpoint at ``base_url``
    (each cloud's is its ``executor/clouds/NAME/notice.py``, with its :attr:`endpoint`)."""

    endpoint: ClassVar[CloudEndpoint]
    """The cloud's metadata endpoint and the ``SPOTWISE_*`` variable that overrides it."""

    def __init__(self, base_url: str, *, timeout: float = 1.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    @classmethod
    def from_env(cls) -> Self:
        """The source at its endpoint as the environment gives it now.

        Raises:
            SettingsError: for a variable that holds no URL.
        """
        return cls(endpoint_url(cls.endpoint))


class NoticeUnavailable(ExecutorError):
    """A notice source could not be reached (the watcher counts it and polls on)."""


def metadata_request(
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


def iso_epoch(text: str) -> float:
    """Epoch seconds of an ISO 8601 time (``Z`` for UTC)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class SigtermSource(NoticeSource):
    """SIGTERM (from a scheduler, torchrun or the supervisor) as a stop notice. Install from
    the main thread; the handler only records the signal."""

    name = "sigterm"

    def __init__(
        self,
        signals: Sequence[int] = (signal.SIGTERM,),
        grace_s: float = SIGTERM_GRACE_S,
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

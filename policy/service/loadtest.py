"""An open-loop load test of the policy API: requests sent on a fixed schedule, latency measured
from each request's scheduled time (so a slow server cannot hide its queueing).

Its ``time.perf_counter`` reads are benchmark timing (the schedule and the measured latencies),
taken on the finest clock there is; the ages of its kept-alive connections are read from a
:class:`~spotwise.core.clock.Clock`, as every other wall-clock read is.

The client speaks HTTP/1.1 over asyncio streams with kept-alive connections: an HTTP library's
client costs a millisecond of CPU a request, so at a thousand requests a second the generator,
not the server, would set the figures.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from spotwise.core.clock import SYSTEM_CLOCK, Clock

Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]
MAX_CONNECTIONS = 1024
"""Connections the generator may hold open: requests beyond them wait (and that counts)."""
IDLE_REUSE_S = 3.0
"""A kept-alive connection idle longer than this is closed, not reused: the server closes
its own after 5 s idle (uvicorn's keep-alive), and a request written as it does so is lost."""


LOAD_JOB = {
    "compute_hours": 48.0,
    "deadline_hours": 60.0,
    "changeover_hours": 0.2,
    "spot_price": 0.918,
    "on_demand_price": 3.06,
}
"""The job of every request the load test sends."""


@dataclass(frozen=True, slots=True)
class DecisionBody:
    """One decision request the load test sends: the ``best`` policy asked about
    :data:`LOAD_JOB` at one state, over pools each up or not."""

    elapsed_hours: float
    progress_hours: float
    available: tuple[tuple[str, bool], ...]
    """Each pool, and whether it is up."""

    def to_dict(self) -> dict[str, Any]:
        """The request's JSON body (``POST /v1/decision``)."""
        return {
            "policy": "best",
            "job": dict(LOAD_JOB),
            "state": {"elapsed_hours": self.elapsed_hours, "progress_hours": self.progress_hours},
            "pools": {pool: {"available": up} for pool, up in self.available},
        }


class Connections:
    """Kept-alive HTTP/1.1 connections to one server, and the encoded requests to send."""

    def __init__(
        self,
        base_url: str,
        token: str | None,
        bodies: Sequence[DecisionBody],
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        url = urlsplit(base_url)
        self.host, self.port = url.hostname or "127.0.0.1", url.port or 80
        self._clock = clock
        auth = f"Authorization: Bearer {token}\r\n" if token else ""
        self.requests = []
        for body in bodies:
            data = json.dumps(body.to_dict()).encode()
            head = (
                f"POST /v1/decision HTTP/1.1\r\nHost: {self.host}\r\n{auth}"
                f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
            )
            self.requests.append(head.encode() + data)
        self._idle: list[tuple[float, Stream]] = []
        """Kept-alive connections, each with when it was last given back (the newest last)."""
        self._open = 0
        self._freed = asyncio.Condition()

    async def send(self, i: int) -> int:
        """Send request ``i`` (mod the bodies) and read the answer: its status (0: no answer).
        A kept-alive connection the server has since closed (idle too long) is replaced once,
        by a new one, as HTTP clients do (another kept-alive one may be as stale: at twice
        capacity, many idled past the server's keep-alive and 56 requests in 10 s were lost)."""
        for attempt in (0, 1):
            reused, (reader, writer) = await self._take(fresh=attempt > 0)
            try:
                writer.write(self.requests[i % len(self.requests)])
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                status = int(lines[0].split()[1])
                fields = {
                    k.lower(): v for k, v in (ln.split(": ", 1) for ln in lines[1:] if ": " in ln)
                }
                await reader.readexactly(int(fields.get("content-length", "0")))
            except (OSError, asyncio.IncompleteReadError, ValueError, IndexError) as exc:
                writer.close()
                await self._give(None)
                stale = isinstance(exc, ConnectionResetError) or (
                    isinstance(exc, asyncio.IncompleteReadError) and not exc.partial
                )
                if reused and stale and attempt == 0:
                    continue
                return 0
            await self._give(None if fields.get("connection") == "close" else (reader, writer))
            return status
        return 0

    async def _take(self, fresh: bool = False) -> tuple[bool, Stream]:
        """(whether it was kept alive from before, a connection): the kept-alive one given
        back last, unless ``fresh`` or none idled less than ``IDLE_REUSE_S``; else a new one."""
        async with self._freed:
            while True:
                now = self._clock.monotonic()
                while self._idle and now - self._idle[0][0] > IDLE_REUSE_S:
                    self._drop_oldest_idle()
                if self._idle and not fresh:
                    return True, self._idle.pop()[1]
                if self._open < MAX_CONNECTIONS:
                    break
                if self._idle:  # a new one is wanted and none is left to open: make room
                    self._drop_oldest_idle()
                    continue
                await self._freed.wait()
            self._open += 1
        try:
            reader, writer = await asyncio.open_connection(self.host, self.port)
        except OSError:
            async with self._freed:
                self._open -= 1
                self._freed.notify()
            raise
        sock = writer.get_extra_info("socket")
        if sock is not None:  # a request is one write: send it now, not after the last ACK
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return False, (reader, writer)

    async def _give(
        self, connection: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None
    ) -> None:
        async with self._freed:
            if connection is None:
                self._open -= 1
            else:
                self._idle.append((self._clock.monotonic(), connection))
            self._freed.notify()

    def _drop_oldest_idle(self) -> None:
        self._idle.pop(0)[1][1].close()
        self._open -= 1

    def close(self) -> None:
        """Close every kept-alive connection."""
        for _, (_, writer) in self._idle:
            writer.close()


def decision_bodies(pools: list[str], n: int, seed: int = 0) -> list[DecisionBody]:
    """``n`` varied, valid decision requests over ``pools``."""
    rng = np.random.default_rng(seed)
    bodies = []
    for _ in range(n):
        elapsed = float(rng.uniform(0, 55))
        progress = float(min(elapsed, rng.uniform(0, 48)))
        available = tuple((p, bool(rng.random() < 0.5)) for p in pools)
        bodies.append(DecisionBody(elapsed, progress, available))
    return bodies


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadTest:
    """One open-loop run: what was offered, what was served and how fast (latency from each
    request's due time, so queueing counts), what was shed (503), what got another answer and
    what got none (``requests = served + shed + errors + no_answer``)."""

    offered_rps: float
    seconds: float
    requests: int
    served: int
    served_rps: float
    served_p50_ms: float
    served_p99_ms: float
    shed: int
    shed_p99_ms: float | None
    """How long a turned-away request took to hear so (None: none was shed)."""
    errors: int
    """Answered, but neither served nor shed: other statuses."""
    error_statuses: dict[str, int]
    """The errors by status."""
    no_answer: int
    """Requests that got no HTTP answer at all: connection refused, reset or closed (a
    server that turns requests away answers each with a 503, so this should be 0)."""

    def to_dict(self) -> dict[str, Any]:
        """The figures as plain JSON types."""
        return asdict(self)


def _p(values: list[float], q: float) -> float:
    return round(float(np.percentile(np.array(values) * 1000.0, q)), 3)


async def _run(
    base_url: str,
    token: str | None,
    bodies: Sequence[DecisionBody],
    rps: float,
    seconds: float,
    on_second: Callable[[int], None] | None,
) -> LoadTest:
    connections = Connections(base_url, token, bodies)
    served: list[float] = []
    shed: list[float] = []
    errors: Counter[str] = Counter()
    no_answer = 0

    async def one(i: int, due: float) -> None:
        nonlocal no_answer
        try:
            status = await connections.send(i)
        except OSError:
            status = 0
        took = time.perf_counter() - due
        if status == 200:
            served.append(took)
        elif status == 503:
            shed.append(took)
        elif status == 0:
            no_answer += 1
        else:
            errors[str(status)] += 1

    n = round(rps * seconds)
    began = time.perf_counter()
    tasks = []
    for i in range(n):
        due = began + i / rps
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(i, due)))
        if on_second and (i + 1) % max(1, round(rps)) == 0:
            on_second((i + 1) // max(1, round(rps)))
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - began
    connections.close()
    return LoadTest(
        offered_rps=rps,
        seconds=seconds,
        requests=n,
        served=len(served),
        served_rps=round(len(served) / elapsed, 1),
        served_p50_ms=_p(served, 50) if served else float("nan"),
        served_p99_ms=_p(served, 99) if served else float("nan"),
        shed=len(shed),
        shed_p99_ms=_p(shed, 99) if shed else None,
        errors=sum(errors.values()),
        error_statuses=dict(errors),
        no_answer=no_answer,
    )


def load_test(
    base_url: str,
    token: str | None,
    bodies: Sequence[DecisionBody],
    *,
    rps: float,
    seconds: float,
    on_second: Callable[[int], None] | None = None,
) -> LoadTest:
    """Send ``rps`` decision requests a second for ``seconds`` whatever the answers (open
    loop)."""
    return asyncio.run(_run(base_url, token, bodies, rps, seconds, on_second))


async def _capacity(
    base_url: str, token: str | None, bodies: Sequence[DecisionBody], clients: int, seconds: float
) -> float:
    connections = Connections(base_url, token, bodies)
    done = 0
    stop = time.perf_counter() + seconds

    async def loop(k: int) -> None:
        nonlocal done
        i = k
        while time.perf_counter() < stop:
            done += await connections.send(i) == 200
            i += clients

    began = time.perf_counter()
    await asyncio.gather(*(loop(k) for k in range(clients)))
    elapsed = time.perf_counter() - began
    connections.close()
    return done / elapsed


def closed_loop_rate(
    base_url: str,
    token: str | None,
    bodies: Sequence[DecisionBody],
    *,
    clients: int,
    seconds: float,
) -> float:
    """Requests a second served when ``clients`` each send the next request as soon as the
    last is answered (a lower bound on capacity: the server waits on the client between
    requests)."""
    return asyncio.run(_capacity(base_url, token, bodies, clients, seconds))


def find_capacity(
    base_url: str,
    token: str | None,
    bodies: Sequence[DecisionBody],
    *,
    seconds: float = 2.0,
    shed_share: float = 0.02,
    steps: int = 6,
) -> tuple[float, list[LoadTest]]:
    """The most requests a second the server serves: offer 1.5× more each step, from the
    closed-loop rate, until it sheds more than ``shed_share`` of them; the best served rate
    seen, and the steps."""
    offered = 1.5 * closed_loop_rate(base_url, token, bodies, clients=1, seconds=seconds)
    runs = []
    for _ in range(steps):
        run = load_test(base_url, token, bodies, rps=offered, seconds=seconds)
        runs.append(run)
        if run.shed > shed_share * run.requests:
            break
        offered *= 1.5
    return max(r.served_rps for r in runs), runs

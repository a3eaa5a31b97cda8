"""Scheduled collection and forecasting (APScheduler), in the foreground.

Every ``every_s`` seconds: collect the named AWS regions (if any), then run the forecasts.
Each run is logged with its outcome; a failing run is logged and the next one still runs; the
scheduler stops cleanly on Ctrl-C or SIGTERM. Under cron or systemd, run ``spotwise forecast
run`` (and ``spotwise collect aws``) on a timer instead: docs/forecasting.md, "On a timer".
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Callable
from datetime import UTC, datetime
from types import FrameType

from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_EXECUTED, JobExecutionEvent
from apscheduler.schedulers.blocking import BlockingScheduler

from spotwise.core.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger("spotwise.jobs")


def parse_every(text: str) -> float:
    """'10m', '30s', '1h' or plain seconds to seconds.

    Raises:
        ValueError: for anything else or a non-positive period.
    """
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    text = text.strip().lower()
    value = float(text[:-1]) * units[text[-1]] if text and text[-1] in units else float(text)
    if value <= 0:
        raise ValueError(f"--every must be positive, got {text!r}")
    return value


def run_schedule(
    job: Callable[[], str],
    every_s: float,
    *,
    max_runs: int | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> int:
    """Run ``job`` now and then every ``every_s`` seconds until a signal (or ``max_runs``);
    return the number of runs that failed.

    Raises:
        Exception: the first error marked ``permanent`` (a read-only store, a bad
            configuration): retrying it would fail the same way for ever.
    """
    scheduler = BlockingScheduler(timezone=UTC)
    outcome = {"runs": 0, "failed": 0}
    fatal: list[BaseException] = []

    def listen(event: JobExecutionEvent) -> None:
        outcome["runs"] += 1
        if event.exception is not None and getattr(event.exception, "permanent", False):
            log.error(
                "run %d failed: %s (this will not heal: stopping)", outcome["runs"], event.exception
            )
            fatal.append(event.exception)
            scheduler.shutdown(wait=False)
            return
        if event.exception is not None:
            outcome["failed"] += 1
            log.error(
                "run %d failed: %s (the next run is still scheduled)",
                outcome["runs"],
                event.exception,
            )
        else:
            log.info("run %d ok: %s", outcome["runs"], event.retval)
        if max_runs is not None and outcome["runs"] >= max_runs:
            scheduler.shutdown(wait=False)

    def timed() -> str:
        began = time.perf_counter()  # timing only: how long the run took, for the log
        summary = job()
        return f"{summary} in {time.perf_counter() - began:.1f} s"

    def stop(signum: int, frame: FrameType | None) -> None:
        log.info("stopping on signal %d", signum)
        scheduler.shutdown(wait=False)

    # The listener reports each run in one line; the executor's own traceback is noise.
    logging.getLogger("apscheduler").setLevel(logging.WARNING)
    logging.getLogger("apscheduler.executors").setLevel(logging.CRITICAL)
    previous = signal.signal(signal.SIGTERM, stop)
    scheduler.add_listener(listen, EVENT_JOB_EXECUTED | EVENT_JOB_ERROR)
    scheduler.add_job(
        timed,
        "interval",
        seconds=every_s,
        next_run_time=datetime.fromtimestamp(clock.time(), UTC),
        max_instances=1,
        coalesce=True,
        id="collect-and-forecast",
    )
    log.info("every %g s: collect and forecast (Ctrl-C or SIGTERM stops)", every_s)
    try:
        scheduler.start()
    except KeyboardInterrupt:
        log.info("stopping on Ctrl-C")
    finally:
        signal.signal(signal.SIGTERM, previous)
    if fatal:
        raise fatal[0]
    return outcome["failed"]

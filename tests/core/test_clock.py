"""The machine's clock, as the executor reads it through :class:`Clock`."""

from __future__ import annotations

import time

from spotwise.core.clock import SYSTEM_CLOCK, Clock, SystemClock


def test_the_system_clock_reads_the_epoch_and_a_monotonic_clock_and_sleeps_for_real() -> None:
    clock: Clock = SYSTEM_CLOCK
    assert isinstance(clock, SystemClock)
    before = time.time()
    now = clock.time()
    assert before <= now <= time.time()  # the epoch, not the monotonic clock's origin
    start = clock.monotonic()
    assert time.monotonic() >= start
    clock.sleep(0.05)
    assert clock.monotonic() - start >= 0.05  # time.sleep never returns early

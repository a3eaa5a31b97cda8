"""Whether a job's supervisor still lives: its pid and its start time, not its pid alone."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import psutil
import pytest

from spotwise.executor.ledger.liveness import process_started, supervisor_alive

SLEEP = "import time; time.sleep(60)"


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test starts, killed and reaped at its end."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for child in started:
        child.kill()
        child.wait(10)


def ticks_since_boot(pid: int) -> int:
    """psutil's start time of ``pid``, in the clock ticks since boot /proc counts in."""
    seconds = psutil.Process(pid).create_time() - psutil.boot_time()
    return round(seconds * os.sysconf("SC_CLK_TCK"))


def test_a_start_time_is_read_past_a_command_name_holding_spaces_and_parentheses(
    children: list[subprocess.Popen[bytes]],
) -> None:
    # the child renames itself "a) b (c": fields counted from the first ')' would be off by two
    rename = "open('/proc/self/comm', 'w').write('a) b (c'); print(flush=True); " + SLEEP
    child = subprocess.Popen([sys.executable, "-c", rename], stdout=subprocess.PIPE)
    children.append(child)
    assert child.stdout is not None and child.stdout.readline() == b"\n"
    assert psutil.Process(child.pid).name() == "a) b (c"
    assert process_started(child.pid) == pytest.approx(ticks_since_boot(child.pid), abs=1)


def test_a_live_supervisor_is_the_process_of_its_recorded_start_time(
    children: list[subprocess.Popen[bytes]],
) -> None:
    child = subprocess.Popen([sys.executable, "-c", SLEEP])
    children.append(child)
    started = process_started(child.pid)
    assert started is not None
    assert supervisor_alive(child.pid, started)
    # the same pid with another start time is a process the kernel gave the pid to later
    assert not supervisor_alive(child.pid, started + 1)


def test_without_a_start_time_a_live_process_is_the_supervisor_only_if_it_is_spotwise(
    children: list[subprocess.Popen[bytes]],
) -> None:
    ours = subprocess.Popen([sys.executable, "-c", SLEEP, "spotwise-run"])
    other = subprocess.Popen([sys.executable, "-c", SLEEP, "another-tool"])
    children += [ours, other]
    assert supervisor_alive(ours.pid)
    assert not supervisor_alive(other.pid)


def test_an_exited_supervisor_is_gone_reaped_or_not(
    children: list[subprocess.Popen[bytes]],
) -> None:
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    children.append(zombie)
    deadline = time.monotonic() + 20
    while psutil.Process(zombie.pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the child never exited"
        time.sleep(0.01)
    started = process_started(zombie.pid)
    assert not supervisor_alive(zombie.pid, started)  # exited, its exit status not yet read
    zombie.wait(10)
    assert not supervisor_alive(zombie.pid, started)  # reaped: no such process
    assert process_started(zombie.pid) is None

"""The instance every cloud shares, on a cloud kept in memory: the hooks a cloud implements are
all it takes to get the job's events and log back, the exit code, preemptions told from
failures, the boot log of a command that never ran, and the waiting message."""

from __future__ import annotations

import json
from collections.abc import Iterator

from spotwise.executor.clouds.cloud_launcher import CloudLauncher
from spotwise.executor.clouds.instance import BucketInstance
from spotwise.executor.errors import PREEMPTED_EXIT_CODE
from spotwise.executor.launchers.base import Placement
from tests.conftest import ManualClock

SPOT = Placement(market="spot", pool="zone-a", price=0.9)


class MemoryLauncher(CloudLauncher):
    """A launcher whose bucket is a dict and whose instances end when told."""

    name = "memory"

    def __init__(self) -> None:
        super().__init__(pools=["zone-a"], job_id="job7", prefix="jobs/job7", clock=ManualClock())
        self.objects: dict[str, str] = {}
        self.gone: set[str] = set()
        self.taken: set[str] = set()


class MemoryInstance(BucketInstance[MemoryLauncher]):
    """An instance of the memory cloud: each hook reads or changes the launcher's dict and
    sets."""

    noun = "box"
    service = "Memory"
    first_state = "starting"

    def _read(self, name: str) -> str | None:
        return self.launcher.objects.get(self._key(name))

    def _chunks_after(self, folder: str, after: str) -> Iterator[tuple[str, str]]:
        for name in sorted(self.launcher.objects):
            if name.startswith(folder) and name > (after or folder):
                yield name, self.launcher.objects[name]

    def _gone(self) -> bool:
        ended = self.instance_id in self.launcher.gone
        self._state = "ended" if ended else "up"
        return ended

    def _taken_back(self) -> bool:
        return self.instance_id in self.launcher.taken

    def _end(self) -> None:
        self.launcher.gone.add(self.instance_id)


def start(launcher: MemoryLauncher, name: str = "box-1") -> tuple[MemoryInstance, list[str]]:
    lines: list[str] = []
    return MemoryInstance(launcher, name, SPOT, lines.append), lines


def chunk(launcher: MemoryLauncher, name: str, number: int, *records: dict[str, str]) -> None:
    key = f"jobs/job7/{name}/log/{number:08d}.jsonl"
    launcher.objects[key] = "".join(json.dumps(r) + "\n" for r in records)


def test_event_lines_on_stdout_become_events_and_every_other_line_goes_to_the_log() -> None:
    launcher = MemoryLauncher()
    instance, lines = start(launcher)
    chunk(launcher, "box-1", 1, {"stream": "setup", "line": "pip install"})
    chunk(
        launcher,
        "box-1",
        2,
        {"stream": "out", "line": '{"event": "fresh"}'},
        {"stream": "err", "line": '{"event": "not one"}'},
        {"stream": "out", "line": "step 1"},
    )
    launcher.clock.sleep(1800)
    assert instance.poll() is None
    chunk(launcher, "box-1", 3, {"stream": "out", "line": "step 2"})
    launcher.objects["jobs/job7/box-1/exit"] = "0\n"
    assert instance.poll() == 0 and instance.poll() == 0
    assert instance.events == [{"event": "fresh", "cloud_hours": 0.5}]
    assert lines == ["pip install", '{"event": "not one"}', "step 1", "step 2"]


def test_an_exit_code_reported_as_the_instance_went_is_its_exit_code() -> None:
    launcher = MemoryLauncher()

    class ReportsAsItGoes(MemoryInstance):
        def _gone(self) -> bool:
            launcher.objects["jobs/job7/box-1/exit"] = "3\n"
            return True

    assert ReportsAsItGoes(launcher, "box-1", SPOT, print).poll() == 3


def test_gone_without_reporting_is_a_preemption_when_taken_back_or_asked_to_leave() -> None:
    launcher = MemoryLauncher()
    (failed, _), (taken, _), (asked, _) = (start(launcher, f"box-{n}") for n in (1, 2, 3))
    launcher.gone |= {"box-1", "box-2"}
    launcher.taken.add("box-2")
    asked.notice()
    assert [i.poll() for i in (failed, taken, asked)] == [
        1,
        PREEMPTED_EXIT_CODE,
        PREEMPTED_EXIT_CODE,
    ]


def test_a_command_that_never_ran_shows_the_last_lines_of_the_boot_log() -> None:
    launcher = MemoryLauncher()
    instance, lines = start(launcher)
    launcher.objects["jobs/job7/box-1/boot.log"] = "".join(f"line {n}\n" for n in range(50))
    instance.kill()
    assert instance.poll() == 1
    assert lines == [f"boot: line {n}" for n in range(10, 50)]


def test_the_waiting_message_quotes_the_cloud_state_until_the_first_line() -> None:
    launcher = MemoryLauncher()
    instance, _ = start(launcher)
    assert instance.waiting(30) == (
        "box box-1 booting for 30 s (Memory: starting), no output yet; "
        "`spotwise jobs logs job7` shows it once it comes"
    )
    assert instance.poll() is None
    assert instance.waiting(600) == (
        "box box-1 booting for 10 min (Memory: up), no output yet; "
        "`spotwise jobs logs job7` shows it once it comes"
    )
    chunk(launcher, "box-1", 1, {"stream": "err", "line": "hello"})
    instance.read_output()
    assert instance.waiting(700) is None

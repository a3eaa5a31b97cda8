"""A cloud instance that reports through the job's bucket: what every cloud's launched instance
shares.

The on-instance agent streams the command's output to its folder of the bucket in chunks of
JSON lines (``{"stream": "out" | "err" | "setup", "line": ...}``) and writes the exit code there
before the instance shuts down; a boot that fails first uploads its own log (the names:
:mod:`executor.clouds.instance_folder`). :class:`BucketInstance` reads them back: the command's
JSON event lines on stdout become events, every other line goes to the job's log, and an
instance gone without reporting is a preemption when it was taken back or asked to leave, else
a failure. A cloud's instance class gives its words and implements the hooks: read an object,
list and read the chunks, ask the cloud for the state, say whether it took the instance back,
end it.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, Generic, TypeVar

from spotwise.executor.clouds.cloud_launcher import CloudLauncher
from spotwise.executor.clouds.instance_folder import BOOT_LOG, EXIT_NAME, LOG_FOLDER
from spotwise.executor.errors import PREEMPTED_EXIT_CODE
from spotwise.executor.launchers.base import Placement

BOOT_LINES = 40
"""How many of the boot log's last lines a failure before the command ran shows."""

L = TypeVar("L", bound=CloudLauncher)


class BucketInstance(ABC, Generic[L]):
    """One instance running the command; its output comes back from the job's bucket in
    chunks."""

    noun: ClassVar[str]
    """What the cloud calls it in a message: ``instance``, ``VM``."""
    service: ClassVar[str]
    """Whose state the waiting message quotes: ``EC2``, ``GCE``, ``Azure``."""
    first_state: ClassVar[str]
    """Its state before the cloud is first asked, in the cloud's words."""

    def __init__(
        self,
        launcher: L,
        instance_id: str,
        placement: Placement,
        log: Callable[[str], None],
        address: str | None = None,
    ) -> None:
        self.launcher, self.instance_id, self.placement = launcher, instance_id, placement
        self.address = address
        self.events: list[dict[str, Any]] = []
        self.started_hours = launcher.now_hours()
        self._log = log
        self._code: int | None = None
        self._asked_to_leave = False
        self._last_chunk = ""
        self._lines_read = 0
        self._state = self.first_state
        """Its state when the cloud was last asked, in the cloud's words."""

    def _key(self, name: str) -> str:
        """The bucket's name of ``name`` in this instance's folder."""
        return f"{self.launcher.prefix}/{self.instance_id}/{name}"

    @abstractmethod
    def _read(self, name: str) -> str | None:
        """An object of this instance's folder as text, None while it is not there."""

    @abstractmethod
    def _chunks_after(self, folder: str, after: str) -> Iterator[tuple[str, str]]:
        """The log chunks under ``folder`` whose names sort after ``after`` (``""`` before the
        first), in order: each one's name and text."""

    @abstractmethod
    def _gone(self) -> bool:
        """Ask the cloud for the instance's state (kept for :meth:`waiting`); whether it has
        ended."""

    @abstractmethod
    def _taken_back(self) -> bool:
        """Whether the cloud took back this instance, gone without reporting."""

    @abstractmethod
    def _end(self) -> None:
        """End the instance now."""

    def _ask_to_leave(self) -> None:
        """Shut the instance down so that the job gets SIGTERM: here, by ending it (its OS
        shuts down)."""
        self._end()

    def _exit_code(self) -> int | None:
        """The exit code it reported, None while there is none."""
        text = self._read(EXIT_NAME)
        return None if text is None else int(text.strip() or "1")

    def read_output(self) -> None:
        """Pass the log chunks the instance sent since the last call on: the command's JSON
        event lines on stdout become events, every other line goes to the job's log."""
        for name, text in self._chunks_after(self._key(LOG_FOLDER) + "/", self._last_chunk):
            for record in text.splitlines():
                self._line(json.loads(record))
            self._last_chunk = name

    def _line(self, record: dict[str, str]) -> None:
        """One line of a chunk: an event (stamped with ``cloud_hours``), or a line of the log."""
        self._lines_read += 1
        line = record.get("line", "")
        if record.get("stream") == "out":
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            if isinstance(event, dict):
                event["cloud_hours"] = self.launcher.now_hours()
                self.events.append(event)
                return
        self._log(line)

    def _boot_failure(self) -> None:
        """When the command never ran, the boot script's own log says why."""
        if self._lines_read == 0:
            for line in (self._read(BOOT_LOG) or "").splitlines()[-BOOT_LINES:]:
                self._log(f"boot: {line}")

    def poll(self) -> int | None:
        """The command's exit code once it has ended, else None."""
        if self._code is not None:
            return self._code
        self.read_output()
        self._code = self._exit_code()
        if self._code is None:
            if not self._gone():
                return None
            # It writes its exit code before it shuts down, so one that is gone may have
            # reported between the two reads above: read the report once more.
            self._code = self._exit_code()
            if self._code is None:
                # Gone without reporting: one we asked to leave (a notice: the job had its
                # chance to checkpoint), or one the cloud took back, is a preemption; anything
                # else failed.
                taken = self._asked_to_leave or self._taken_back()
                self._code = PREEMPTED_EXIT_CODE if taken else 1
        self.read_output()  # the last chunks go up before the exit code
        if self._code != 0:
            self._boot_failure()
        return self._code

    def waiting(self, running_s: float) -> str | None:
        """What the supervisor waits for, ``running_s`` after the launch, while the instance
        has sent no output yet (None: it has, or it has ended)."""
        if self._lines_read or self._code is not None:
            return None
        took = f"{running_s / 60:.0f} min" if running_s >= 90 else f"{running_s:.0f} s"
        return (
            f"{self.noun} {self.instance_id} booting for {took} ({self.service}: {self._state}), "
            f"no output yet; `spotwise jobs logs {self.launcher.job_id}` shows it once it comes"
        )

    def notice(self) -> None:
        """Ask it to leave: the job gets SIGTERM and checkpoints; gone without reporting, it
        was preempted."""
        self._asked_to_leave = True
        self._ask_to_leave()

    def kill(self) -> None:
        """End the instance now, without a notice."""
        self._end()

    def process_group(self) -> None:
        """It runs on its own machine."""
        return None

    def quiet_s(self) -> None:
        """Not known from here: the step heartbeat stays on the instance."""
        return None

    def terminate(self) -> None:
        """End the instance: the supervisor's teardown of it."""
        self._end()

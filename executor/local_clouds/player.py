"""What every cloud's instance player shares: each instance a launcher makes in the local cloud is
booted here, the script the cloud would run at its first boot (EC2's user data, GCE's startup
script, Azure's custom data) run with bash in a folder of its own; optionally the first one gets
the cloud's notice a while after a chosen line shows in its log, and is taken back once its
script has ended. A cloud's player says how to list its instances, read a script and its log,
give the notice and take an instance back (:class:`InstancePlayer`'s abstract methods)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, Unpack

from spotwise.core.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from spotwise.executor.local_clouds.metadata import FakeMetadata

GUARD_STARTED = ('{"event": "fresh"', '{"event": "resumed"')
"""How a command's guard announces itself in the instance's streamed log."""
FIRST_STEP = ('{"event": "first_step"',)
"""How a command's guard says it trained its first step."""
JOBS_PREFIX = "spotwise/jobs/"
"""Where in the bucket the agents stream their logs: ``JOB/INSTANCE/log/CHUNK``."""


class Play(TypedDict, total=False):
    """How a player plays (:class:`InstancePlayer`'s keywords, every cloud's player takes
    them)."""

    bucket: str | None
    notice_after_s: float | None
    notice_on: tuple[str, ...]
    beside: Callable[[str], None] | None
    boot_timeout_s: float
    clock: Clock


class InstancePlayer(ABC):
    """Boots every instance that appears in the local cloud, on a thread, until :meth:`close`.
    ``notice_after_s``: the first instance gets the cloud's notice this long after a line of
    ``notice_on`` shows in its log in ``bucket`` (by default: its command's guard started);
    once its script has ended, :meth:`ended` withdraws the notice and takes it back.
    ``beside(name)`` is called as the first instance boots. ``metadata``: the fake metadata
    server the instances read their notices from. ``env``: what the cloud gives its instances
    (its endpoints, credentials and metadata service), beside what every instance gets here
    (this Python, no package index, the supervisor's shutdown). ``seen``: instances made
    before, not to boot."""

    cloud = "the local cloud"
    """Who plays the instances, for :meth:`played` (``"local EC2"``)."""
    noun = "instance"
    script_kind = "boot script"
    """What the cloud calls the script it runs at boot."""
    notice_words = "a spot interruption notice"
    """What the noticed instance got, for :meth:`played`."""
    metadata_variable: str
    """The variable that points an instance's notice watcher at the metadata server (its
    cloud's ``CloudEndpoint``'s)."""

    def __init__(
        self,
        metadata: FakeMetadata,
        root: Path,
        env: Mapping[str, str],
        *,
        seen: Iterable[str] = (),
        **play: Unpack[Play],
    ) -> None:
        self.metadata, self.root, self.bucket = metadata, root, play.get("bucket")
        self.notice_after_s = play.get("notice_after_s")
        self.notice_on = play.get("notice_on", GUARD_STARTED)
        self.beside = play.get("beside")
        self.boot_timeout_s = play.get("boot_timeout_s", 3600.0)
        self.clock = play.get("clock", SYSTEM_CLOCK)
        self.env = {
            "PATH": os.environ["PATH"],
            "HOME": str(root),
            **env,
            self.metadata_variable: metadata.url,
            "SPOTWISE_PYTHON": sys.executable,
            "SPOTWISE_SHUTDOWN": "true",  # the supervisor ends the instance in the local cloud
            "PIP_NO_INDEX": "1",  # everything comes from the bucket or is there already
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }
        self.booted: list[tuple[str, int]] = []
        self.noticed: list[str] = []
        self.errors: list[BaseException] = []
        self._seen = set(seen)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    # a cloud's part

    @abstractmethod
    def live(self) -> list[str]:
        """The names of the cloud's instances now, oldest first."""

    @abstractmethod
    def script(self, name: str) -> bytes:
        """What instance ``name`` runs at its first boot."""

    @abstractmethod
    def keys(self, prefix: str) -> list[str]:
        """The names of the bucket's objects under ``prefix``, in order."""

    @abstractmethod
    def read(self, key: str) -> bytes:
        """One object of the bucket."""

    @abstractmethod
    def notice(self, name: str) -> None:
        """Give instance ``name`` the cloud's notice, as its metadata service serves it."""

    @abstractmethod
    def booting(self, name: str) -> None:
        """Called as instance ``name`` boots (its metadata service's identity)."""

    @abstractmethod
    def ended(self, name: str) -> None:
        """Called once instance ``name``'s script has ended: the notice withdrawn, a noticed
        instance taken back as the cloud takes it back."""

    # the play

    def _run(self) -> None:
        try:
            while not self._done.is_set():
                for name in self.live():
                    if name not in self._seen:
                        self._seen.add(name)
                        code = self._boot(name, first=not self.booted)
                        self.booted.append((name, code))
                self.clock.sleep(0.1)
        except BaseException as exc:  # surfaced by the caller, not lost in the thread
            self.errors.append(exc)

    def _boot(self, name: str, *, first: bool) -> int:
        """Run the instance's script to its end: its exit code."""
        script = self.root / f"{name}.sh"
        script.write_bytes(self.script(name))
        self.booting(name)
        env = {**self.env, "SPOTWISE_ROOT": str(self.root / name)}
        if first and self.beside is not None:
            self.beside(name)  # while it boots, under its live supervisor
        process = subprocess.Popen(["bash", str(script)], env=env)
        try:
            notice = first and self.notice_after_s is not None
            if notice and self._logged(name, process):
                self.clock.sleep(self.notice_after_s or 0.0)
                if process.poll() is None:
                    self.notice(name)
                    self.noticed.append(name)
            return process.wait(timeout=self.boot_timeout_s)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            self.ended(name)

    def _logged(self, name: str, process: subprocess.Popen[bytes]) -> bool:
        """Wait until the instance's streamed log has a line of ``notice_on`` (False: the
        script ended first, or the log is in no bucket)."""
        while self.bucket is not None and process.poll() is None and not self._done.is_set():
            if any(line.startswith(self.notice_on) for line in self.log_lines(name)):
                return True
            self.clock.sleep(0.3)
        return False

    def log_lines(self, name: str) -> list[str]:
        """The lines instance ``name``'s agent has sent to the bucket so far (none without
        one)."""
        if self.bucket is None:
            return []
        lines = []
        for key in self.keys(JOBS_PREFIX):
            if f"/{name}/log/" in key:
                body = self.read(key).decode()
                lines += [json.loads(record)["line"] for record in body.splitlines()]
        return lines

    def resumed_from(self, name: str) -> int | None:
        """The checkpoint step the command's guard on instance ``name`` resumed from (None: it
        started fresh, or never started a guard)."""
        for line in self.log_lines(name):
            if line.startswith('{"event": "resumed"'):
                return int(json.loads(line)["step"])
        return None

    def played(self) -> str:
        """What it did: each instance booted, where its command started from, the notice."""
        lines = [f"{self.cloud} booted {len(self.booted)} {self.noun}(s):"]
        for name, code in self.booted:
            step = self.resumed_from(name)
            start = "started fresh" if step is None else f"resumed from its checkpoint, step {step}"
            notice = f", then got {self.notice_words}" if name in self.noticed else ""
            lines.append(f"  {name}: {self.script_kind} exit {code}, its command {start}{notice}")
        if not self.noticed:
            lines.append(
                f"  no notice was sent: the first {self.noun}'s command never started a guard "
                "(executor.training.guard), or ended first"
            )
        return "\n".join(lines)

    def close(self) -> None:
        """Stop watching, once the scripts running now have ended."""
        self._done.set()
        self._thread.join(timeout=120)

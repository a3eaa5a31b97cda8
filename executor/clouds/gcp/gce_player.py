"""Plays Compute Engine on the loopback fake: each VM a launcher makes is booted here, its
startup script run with bash in a folder of its own, as GCE would run it on a new machine;
optionally the first one gets the metadata server's preemption notice and is then taken back
as Compute Engine takes back a Spot VM."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.executor.clouds.gcp.fake.compute import PROJECT, GcpLocal

if TYPE_CHECKING:
    from spotwise.executor.local_clouds.metadata import FakeMetadata

GUARD_STARTED = ('{"event": "fresh"', '{"event": "resumed"')
"""How a command's guard announces itself in the VM's streamed log."""
FIRST_STEP = ('{"event": "first_step"',)
"""How a command's guard says it trained its first step."""


class GcePlayer:
    """Boots every VM that appears in the fake's Compute Engine, on a thread, until
    :meth:`close`. ``notice_after_s``: the first VM gets the 30-second preemption notice this
    long after a line of ``notice_on`` shows in its log in ``bucket`` (by default: its command's
    guard started); once its startup script has ended, the notice is withdrawn and the VM, if
    still there, is preempted. ``beside(name)`` is called as the first VM boots."""

    def __init__(
        self,
        local: GcpLocal,
        metadata: FakeMetadata,
        root: Path,
        *,
        bucket: str | None = None,
        notice_after_s: float | None = None,
        notice_on: tuple[str, ...] = GUARD_STARTED,
        beside: Callable[[str], None] | None = None,
        boot_timeout_s: float = 3600.0,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.local, self.metadata, self.root, self.bucket = local, metadata, root, bucket
        self.notice_after_s, self.notice_on, self.beside = notice_after_s, notice_on, beside
        self.boot_timeout_s, self.clock = boot_timeout_s, clock
        self.env = {
            "PATH": os.environ["PATH"],
            "HOME": str(root),
            **local.env,  # on GCE: the metadata server's credentials, Google's storage
            "SPOTWISE_PYTHON": sys.executable,
            "SPOTWISE_GCP_METADATA_URL": metadata.url,
            "SPOTWISE_SHUTDOWN": "true",  # the supervisor deletes it
            "PIP_NO_INDEX": "1",  # everything comes from the bucket or is there already
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }
        self.booted: list[tuple[str, int]] = []
        self.noticed: list[str] = []
        self.errors: list[BaseException] = []
        self._storage: Any = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        seen: set[str] = set()
        try:
            while not self._done.is_set():
                for vm in self.local.fake.live():
                    if vm["name"] not in seen:
                        seen.add(vm["name"])
                        code = self._boot(vm, first=not self.booted)
                        self.booted.append((vm["name"], code))
                self.clock.sleep(0.1)
        except BaseException as exc:  # surfaced by the caller, not lost in the thread
            self.errors.append(exc)

    def _boot(self, vm: dict[str, Any], *, first: bool) -> int:
        """Run the VM's startup script to its end: its exit code."""
        name = vm["name"]
        items = {i["key"]: i["value"] for i in vm["metadata"]["items"]}
        script = self.root / f"{name}.sh"
        script.write_text(items["startup-script"])
        env = {**self.env, "SPOTWISE_ROOT": str(self.root / name)}
        if first and self.beside is not None:
            self.beside(name)  # while it boots, under its live supervisor
        process = subprocess.Popen(["bash", str(script)], env=env)
        try:
            notice = first and self.notice_after_s is not None
            if notice and self._logged(name, process):
                self.clock.sleep(self.notice_after_s or 0.0)
                if process.poll() is None:
                    self.metadata.gcp_preempted = "TRUE"  # the 30-second notice
                    self.noticed.append(name)
            return process.wait(timeout=self.boot_timeout_s)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            self.metadata.gcp_preempted = "FALSE"
            if name in self.noticed and any(v["name"] == name for v in self.local.fake.live()):
                self.local.fake.preempt(name)  # Compute Engine takes it back

    def _logged(self, name: str, process: subprocess.Popen[bytes]) -> bool:
        """Wait until the VM's streamed log has a line of ``notice_on`` (False: the script
        ended first, or the log is in no bucket)."""
        while self.bucket is not None and process.poll() is None and not self._done.is_set():
            if any(line.startswith(self.notice_on) for line in self._log_lines(name)):
                return True
            self.clock.sleep(0.3)
        return False

    def resumed_from(self, name: str) -> int | None:
        """The checkpoint step the command's guard on VM ``name`` resumed from (None: it
        started fresh, or never started a guard)."""
        for line in self._log_lines(name):
            if line.startswith('{"event": "resumed"'):
                return int(json.loads(line)["step"])
        return None

    def _log_lines(self, name: str) -> list[str]:
        """The lines the VM's agent has sent to the bucket so far (none without one)."""
        if self.bucket is None:
            return []
        if self._storage is None:
            from google.auth import credentials
            from google.cloud import storage

            self._storage = storage.Client(  # the emulator, whatever the environment says
                project=PROJECT,
                credentials=credentials.AnonymousCredentials(),
                client_options={"api_endpoint": self.local.storage.url},
            )
        lines = []
        for blob in self._storage.list_blobs(self.bucket, prefix="spotwise/jobs/"):
            if f"/{name}/log/" in blob.name:
                body = blob.download_as_bytes().decode()
                lines += [json.loads(record)["line"] for record in body.splitlines()]
        return lines

    def played(self) -> str:
        """What it did: each VM booted, where its command started from, the notice."""
        lines = [f"local Compute Engine booted {len(self.booted)} VM(s):"]
        for name, code in self.booted:
            step = self.resumed_from(name)
            start = "started fresh" if step is None else f"resumed from its checkpoint, step {step}"
            notice = (
                ", then got a preemption notice and was preempted" if name in self.noticed else ""
            )
            lines.append(f"  {name}: startup script exit {code}, its command {start}{notice}")
        if not self.noticed:
            lines.append(
                "  no notice was sent: the first VM's command never started a guard "
                "(executor.training.guard), or ended first"
            )
        return "\n".join(lines)

    def close(self) -> None:
        """Stop watching, once the startup scripts running now have ended."""
        self._done.set()
        self._thread.join(timeout=120)

"""Plays EC2 on moto: each instance a launcher starts is booted here, its user data run with
bash in a folder of its own, as EC2 would run it on a new machine; optionally the first one
is given a spot interruption notice through the fake instance metadata service."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spotwise.core.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from spotwise.executor.local_clouds.metadata import FakeMetadata

FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
"""What moto accepts; no account's keys."""
GUARD_STARTED = ('{"event": "fresh"', '{"event": "resumed"')
"""How a command's guard announces itself in the instance's streamed log."""


class Ec2Player:
    """Boots every instance that appears running in moto's EC2 after it was made, on a thread,
    until :meth:`close`. ``notice_after_s``: the first instance gets a spot ``terminate``
    notice this long after its command's guard started (read from its log in ``bucket``), and
    the notice is withdrawn once that instance's script has ended (a new instance has none)."""

    def __init__(
        self,
        session: Any,
        endpoint: str,
        metadata: FakeMetadata,
        root: Path,
        *,
        bucket: str | None = None,
        notice_after_s: float | None = None,
        boot_timeout_s: float = 3600.0,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.ec2 = session.client("ec2", endpoint_url=endpoint)
        self.s3 = session.client("s3", endpoint_url=endpoint)
        self.metadata, self.root, self.bucket = metadata, root, bucket
        self.notice_after_s, self.boot_timeout_s = notice_after_s, boot_timeout_s
        self.clock = clock
        self.env = {
            "PATH": os.environ["PATH"],
            "HOME": str(root),
            "AWS_ENDPOINT_URL": endpoint,
            **FAKE_CREDENTIALS,
            "AWS_EC2_METADATA_DISABLED": "true",  # the fake IMDS is named below, for notices
            "SPOTWISE_PYTHON": sys.executable,
            "SPOTWISE_AWS_IMDS_URL": metadata.url,
            "SPOTWISE_SHUTDOWN": "true",  # the supervisor terminates it in moto
            "PIP_NO_INDEX": "1",  # everything comes from the bucket or is there already
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }
        self.booted: list[tuple[str, int]] = []
        self.noticed: list[str] = []
        self.errors: list[BaseException] = []
        self._done = threading.Event()
        self.started = self.running()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def running(self) -> list[str]:
        """The ids of moto's pending and running instances."""
        answer = self.ec2.describe_instances(
            Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}]
        )
        return [i["InstanceId"] for r in answer["Reservations"] for i in r["Instances"]]

    def _run(self) -> None:
        seen = set(self.started)  # instances made before (moto's state lives with its process)
        try:
            while not self._done.is_set():
                for instance_id in self.running():
                    if instance_id not in seen:
                        seen.add(instance_id)
                        code = self._boot(instance_id, first=not self.booted)
                        self.booted.append((instance_id, code))
                self.clock.sleep(0.1)
        except BaseException as exc:  # surfaced by the caller, not lost in the thread
            self.errors.append(exc)

    def _boot(self, instance_id: str, *, first: bool) -> int:
        """Run the instance's user data to its end: its exit code."""
        attribute = self.ec2.describe_instance_attribute(
            InstanceId=instance_id, Attribute="userData"
        )
        script = self.root / f"{instance_id}.sh"
        script.write_bytes(base64.b64decode(attribute["UserData"]["Value"]))
        self.metadata.instance_id = instance_id
        env = {**self.env, "SPOTWISE_ROOT": str(self.root / instance_id)}
        process = subprocess.Popen(["bash", str(script)], env=env)
        try:
            notice = first and self.notice_after_s is not None
            if notice and self._guard_started(instance_id, process):
                self.clock.sleep(self.notice_after_s or 0.0)
                if process.poll() is None:
                    self._notice(instance_id)
            return process.wait(timeout=self.boot_timeout_s)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            self.metadata.aws_action = None

    def _guard_started(self, instance_id: str, process: subprocess.Popen[bytes]) -> bool:
        """Wait until the instance's streamed log shows its command's guard started (False:
        the script ended first, or the log is in no bucket)."""
        while self.bucket is not None and process.poll() is None and not self._done.is_set():
            for line in self._log_lines(instance_id):
                if line.startswith(GUARD_STARTED):
                    return True
            self.clock.sleep(0.3)
        return False

    def resumed_from(self, instance_id: str) -> int | None:
        """The checkpoint step the command's guard on ``instance_id`` resumed from (None: it
        started fresh, or never started a guard)."""
        for line in self._log_lines(instance_id):
            if line.startswith('{"event": "resumed"'):
                return int(json.loads(line)["step"])
        return None

    def _log_lines(self, instance_id: str) -> list[str]:
        """The lines the instance's agent has sent to the bucket so far (none without one)."""
        if self.bucket is None:
            return []
        lines = []
        pages = self.s3.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix="spotwise/jobs/"
        )
        for item in (item for page in pages for item in page.get("Contents", [])):
            if f"/{instance_id}/log/" in item["Key"]:
                body = self.s3.get_object(Bucket=self.bucket, Key=item["Key"])["Body"].read()
                lines += [json.loads(record)["line"] for record in body.decode().splitlines()]
        return lines

    def _notice(self, instance_id: str) -> None:
        """EC2's two-minute spot interruption notice, as its instance metadata serves it."""
        at = datetime.fromtimestamp(self.clock.time() + 120.0, UTC)
        when = at.strftime("%Y-%m-%dT%H:%M:%SZ")
        self.metadata.aws_action = {"action": "terminate", "time": when}
        self.noticed.append(instance_id)

    def played(self) -> str:
        """What it did: each instance booted, where its command started from, the notice."""
        lines = [f"local EC2 booted {len(self.booted)} instance(s):"]
        for instance_id, code in self.booted:
            step = self.resumed_from(instance_id)
            start = "started fresh" if step is None else f"resumed from its checkpoint, step {step}"
            notice = ", then got a spot interruption notice" if instance_id in self.noticed else ""
            lines.append(f"  {instance_id}: boot script exit {code}, its command {start}{notice}")
        if not self.noticed:
            lines.append(
                "  no notice was sent: the first instance's command never started a guard "
                "(executor.training.guard), or ended first"
            )
        return "\n".join(lines)

    def close(self) -> None:
        """Stop watching, once the boot scripts running now have ended."""
        self._done.set()
        self._thread.join(timeout=60)

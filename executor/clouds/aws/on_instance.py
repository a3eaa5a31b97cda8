"""What runs on a job's EC2 instance once the boot script
(:mod:`executor.clouds.aws.boot_script`) has made its venv: read the job's secrets from SSM
with the instance role, run the setup commands and then the command, stream their stdout and
stderr to S3 in small chunks, and report the exit code there.

Under ``s3://BUCKET/PREFIX/INSTANCE/``: ``log/00000001.jsonl``, ... (JSON lines
``{"stream": "out" | "err" | "setup", "line": ...}``, in order), then ``exit``. The supervisor
reads them (:class:`executor.clouds.aws.launcher.AwsInstance`). Commands run without a shell.

This module imports only the standard library at the top: ``python -m
spotwise.executor.clouds.aws.on_instance requirements`` runs before the instance's
requirements exist.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spotwise.executor.clouds.instance_folder import EXIT_NAME, LOG_FOLDER

if TYPE_CHECKING:
    from spotwise.executor.notices import Notice, NoticeSource, NoticeWatcher

INSTANCE_EXTRA = "instance"
"""The optional-dependency group naming what an instance needs to run the guard."""


def instance_requirements() -> list[str]:
    """The requirements of Spotwise's ``instance`` extra, from the installed metadata."""
    marker = f'extra == "{INSTANCE_EXTRA}"'
    return [
        r.split(";")[0].strip()
        for r in metadata.requires("spotwise") or []
        if marker in r.replace("'", '"')
    ]


def chunk_key(prefix: str, instance_id: str, number: int) -> str:
    """The S3 key of an instance's ``number``-th log chunk (keys sort in order)."""
    return f"{prefix}/{instance_id}/{LOG_FOLDER}/{number:08d}.jsonl"


class S3LogStream:
    """Lines in, chunks out: a chunk goes to S3 every ``flush_s`` seconds (or sooner when it
    passes ``max_bytes``), so a follower sees the output within seconds and a preemption
    loses at most the last ``flush_s`` of it."""

    def __init__(
        self,
        s3: Any,
        bucket: str,
        prefix: str,
        instance_id: str,
        *,
        flush_s: float = 2.0,
        max_bytes: int = 256 * 1024,
    ) -> None:
        self.s3, self.bucket, self.prefix, self.instance_id = s3, bucket, prefix, instance_id
        self.flush_s, self.max_bytes = flush_s, max_bytes
        self.chunks = 0
        self._lines: list[str] = []
        self._size = 0
        self._lock = threading.Lock()
        self._halt = threading.Event()
        self._flusher = threading.Thread(target=self._flush_every, daemon=True)
        self._flusher.start()

    def write(self, stream: str, line: str) -> None:
        """Buffer one line of ``stream``; flush now if the buffer is full."""
        record = json.dumps({"stream": stream, "line": line.rstrip("\n")}) + "\n"
        with self._lock:
            self._lines.append(record)
            self._size += len(record)
            full = self._size >= self.max_bytes
        if full:
            self._try_flush()

    def flush(self) -> None:
        """Send what is buffered as the next chunk; on an error it stays buffered (one sender
        at a time, so chunks keep their order)."""
        with self._lock:
            if not self._lines:
                return
            key = chunk_key(self.prefix, self.instance_id, self.chunks + 1)
            self.s3.put_object(Bucket=self.bucket, Key=key, Body="".join(self._lines).encode())
            self.chunks += 1
            self._lines, self._size = [], 0

    def _try_flush(self) -> None:
        try:
            self.flush()
        except Exception as exc:  # an S3 hiccup: the lines go with the next chunk
            print(f"spotwise: log chunk not sent yet ({exc})", file=sys.stderr)

    def _flush_every(self) -> None:
        while not self._halt.wait(self.flush_s):
            self._try_flush()

    def close(self) -> None:
        """Stop the periodic flusher and send what is left."""
        self._halt.set()
        self._flusher.join(timeout=10)
        self.flush()


def run_streamed(
    command: Sequence[str],
    log: S3LogStream,
    *,
    stream: str,
    env: dict[str, str],
    cwd: Path,
    notices: Sequence[NoticeSource] = (),
) -> int:
    """Run ``command`` (no shell) with its stdout and stderr lines sent to ``log`` (as "out"
    and "err" for the command, both as ``stream`` otherwise); a SIGTERM
    to this process (the instance shutting down) is passed on, and so is a stop notice from
    ``notices`` (an elastic node's torchrun agent then leaves the group at once, instead of
    restarting its workers until the instance is gone). Its exit code (127 when it cannot
    start)."""
    try:
        process = subprocess.Popen(
            list(command),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        log.write("err", f"spotwise: cannot start {command[0]!r}: {exc.strerror or exc}")
        return 127
    previous = signal.signal(signal.SIGTERM, lambda *_: process.send_signal(signal.SIGTERM))
    watcher = None
    try:
        names = ("out", "err") if stream == "out" else (stream, stream)
        readers = [
            threading.Thread(target=_pump, args=(pipe, log, name), daemon=True)
            for pipe, name in zip((process.stdout, process.stderr), names, strict=True)
        ]
        for reader in readers:
            reader.start()
        watcher = _forward_notices(process, notices, log) if notices else None
        code = process.wait()
        for reader in readers:
            reader.join(timeout=10)
    finally:
        signal.signal(signal.SIGTERM, previous)
        if watcher is not None:
            watcher.close()
    return code


def _forward_notices(
    process: subprocess.Popen[str], notices: Sequence[NoticeSource], log: S3LogStream
) -> NoticeWatcher:
    """A watcher of ``notices`` that sends ``process`` SIGTERM on the first stop notice."""
    from spotwise.executor.notices import NoticeWatcher

    def pass_on(notice: Notice) -> None:
        if notice.stop:
            log.write("setup", f"spotwise: {notice.source} notice ({notice.kind}): SIGTERM")
            process.send_signal(signal.SIGTERM)

    return NoticeWatcher(notices, on_notice=pass_on).start()


def _pump(pipe: Any, log: S3LogStream, stream: str) -> None:
    for line in pipe:
        log.write(stream, line)


def read_secrets(ssm: Any, secrets: Sequence[str]) -> dict[str, str]:
    """``NAME=PARAMETER`` pairs → NAME: the parameter's decrypted value."""
    values = {}
    for pair in secrets:
        name, _, parameter = pair.partition("=")
        answer = ssm.get_parameter(Name=parameter, WithDecryption=True)
        values[name] = answer["Parameter"]["Value"]
    return values


def run(args: argparse.Namespace) -> int:
    """Setup, then the command, streamed; the exit code reported to S3."""
    import boto3

    s3 = boto3.client("s3")
    log = S3LogStream(s3, args.bucket, args.prefix, args.instance, flush_s=args.flush_s)
    cwd = Path.cwd()
    import spotwise  # the wheel the boot script installed

    log.write("setup", f"spotwise: running from {Path(spotwise.__file__).parent} in {cwd}")
    code = 0
    try:
        env = dict(os.environ)
        env.update(read_secrets(boto3.client("ssm"), args.secret))
        for setup in args.setup:
            log.write("setup", f"spotwise: setup: {setup}")
            code = run_streamed(shlex.split(setup), log, stream="setup", env=env, cwd=cwd)
            if code != 0:
                log.write("setup", f"spotwise: setup failed with exit code {code}")
                return code
        from spotwise.executor.clouds.aws.notice import AwsImds

        # its own cloud's notice ($SPOTWISE_AWS_IMDS_URL overrides where it is asked)
        notices = [AwsImds.from_env()] if args.forward_notices else []
        code = run_streamed(args.command, log, stream="out", env=env, cwd=cwd, notices=notices)
        return code
    except Exception as exc:  # report, never leave the supervisor guessing
        log.write("err", f"spotwise: {type(exc).__name__}: {exc}")
        code = 1
        return code
    finally:
        log.close()
        key = f"{args.prefix}/{args.instance}/{EXIT_NAME}"
        s3.put_object(Bucket=args.bucket, Key=key, Body=f"{code}\n".encode())
        if args.reported:
            Path(args.reported).touch()


def main(argv: Sequence[str] | None = None) -> int:
    """The on-instance agent's command line: read its arguments and do what they ask."""
    parser = argparse.ArgumentParser(prog="python -m spotwise.executor.clouds.aws.on_instance")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("requirements", help="print what an instance needs, one per line")
    runner = sub.add_parser("run", help="run setup and the command, streaming to S3")
    runner.add_argument("--bucket", required=True)
    runner.add_argument("--prefix", required=True)
    runner.add_argument("--instance", required=True)
    runner.add_argument("--setup", action="append", default=[])
    runner.add_argument("--secret", action="append", default=[], help="NAME=SSM_PARAMETER")
    runner.add_argument("--flush-s", type=float, default=2.0)
    runner.add_argument("--reported", help="a file to create once the exit code is in S3")
    runner.add_argument(
        "--forward-notices",
        action="store_true",
        help="SIGTERM the command on its cloud's stop notice",
    )
    runner.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.action == "requirements":
        print("\n".join(instance_requirements()))
        return 0
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.command:
        parser.error("no command after --")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())

"""The on-instance agent of every cloud: what runs on a job's VM once its boot script
(:mod:`executor.clouds.boot_script`) has made the venv. It reads the job's secrets, runs the
setup commands and then the command (without a shell), ships their stdout and stderr to the
job's bucket in small chunks, passes the cloud's stop notice on to the command as SIGTERM, and
reports the exit code there.

Under ``PREFIX/INSTANCE/`` in the job's bucket: ``log/00000001.jsonl``, ... (JSON lines
``{"stream": "out" | "err" | "setup", "line": ...}``, in order), then ``exit``. The supervisor
reads them (each cloud's ``launcher.py``). What a cloud does its own way (how it writes an
object, reads a secret and gives notice, and the options that say where its bucket is) is its
:class:`CloudAgent`, in its ``on_instance.py``, whose ``python -m`` runs :func:`main`.

This module imports only the standard library and :mod:`executor.clouds.instance_folder` (which
imports nothing) at the top: ``python -m spotwise.executor.clouds.NAME.on_instance
requirements`` runs before the VM's requirements exist.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from spotwise.executor.clouds.instance_folder import EXIT_NAME, LOG_FOLDER

if TYPE_CHECKING:
    from spotwise.executor.notices import Notice, NoticeSource, NoticeWatcher

INSTANCE_EXTRA = "instance"
"""The optional-dependency group naming what an instance needs to run the guard."""

PutObject = Callable[[str, bytes], None]
"""Writes ``bytes`` to a key of the job's bucket, replacing what is there."""


def extra_requirements(extra: str, names: Sequence[str] | None = None) -> list[str]:
    """The requirements of Spotwise's optional-dependency group ``extra`` (only those whose
    package is in ``names``, when given), at the group's versions, from the installed
    metadata."""
    wanted = []
    for requirement in metadata.requires("spotwise") or []:
        spec, _, marker = requirement.partition(";")
        name = re.split(r"[<>=!~ \[]", spec.strip(), maxsplit=1)[0].lower()
        if f'extra == "{extra}"' in marker.replace("'", '"') and (names is None or name in names):
            wanted.append(spec.strip())
    return wanted


def chunk_key(prefix: str, instance_id: str, number: int) -> str:
    """The key of an instance's ``number``-th log chunk (keys sort in order)."""
    return f"{prefix}/{instance_id}/{LOG_FOLDER}/{number:08d}.jsonl"


class LogStream:
    """Lines in, chunks out: a chunk goes to the bucket every ``flush_s`` seconds (or sooner
    when it passes ``max_bytes``), so a follower sees the output within seconds and a
    preemption loses at most the last ``flush_s`` of it."""

    def __init__(
        self,
        put: PutObject,
        prefix: str,
        instance_id: str,
        *,
        flush_s: float = 2.0,
        max_bytes: int = 256 * 1024,
    ) -> None:
        self.put, self.prefix, self.instance_id = put, prefix, instance_id
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
            self.put(key, "".join(self._lines).encode())
            self.chunks += 1
            self._lines, self._size = [], 0

    def _try_flush(self) -> None:
        try:
            self.flush()
        except Exception as exc:  # a storage hiccup: the lines go with the next chunk
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
    log: LogStream,
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
    process: subprocess.Popen[str], notices: Sequence[NoticeSource], log: LogStream
) -> NoticeWatcher:
    """A watcher of ``notices`` that sends ``process`` SIGTERM on the first stop notice."""
    from spotwise.executor.notices import NoticeWatcher

    def pass_on(notice: Notice) -> None:
        if notice.stop:
            log.write("setup", f"spotwise: {notice.source} notice ({notice.kind}): SIGTERM")
            process.send_signal(signal.SIGTERM)

    return NoticeWatcher(notices, on_notice=pass_on).start()


def _pump(pipe: Any, log: LogStream, stream: str) -> None:
    for line in pipe:
        log.write(stream, line)


class CloudAgent(ABC):
    """What the agent does a cloud's own way: write an object to the job's bucket, read the
    job's secrets and watch for the stop notice, with the VM's identity; and its options of
    ``run`` (where the bucket is). Made from the ``run`` arguments, once the VM's
    requirements are installed."""

    module: ClassVar[str]
    """The cloud's agent module, which the boot script runs with ``python -m``."""
    store: ClassVar[str]
    """Its object store's name, as the help says it."""
    secret_form: ClassVar[str]
    """How ``--secret`` names a variable and the secret that holds its value."""
    cloud_extra: ClassVar[str | None] = None
    """Spotwise's optional-dependency group of the cloud, when a VM needs some of it."""
    extra_packages: ClassVar[tuple[str, ...]] = ()
    """The packages of that group a VM needs."""

    @abstractmethod
    def __init__(self, args: argparse.Namespace) -> None:
        """Reach the job's bucket and secrets as ``args`` (of ``run``) say."""

    @classmethod
    @abstractmethod
    def add_options(cls, runner: argparse.ArgumentParser) -> None:
        """Add the cloud's own options to ``runner`` (the ``run`` command)."""

    @classmethod
    def option_problem(cls, args: argparse.Namespace) -> str | None:
        """What is wrong with ``args`` beyond what the parser checks (None: nothing)."""
        return None

    @classmethod
    def requirements(cls) -> list[str]:
        """What a VM needs: the ``instance`` extra, and the cloud's packages of its extra."""
        own = extra_requirements(cls.cloud_extra, cls.extra_packages) if cls.cloud_extra else []
        return [*extra_requirements(INSTANCE_EXTRA), *own]

    @abstractmethod
    def put_object(self, key: str, body: bytes) -> None:
        """Write ``body`` to ``key`` in the job's bucket, replacing it."""

    @abstractmethod
    def secret_reader(self) -> Callable[[str], str]:
        """What reads the value of one of the job's secrets, named in the cloud's form."""

    @abstractmethod
    def notice_source(self) -> NoticeSource:
        """The cloud's stop notice, at its metadata endpoint as the environment gives it."""


def read_secrets(pairs: Sequence[str], read: Callable[[str], str]) -> dict[str, str]:
    """``NAME=SECRET`` pairs → NAME: the value ``read`` gives for ``SECRET``."""
    values = {}
    for pair in pairs:
        name, _, secret = pair.partition("=")
        values[name] = read(secret)
    return values


def run_on_instance(cloud: CloudAgent, args: argparse.Namespace) -> int:
    """Setup, then the command, streamed; the exit code reported to the job's bucket."""
    log = LogStream(cloud.put_object, args.prefix, args.instance, flush_s=args.flush_s)
    cwd = Path.cwd()
    import spotwise  # the wheel the boot script installed

    log.write("setup", f"spotwise: running from {Path(spotwise.__file__).parent} in {cwd}")
    code = 0
    try:
        env = dict(os.environ)
        if args.secret:
            env.update(read_secrets(args.secret, cloud.secret_reader()))
        for setup in args.setup:
            log.write("setup", f"spotwise: setup: {setup}")
            code = run_streamed(shlex.split(setup), log, stream="setup", env=env, cwd=cwd)
            if code != 0:
                log.write("setup", f"spotwise: setup failed with exit code {code}")
                return code
        notices = [cloud.notice_source()] if args.forward_notices else []
        code = run_streamed(args.command, log, stream="out", env=env, cwd=cwd, notices=notices)
        return code
    except Exception as exc:  # report, never leave the supervisor guessing
        log.write("err", f"spotwise: {type(exc).__name__}: {exc}")
        code = 1
        return code
    finally:
        log.close()
        cloud.put_object(f"{args.prefix}/{args.instance}/{EXIT_NAME}", f"{code}\n".encode())
        if args.reported:
            Path(args.reported).touch()


def main(cloud: type[CloudAgent], argv: Sequence[str] | None = None) -> int:
    """The command line of ``cloud``'s agent: read its arguments and do what they ask."""
    parser = argparse.ArgumentParser(prog=f"python -m {cloud.module}")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("requirements", help="print what a VM needs, one per line")
    runner = sub.add_parser("run", help=f"run setup and the command, streaming to {cloud.store}")
    cloud.add_options(runner)
    runner.add_argument("--prefix", required=True)
    runner.add_argument("--instance", required=True)
    runner.add_argument("--setup", action="append", default=[])
    runner.add_argument("--secret", action="append", default=[], help=cloud.secret_form)
    runner.add_argument("--flush-s", type=float, default=2.0)
    runner.add_argument(
        "--reported", help=f"a file to create once the exit code is in {cloud.store}"
    )
    runner.add_argument(
        "--forward-notices",
        action="store_true",
        help="SIGTERM the command on its cloud's stop notice",
    )
    runner.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.action == "requirements":
        print("\n".join(cloud.requirements()))
        return 0
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.command:
        parser.error("no command after --")
    if (problem := cloud.option_problem(args)) is not None:
        parser.error(problem)
    return run_on_instance(cloud(args), args)

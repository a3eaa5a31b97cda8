"""The on-instance agent every cloud runs, on a bucket kept in memory: output in ordered chunks
that survive a storage hiccup, stdout and stderr kept apart, a stop notice passed on as SIGTERM,
setup failures reported as the exit code, secrets read only when there are some, and a VM's
requirements read off the installed metadata."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import pytest

from spotwise.executor.clouds.agent import (
    CloudAgent,
    LogStream,
    chunk_key,
    extra_requirements,
    main,
    run_streamed,
)
from spotwise.executor.notices import Notice, NoticeSource


class Bucket:
    """Objects by key; the first ``failures`` puts raise, as a storage hiccup would."""

    def __init__(self, failures: int = 0) -> None:
        self.objects: dict[str, bytes] = {}
        self.failures = failures

    def put(self, key: str, body: bytes) -> None:
        if self.failures:
            self.failures -= 1
            raise OSError("storage hiccup")
        self.objects[key] = body

    def records(self, prefix: str, instance: str) -> list[dict[str, str]]:
        """Every line sent, chunk by chunk in key order."""
        folder = f"{prefix}/{instance}/log/"
        chunks = sorted(key for key in self.objects if key.startswith(folder))
        return [json.loads(line) for key in chunks for line in self.objects[key].splitlines()]


class FileNotice(NoticeSource):
    """A stop notice once ``path`` exists."""

    name = "file"
    notice_s = 30.0

    def __init__(self, path: Path) -> None:
        self.path = path

    def poll(self) -> Notice | None:
        return Notice(kind="preempt", source=self.name) if self.path.exists() else None


class MemoryAgent(CloudAgent):
    """A cloud whose bucket and secrets are this process's memory."""

    module = "tests.executor.clouds.test_agent"
    store = "memory"
    secret_form = "NAME=KEY"
    bucket: ClassVar[Bucket] = Bucket()
    secrets: ClassVar[dict[str, str]] = {}
    secrets_read: ClassVar[list[str]] = []

    def __init__(self, args: argparse.Namespace) -> None:
        self.notice_file = Path(args.notice_file)

    @classmethod
    def add_options(cls, runner: argparse.ArgumentParser) -> None:
        runner.add_argument("--notice-file", default="/nonexistent")

    @classmethod
    def option_problem(cls, args: argparse.Namespace) -> str | None:
        return "--flush-s must be positive" if args.flush_s <= 0 else None

    def put_object(self, key: str, body: bytes) -> None:
        self.bucket.put(key, body)

    def secret_reader(self) -> Callable[[str], str]:
        def read(key: str) -> str:
            self.secrets_read.append(key)
            return self.secrets[key]

        return read

    def notice_source(self) -> NoticeSource:
        return FileNotice(self.notice_file)


@pytest.fixture
def agent() -> type[MemoryAgent]:
    MemoryAgent.bucket = Bucket()
    MemoryAgent.secrets = {"k1": "wb-1"}
    MemoryAgent.secrets_read = []
    return MemoryAgent


def test_chunks_keep_their_order_and_a_storage_hiccup_loses_no_line() -> None:
    bucket = Bucket(failures=1)
    log = LogStream(bucket.put, "p", "i-1", flush_s=3600, max_bytes=10**9)
    log.write("out", "kept through a failed send\n")
    with pytest.raises(OSError, match="storage hiccup"):
        log.flush()
    log.max_bytes = 200  # small chunks from here on
    for n in range(20):
        log.write("err" if n % 2 else "out", f"line {n}")
    log.close()
    assert log.chunks > 3
    assert chunk_key("p", "i-1", 12) == "p/i-1/log/00000012.jsonl"
    assert f"p/i-1/log/{log.chunks:08d}.jsonl" in bucket.objects
    got = bucket.records("p", "i-1")
    assert [r["line"] for r in got] == ["kept through a failed send"] + [
        f"line {n}" for n in range(20)
    ]
    assert [r["stream"] for r in got[1:4]] == ["out", "err", "out"]


def test_stdout_and_stderr_stay_apart_and_the_exit_code_comes_back(tmp_path: Path) -> None:
    bucket = Bucket()
    log = LogStream(bucket.put, "p", "i-2", flush_s=0.1)
    script = "import sys; print('to out'); print('to err', file=sys.stderr); sys.exit(3)"
    code = run_streamed([sys.executable, "-c", script], log, stream="out", env={}, cwd=tmp_path)
    setup = run_streamed([sys.executable, "-c", script], log, stream="setup", env={}, cwd=tmp_path)
    missing = run_streamed(["no-such-program-x"], log, stream="setup", env={}, cwd=tmp_path)
    log.close()
    assert (code, setup, missing) == (3, 3, 127)
    got = [(r["stream"], r["line"]) for r in bucket.records("p", "i-2")]
    assert {("out", "to out"), ("err", "to err"), ("setup", "to out"), ("setup", "to err")} <= {
        *got
    }
    assert any(s == "err" and "cannot start 'no-such-program-x'" in line for s, line in got)


def test_a_failed_setup_is_the_exit_code_and_the_command_never_runs(
    agent: type[MemoryAgent], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "ran"
    code = main(
        agent,
        [
            *("run", "--prefix", "p", "--instance", "i-3"),
            *("--setup", f"{sys.executable} -c 'import sys; sys.exit(4)'"),
            *("--reported", str(tmp_path / "reported")),
            *("--", sys.executable, "-c", f"open({str(marker)!r}, 'w')"),
        ],
    )
    assert code == 4 and not marker.exists() and (tmp_path / "reported").exists()
    assert agent.bucket.objects["p/i-3/exit"] == b"4\n"
    lines = [r["line"] for r in agent.bucket.records("p", "i-3")]
    assert lines[0].startswith("spotwise: running from ")
    assert "spotwise: setup failed with exit code 4" in lines
    assert agent.secrets_read == []  # no secret named: none read


def test_the_command_runs_with_its_secrets_in_its_environment(
    agent: type[MemoryAgent], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    script = "import os, sys; print('key=' + os.environ['WANDB_API_KEY']); sys.exit(5)"
    args = ["run", "--prefix", "p", "--instance", "i-4", "--secret", "WANDB_API_KEY=k1"]
    code = main(agent, [*args, "--", sys.executable, "-c", script])
    assert code == 5 and agent.bucket.objects["p/i-4/exit"] == b"5\n"
    assert {"stream": "out", "line": "key=wb-1"} in agent.bucket.records("p", "i-4")
    assert agent.secrets_read == ["k1"]


def test_a_stop_notice_is_passed_to_the_command_as_sigterm(
    agent: type[MemoryAgent], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An elastic node's agent forwards its cloud's notice: its torchrun leaves at once."""
    monkeypatch.chdir(tmp_path)
    up = tmp_path / "up"
    script = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *_: (print('sigterm', flush=True), sys.exit(75)))\n"
        f"open({str(up)!r}, 'w').close()\n"  # the notice comes once the handler is in place
        "time.sleep(60)\n"
    )
    args = ["run", "--prefix", "p", "--instance", "i-9", "--notice-file", str(up)]
    code = main(agent, [*args, "--forward-notices", "--", sys.executable, "-c", script])
    assert code == 75 and agent.bucket.objects["p/i-9/exit"] == b"75\n"
    lines = [r["line"] for r in agent.bucket.records("p", "i-9")]
    assert "sigterm" in lines
    assert "spotwise: file notice (preempt): SIGTERM" in lines


def test_an_error_of_the_cloud_is_reported_as_exit_code_1(
    agent: type[MemoryAgent], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["run", "--prefix", "p", "--instance", "i-5", "--secret", "X=no-such-key"]
    assert main(agent, [*args, "--", sys.executable, "-c", "pass"]) == 1
    assert agent.bucket.objects["p/i-5/exit"] == b"1\n"
    assert {"stream": "err", "line": "spotwise: KeyError: 'no-such-key'"} in (
        agent.bucket.records("p", "i-5")
    )


def test_the_command_line_refuses_what_it_cannot_run(
    agent: type[MemoryAgent], capsys: pytest.CaptureFixture[str]
) -> None:
    for argv, message in [
        (["run", "--prefix", "p", "--instance", "i", "--"], "no command after --"),
        (["run", "--prefix", "p", "--instance", "i", "--flush-s", "0", "x"], "must be positive"),
    ]:
        with pytest.raises(SystemExit) as exited:
            main(agent, argv)
        assert exited.value.code == 2 and message in capsys.readouterr().err
    assert not agent.bucket.objects


def test_a_vm_needs_the_instance_extra_and_the_clouds_packages_of_its_own(
    agent: type[MemoryAgent], capsys: pytest.CaptureFixture[str]
) -> None:
    instance = extra_requirements("instance")
    assert any(r.startswith("torch") for r in instance)
    assert extra_requirements("instance", ["numpy"]) == [
        r for r in instance if r.startswith("numpy")
    ]
    assert main(agent, ["requirements"]) == 0
    assert capsys.readouterr().out.splitlines() == instance

"""The instance-side runner against moto's S3 and SSM on 127.0.0.1: output in ordered chunks
that survive an S3 hiccup, stdout and stderr kept apart, setup failures reported as the exit
code, secrets read from SSM into the command's environment."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import boto3
import pytest

from spotwise.executor.clouds.aws.on_instance import S3LogStream, chunk_key, main, run_streamed

BUCKET = "logs"


@pytest.fixture
def s3(moto_server: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    client = boto3.client("s3")
    client.create_bucket(Bucket=BUCKET)
    return client


def records(s3: Any, prefix: str, instance: str) -> list[dict[str, str]]:
    """Every line sent, chunk by chunk in key order."""
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{prefix}/{instance}/log/")
    lines = []
    for item in listed.get("Contents", []):
        body = s3.get_object(Bucket=BUCKET, Key=item["Key"])["Body"].read().decode()
        lines += [json.loads(line) for line in body.splitlines()]
    return lines


def test_chunks_keep_their_order_and_an_s3_hiccup_loses_no_line(s3: Any) -> None:
    log = S3LogStream(s3, "no-such-bucket", "p", "i-1", flush_s=3600, max_bytes=10**9)
    log.write("out", "kept through a failed send\n")
    with pytest.raises(Exception, match="NoSuchBucket"):
        log.flush()
    log.bucket = BUCKET  # the bucket is reachable again
    log.max_bytes = 200  # small chunks from here on
    for n in range(20):
        log.write("err" if n % 2 else "out", f"line {n}")
    log.close()
    assert log.chunks > 3
    assert chunk_key("p", "i-1", 12) == "p/i-1/log/00000012.jsonl"
    got = records(s3, "p", "i-1")
    assert [r["line"] for r in got] == ["kept through a failed send"] + [
        f"line {n}" for n in range(20)
    ]
    assert [r["stream"] for r in got[1:4]] == ["out", "err", "out"]


def test_stdout_and_stderr_stay_apart_and_the_exit_code_comes_back(s3: Any, tmp_path: Path) -> None:
    log = S3LogStream(s3, BUCKET, "p", "i-2", flush_s=0.1)
    script = "import sys; print('to out'); print('to err', file=sys.stderr); sys.exit(3)"
    code = run_streamed([sys.executable, "-c", script], log, stream="out", env={}, cwd=tmp_path)
    missing = run_streamed(["no-such-program-x"], log, stream="setup", env={}, cwd=tmp_path)
    log.close()
    assert (code, missing) == (3, 127)
    got = {(r["stream"], r["line"]) for r in records(s3, "p", "i-2")}
    assert {("out", "to out"), ("err", "to err")} <= got
    assert any(s == "err" and "cannot start 'no-such-program-x'" in line for s, line in got)


def test_a_failed_setup_is_the_exit_code_and_the_command_never_runs(
    s3: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "ran"
    code = main(
        [
            *("run", "--bucket", BUCKET, "--prefix", "p", "--instance", "i-3"),
            *("--setup", f"{sys.executable} -c 'import sys; sys.exit(4)'"),
            *("--reported", str(tmp_path / "reported")),
            *("--", sys.executable, "-c", f"open({str(marker)!r}, 'w')"),
        ]
    )
    assert code == 4 and not marker.exists() and (tmp_path / "reported").exists()
    assert s3.get_object(Bucket=BUCKET, Key="p/i-3/exit")["Body"].read() == b"4\n"
    lines = [r["line"] for r in records(s3, "p", "i-3")]
    assert "spotwise: setup failed with exit code 4" in lines


def test_secrets_come_from_ssm_into_the_command_environment_only(
    s3: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    boto3.client("ssm").put_parameter(
        Name="/spotwise/j/WANDB_API_KEY", Value="wb-1", Type="SecureString"
    )
    monkeypatch.chdir(tmp_path)
    script = "import os; print('key=' + os.environ['WANDB_API_KEY'])"
    code = main(
        [
            *("run", "--bucket", BUCKET, "--prefix", "p", "--instance", "i-4"),
            *("--secret", "WANDB_API_KEY=/spotwise/j/WANDB_API_KEY"),
            *("--", sys.executable, "-c", script),
        ]
    )
    assert code == 0
    assert {"stream": "out", "line": "key=wb-1"} in records(s3, "p", "i-4")


@pytest.mark.slow
def test_a_stop_notice_from_imds_is_passed_to_the_command_as_sigterm(
    s3: Any, tmp_path: Path
) -> None:
    """An elastic node's runner forwards the two-minute notice: its torchrun leaves at once."""
    from spotwise.executor.clouds.aws.notice import AwsImds
    from tests.executor.fake_metadata import FakeMetadata

    metadata = FakeMetadata()
    log = S3LogStream(s3, BUCKET, "p", "i-9", flush_s=0.1)
    script = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *_: (print('sigterm', flush=True), sys.exit(75)))\n"
        "print('waiting', flush=True)\n"
        "time.sleep(60)\n"
    )
    action = {"action": "terminate", "time": "2030-01-01T00:00:00Z"}
    # the notice comes once the command is up (its handler in place)
    notice = threading.Timer(2.0, lambda: setattr(metadata, "aws_action", action))
    notice.start()
    try:
        code = run_streamed(
            [sys.executable, "-c", script],
            log,
            stream="out",
            env={},
            cwd=tmp_path,
            notices=[AwsImds(metadata.url)],
        )
    finally:
        notice.cancel()
        metadata.close()
        log.close()
    assert code == 75
    lines = [r["line"] for r in records(s3, "p", "i-9")]
    assert "sigterm" in lines
    assert any("aws notice (terminate): SIGTERM" in line for line in lines)

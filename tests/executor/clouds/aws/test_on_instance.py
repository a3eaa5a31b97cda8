"""AWS's side of the on-instance agent against moto's S3 and SSM on 127.0.0.1 and a fake IMDS:
the log chunks and the exit code in S3, secrets read from SSM into the command's environment,
and IMDS's notice passed on to the command."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import boto3
import pytest

from spotwise.executor.clouds.agent import main
from spotwise.executor.clouds.aws.on_instance import AwsAgent

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


def test_secrets_come_from_ssm_and_the_output_and_exit_code_go_to_s3(
    s3: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    boto3.client("ssm").put_parameter(
        Name="/spotwise/j/WANDB_API_KEY", Value="wb-1", Type="SecureString"
    )
    monkeypatch.chdir(tmp_path)
    script = "import os, sys; print('key=' + os.environ['WANDB_API_KEY']); sys.exit(3)"
    code = main(
        AwsAgent,
        [
            *("run", "--bucket", BUCKET, "--prefix", "p", "--instance", "i-4"),
            *("--secret", "WANDB_API_KEY=/spotwise/j/WANDB_API_KEY"),
            *("--", sys.executable, "-c", script),
        ],
    )
    assert code == 3
    assert s3.get_object(Bucket=BUCKET, Key="p/i-4/exit")["Body"].read() == b"3\n"
    assert {"stream": "out", "line": "key=wb-1"} in records(s3, "p", "i-4")


@pytest.mark.slow
def test_a_stop_notice_from_imds_is_passed_to_the_command_as_sigterm(
    s3: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An elastic node's agent forwards the two-minute notice: its torchrun leaves at once."""
    from spotwise.executor.local_clouds.metadata import FakeMetadata

    metadata = FakeMetadata()
    monkeypatch.setenv("SPOTWISE_AWS_IMDS_URL", metadata.url)
    monkeypatch.chdir(tmp_path)
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
        code = main(
            AwsAgent,
            [
                *("run", "--bucket", BUCKET, "--prefix", "p", "--instance", "i-9"),
                *("--forward-notices", "--", sys.executable, "-c", script),
            ],
        )
    finally:
        notice.cancel()
        metadata.close()
    assert code == 75
    lines = [r["line"] for r in records(s3, "p", "i-9")]
    assert "sigterm" in lines
    assert any("aws notice (terminate): SIGTERM" in line for line in lines)

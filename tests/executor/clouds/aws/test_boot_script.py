"""The AWS instance's user data: the shipped code fetched, the command run under the runner,
no secret in it and every flag quoted."""

from __future__ import annotations

from spotwise.executor.clouds.aws.boot_script import boot_script
from spotwise.executor.clouds.code_bundle import ShippedCode

REGION, BUCKET = "us-east-1", "spotwise-ckpt"
CODE = ShippedCode(
    "spotwise/code/aa11/workdir.tar.gz", "spotwise/code/bb22/spotwise-0.1.0-py3-none-any.whl"
)
COMMAND = ["python", "-m", "spotwise.executor.examples.train_mlp", "--ckpt", f"s3://{BUCKET}/ckpt"]


def test_the_boot_script_fetches_the_shipped_code_and_runs_the_command_under_the_runner() -> None:
    script = boot_script(
        COMMAND,
        {"SPOTWISE_POOL": "us-east-1a"},
        code=CODE,
        region=REGION,
        bucket=BUCKET,
        prefix="spotwise/jobs/j1",
        setup=["pip install -r requirements.txt"],
    )
    assert script.startswith("#!/bin/bash")
    assert "pip install spotwise" not in script  # nothing by name from a public index
    assert f"s3 get {CODE.wheel_key} " in script and f"s3 get {CODE.workdir_key} " in script
    assert "--setup 'pip install -r requirements.txt'" in script
    assert "env SPOTWISE_NOTICES=aws SPOTWISE_POOL=us-east-1a" in script
    assert "-- python -m spotwise.executor.examples.train_mlp" in script
    assert script.rstrip().endswith("$SHUTDOWN")


def test_the_boot_script_carries_no_secret_and_quotes_what_a_flag_names() -> None:
    env = {
        "SPOTWISE_POOL": "us-east-1a",
        "SPOTWISE_API_TOKEN": "tok-123",
        "SPOTWISE_STORE": "/home/me/market.duckdb",
        "AWS_SECRET_ACCESS_KEY": "aws-456",
    }
    hostile = ["python", "train.py", "--name", "$(touch /tmp/pwned)"]
    script = boot_script(
        hostile, env, code=CODE, region=REGION, bucket=BUCKET, prefix="p", setup=["x; rm -rf /"]
    )
    assert "SPOTWISE_POOL=us-east-1a" in script
    for value in ("tok-123", "aws-456", "SPOTWISE_API_TOKEN", "/home/me"):
        assert value not in script
    assert "--name '$(touch /tmp/pwned)'" in script
    assert "--setup 'x; rm -rf /'" in script

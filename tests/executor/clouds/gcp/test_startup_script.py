"""The GCP VM's startup script: no secret in it, every value quoted."""

from __future__ import annotations

from spotwise.executor.clouds.code_bundle import ShippedCode
from spotwise.executor.clouds.gcp.startup_script import startup_script

CODE = ShippedCode(
    "spotwise/code/aa11/workdir.tar.gz", "spotwise/code/bb22/spotwise-0.1.0-py3-none-any.whl"
)


def test_the_startup_script_carries_no_secret_and_quotes_what_a_flag_names() -> None:
    env = {"SPOTWISE_POOL": "us-central1-a", "SPOTWISE_API_TOKEN": "tok-123"}
    hostile = ["python", "train.py", "--name", "$(touch /tmp/pwned)"]
    script = startup_script(
        hostile,
        env,
        code=CODE,
        project="p-1",
        bucket="b; rm -rf /",
        prefix="spotwise/jobs/j1",
        instance="spotwise-j1-abc",
        setup=["x; rm -rf /"],
        endpoint_url="http://127.0.0.1:1/$(id)",
    )
    assert "SPOTWISE_POOL=us-central1-a" in script
    assert "tok-123" not in script and "SPOTWISE_API_TOKEN" not in script
    assert "--name '$(touch /tmp/pwned)'" in script and "--setup 'x; rm -rf /'" in script
    assert "BUCKET='b; rm -rf /'" in script
    assert "--endpoint-url 'http://127.0.0.1:1/$(id)'" in script

"""The boot script every cloud shares, around a toy cloud whose bucket is a folder: valid bash,
every value quoted, no secret and nothing from a public index in it, the agent's options in
their order, and a boot that fails before the command leaves its log and exit code 1 in the
bucket."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

from spotwise.core.settings import CloudEndpoint
from spotwise.executor.clouds.boot_script import CloudBoot
from spotwise.executor.clouds.code_bundle import ShippedCode

CODE = ShippedCode("spotwise/code/aa11/workdir.tar.gz", "spotwise/code/bb22/spotwise-0.1-any.whl")
FOLDER = """\
folder() {  # folder get|put KEY FILE: $BUCKET is a folder
  if [ "$1" = get ]; then cp "$BUCKET/$2" "$3"
  else mkdir -p "$(dirname "$BUCKET/$2")" && cp "$3" "$BUCKET/$2"
  fi
}
"""
TOY = CloudBoot(
    cloud="toy",
    agent="spotwise.executor.clouds.toy.on_instance",
    agent_options='--bucket "$BUCKET"',
    store="folder",
    store_function=FOLDER,
    store_url="folder://$BUCKET/",
    exported=("TOY_REGION",),
)


def test_the_script_quotes_every_value_and_carries_no_secret() -> None:
    hostile = ["python", "train.py", "--name", "$(touch /tmp/pwned)"]
    env = {
        "SPOTWISE_POOL": "1; rm -rf /",
        "SPOTWISE_NODE": "0",
        "SPOTWISE_API_TOKEN": "tok-123",
        "SPOTWISE_STORE": "/home/me/market.duckdb",
    }
    script = TOY.script(
        hostile,
        env,
        code=CODE,
        settings={"TOY_REGION": "r 1", "BUCKET": "b'x"},
        prefix="spotwise/jobs/j1",
        instance="vm-$(id)",
        options=["--endpoint-url", "http://127.0.0.1:1/$(id)"],
        setup=["x; rm -rf /"],
        secrets={"TOKEN": "toy-j1-token", "A": "toy-a"},
    )
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
    assert "export TOY_REGION='r 1'\nBUCKET='b'\"'\"'x'\nPREFIX=spotwise/jobs/j1\n" in script
    assert "ID='vm-$(id)'\n" in script and "IMDS=" not in script
    assert "env SPOTWISE_NODE=0 SPOTWISE_NOTICES=toy SPOTWISE_POOL='1; rm -rf /'" in script
    for value in ("tok-123", "SPOTWISE_API_TOKEN", "/home/me", "pip install spotwise"):
        assert value not in script
    assert (
        "--forward-notices --endpoint-url 'http://127.0.0.1:1/$(id)' --setup 'x; rm -rf /' "
        "--secret A=toy-a --secret TOKEN=toy-j1-token -- python train.py --name "
        "'$(touch /tmp/pwned)'\n"
    ) in script
    assert f"folder get {CODE.wheel_key} " in script and f"folder get {CODE.workdir_key} " in script
    assert "-m spotwise.executor.clouds.toy.on_instance run" in script
    assert script.startswith("#!/bin/bash\n") and script.endswith("\n$SHUTDOWN\n")


def test_a_cloud_that_finds_its_id_asks_its_metadata_endpoint() -> None:
    asking = replace(
        TOY,
        identity='ID=$(curl -sf "$IMDS/id")\n',
        metadata=CloudEndpoint("SPOTWISE_TOY_METADATA_URL", "http://169.254.169.254", https=False),
    )
    script = asking.script(["true"], {}, code=CODE, settings={"BUCKET": "b"}, prefix="p")
    assert 'IMDS="${SPOTWISE_TOY_METADATA_URL:-http://169.254.169.254}"\n' in script
    assert 'exec >>"$ROOT/boot.log" 2>&1\nID=$(curl -sf "$IMDS/id")\nfolder() {' in script
    assert "\nID=" not in script.split("exec >>")[0]  # the launcher did not name it
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0


def test_a_boot_that_fails_before_the_command_leaves_its_log_and_exit_code_1(
    tmp_path: Path,
) -> None:
    bucket, root = tmp_path / "bucket", tmp_path / "root"
    bucket.mkdir()
    script = TOY.script(
        ["true"], {}, code=CODE, settings={"BUCKET": str(bucket)}, prefix="p", instance="vm-1"
    )
    env = {"PATH": "/usr/bin:/bin", "SPOTWISE_ROOT": str(root)}
    env["SPOTWISE_SHUTDOWN"] = f"touch {tmp_path / 'shut-down'}"
    done = subprocess.run(["bash"], input=script, text=True, env=env, timeout=60)
    assert done.returncode == 1 and (tmp_path / "shut-down").exists()
    assert (bucket / "p/vm-1/exit").read_text() == "1\n"
    log = (bucket / "p/vm-1/boot.log").read_text()
    assert f"spotwise boot: cannot fetch folder://{bucket}/{CODE.wheel_key}" in log

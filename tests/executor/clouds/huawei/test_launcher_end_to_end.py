"""`spotwise run --launcher huawei` end to end on the ECS/CSMS fake (the real SDK against it),
moto's S3 server as OBS and a fake metadata server: the workdir and a wheel built from this
checkout are shipped to OBS, and each "server" is the user data the launcher sent, run with bash
in a fresh folder as cloud-init would: it fetches the code, builds a venv, trains, streams its
output back and reports its exit code. The first server gets the spot ``instance-action`` once it
trained a step (a reclaim notice): the job checkpoints to ``obs://`` and stops; the supervisor
relaunches, and the next server resumes from that checkpoint and ends bit for bit where an
uninterrupted run ends. Every create request carries the bid as ``spotPrice``. ``gc huawei``
run beside the live job, as the first server boots, ends nothing of it. The servers are booted
by :class:`~executor.clouds.huawei.ecs_player.EcsPlayer`."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest

from spotwise.executor.clouds.huawei.ecs_player import EcsPlayer
from spotwise.executor.clouds.huawei.fake.api import ACCESS_KEY, SECRET_KEY, HuaweiApi
from spotwise.executor.local_clouds.metadata import FakeMetadata
from spotwise.executor.local_clouds.player import FIRST_STEP
from tests.conftest import CliRun
from tests.executor.clouds.huawei.conftest import A100, PROJECT, REGION

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(420)]
TRAIN = """\
from spotwise.executor.examples.train_mlp import main

print("user script: training starts", flush=True)
main()
"""
ARGS = ("--epochs", "3", "--samples", "1024", "--out", "result.json")


def reference(tmp_path: Path) -> dict[str, Any]:
    """The same training, uninterrupted, here."""
    out = tmp_path / "reference.json"
    command = [sys.executable, "-m", "spotwise.executor.examples.train_mlp"]
    ran = subprocess.run(
        [*command, "--ckpt", str(tmp_path / "ref-ckpt"), *ARGS[:-1], str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    return dict(json.loads(out.read_text()))


def test_a_reclaimed_huawei_job_checkpoints_to_obs_and_resumes_bit_exactly_on_a_new_server(
    huawei: HuaweiApi, moto_server: str, metadata: FakeMetadata, tmp_path: Path, cli: CliRun
) -> None:
    bucket = f"e2e-{uuid.uuid4().hex[:10]}"
    ckpt = f"obs://{bucket}/spotwise/checkpoints/e2e"
    work = tmp_path / "project"
    (work / "data").mkdir(parents=True)
    (work / "train.py").write_text(TRAIN)
    (work / ".gitignore").write_text("data/\n")
    (work / "data" / "shards.bin").write_bytes(b"\0" * 1024)
    env = {
        "HUAWEICLOUD_SDK_AK": ACCESS_KEY,
        "HUAWEICLOUD_SDK_SK": SECRET_KEY,
        "SPOTWISE_HUAWEI_OBS_URL": moto_server,
    }
    account = ("--project", PROJECT, "--region", REGION, "--endpoint-url", huawei.url)
    made = cli("setup", "huawei", *account, "--bucket", bucket, env=env)
    assert made.returncode == 0, made.stderr
    (tmp_path / "servers").mkdir()

    beside: dict[str, str] = {}

    def gc(server: str) -> None:
        ran = cli("gc", "huawei", *account, env=env)
        assert ran.returncode == 0, ran.stderr
        beside["gc"] = ran.stdout

    player = EcsPlayer(  # the notice once the first server trains, gc beside it as it boots
        *(huawei, moto_server, metadata, tmp_path / "servers"),
        bucket=bucket,
        notice_after_s=0.0,
        notice_on=FIRST_STEP,
        beside=gc,
    )
    try:
        ran = cli(
            *("run", "--launcher", "huawei", *account, "--bucket", bucket),
            *("--identity", "spotwise-instance", "--network", "vpc-1/subnet-1"),
            *("--image", "img-ubuntu-2404", "--instance-type", A100),
            *("--pools", f"{REGION}a", "--workdir", str(work), "--json", "--max-price", "1.5"),
            *("--spot-price", "0.9", "--on-demand-price", "3.9", "--stall-timeout", "0"),
            *("--", "python", "train.py", "--ckpt", ckpt, "--step-sleep-s", "0.08", *ARGS),
            env=env,
        )
    finally:
        player.close()
    print(ran.stderr)
    assert ran.returncode == 0, ran.stderr[-4000:]
    assert not player.errors, player.errors
    report = json.loads(ran.stdout)
    assert report["status"] == "completed" and report["preemptions"] == 1
    assert report["instances"] == 2 and not report["simulated"]
    (first, first_code), (second, second_code) = player.booted
    assert (first_code, second_code) == (0, 0)  # both scripts reported and ended
    # the bid, in every create request the fake recorded
    bids = [r.body["server"]["extendparam"] for r in huawei.sent("create_servers")]
    assert [(b["marketType"], b["spotPrice"]) for b in bids] == [("spot", "1.5000")] * 2
    # gc, beside the live job, left its server and ended nothing
    assert (
        f"left {first} (job {report['job_id']}): its job runs under a live supervisor"
        in beside["gc"]
    ), beside["gc"]
    assert "ended " not in beside["gc"]
    # the checkpoint went to OBS, and the second server resumed from it, bit for bit
    obs = boto3.client("s3", endpoint_url=moto_server, region_name="us-east-1")
    steps = obs.list_objects_v2(Bucket=bucket, Prefix="spotwise/checkpoints/e2e/step-")
    assert steps.get("KeyCount", 0) > 0
    result = json.loads((tmp_path / "servers" / second / "work" / "result.json").read_text())
    assert result == reference(tmp_path)
    assert not (tmp_path / "servers" / first / "work" / "result.json").exists()
    assert not (tmp_path / "servers" / second / "work" / "data").exists()  # .gitignore honoured
    logs = cli("jobs", "logs", report["job_id"])
    assert logs.stdout.count("user script: training starts") == 2, logs.stdout
    left = cli("gc", "huawei", *account, env=env)
    assert "no orphaned Spotwise instance or secret" in left.stdout, left.stdout

"""`spotwise run --launcher azure` end to end on the Resource Manager fake, Azurite and a fake
metadata server: the workdir and a wheel built from this checkout are shipped to Blob, and each
"VM" is the custom data the launcher sent, run with bash in a fresh folder as cloud-init would:
it fetches the code, builds a venv, trains, streams its output back and reports its exit code.
The first VM gets Azure's ``Preempt`` scheduled event once it trained a step (an eviction): the
job checkpoints to ``az://`` on Azurite and stops; the supervisor relaunches, and the next VM
resumes from that checkpoint and ends bit for bit where an uninterrupted run ends. ``gc azure``
run beside the live job, as the first VM boots, ends nothing of it. The VMs are booted by
:class:`~executor.clouds.azure.vm_player.AzurePlayer`, as ``spotwise try azure`` boots them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from spotwise.executor.clouds.azure.fake.servers import (
    ACCOUNT,
    GROUP,
    IMAGE,
    SUBSCRIPTION,
    AzureLocal,
)
from spotwise.executor.clouds.azure.vm_player import AzurePlayer
from spotwise.executor.local_clouds.metadata import FakeMetadata
from spotwise.executor.local_clouds.player import FIRST_STEP
from tests.conftest import CliRun

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(420)]
CONTAINER = "e2e"
TRAIN = """\
import sys
from spotwise.executor.examples.train_mlp import main

print("user script: training starts", flush=True)
main()
"""
ARGS = ("--epochs", "3", "--samples", "1024", "--out", "result.json")
CKPT = f"az://{CONTAINER}/spotwise/checkpoints/e2e"


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


def test_an_evicted_azure_job_checkpoints_to_blob_and_resumes_bit_exactly_on_a_new_vm(
    azure: AzureLocal, metadata: FakeMetadata, tmp_path: Path, cli: CliRun
) -> None:
    work = tmp_path / "project"
    (work / "data").mkdir(parents=True)
    (work / "train.py").write_text(TRAIN)
    (work / ".gitignore").write_text("data/\n")
    (work / "data" / "shards.bin").write_bytes(b"\0" * 1024)
    account = (
        "--project",
        f"{SUBSCRIPTION}/{GROUP}",
        "--region",
        "eastus",
        "--endpoint-url",
        azure.fake.url,
    )
    storage = ("--bucket", f"{ACCOUNT}/{CONTAINER}", "--identity", "spotwise-instance")
    made = cli("setup", "azure", *account, *storage)
    assert made.returncode == 0, made.stderr
    (tmp_path / "vms").mkdir()

    beside: dict[str, str] = {}

    def gc(vm: str) -> None:
        ran = cli("gc", "azure", *account)
        assert ran.returncode == 0, ran.stderr
        beside["gc"] = ran.stdout

    player = AzurePlayer(  # the notice once the first VM trains, gc beside it as it boots
        *(azure, metadata, tmp_path / "vms"),
        bucket=CONTAINER,
        notice_after_s=0.0,
        notice_on=FIRST_STEP,
        beside=gc,
    )
    try:
        ran = cli(
            *("run", "--launcher", "azure", *account, *storage, "--image", IMAGE),
            *("--pools", "1,2", "--workdir", str(work), "--json"),
            *("--spot-price", "0.9", "--on-demand-price", "3.06", "--stall-timeout", "0"),
            *("--", "python", "train.py", "--ckpt", CKPT, "--step-sleep-s", "0.08", *ARGS),
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
    # gc, beside the live job, left its VM and ended nothing
    assert (
        f"left {first} (job {report['job_id']}): its job runs under a live supervisor"
        in (beside["gc"])
    ), beside["gc"]
    assert "ended " not in beside["gc"]
    # the checkpoint went to Blob, and the second VM resumed from it, bit for bit
    from azure.storage.blob import ContainerClient

    container = ContainerClient.from_connection_string(azure.azurite.connection_string, CONTAINER)
    assert any(container.list_blobs(name_starts_with="spotwise/checkpoints/e2e/step-"))
    result = json.loads((tmp_path / "vms" / second / "work" / "result.json").read_text())
    assert result == reference(tmp_path)
    assert not (tmp_path / "vms" / first / "work" / "result.json").exists()
    assert not (tmp_path / "vms" / second / "work" / "data").exists()  # .gitignore honoured
    logs = cli("jobs", "logs", report["job_id"])
    assert logs.stdout.count("user script: training starts") == 2, logs.stdout
    assert '"event"' not in logs.stdout
    left = cli("gc", "azure", *account)
    assert "no orphaned Spotwise instance or secret in eastus" in left.stdout, left.stdout

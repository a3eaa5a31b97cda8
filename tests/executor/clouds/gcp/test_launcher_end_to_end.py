"""`spotwise setup gcp`, `run --launcher gcp`, `jobs logs` and `gc gcp` end to end, as
a user runs them, against the loopback fake of Compute Engine, Secret Manager and IAM and
gcp-storage-emulator, with the fake metadata server giving the preemption notice.

Each "VM" is the startup script the launcher put in its metadata, executed for real with bash
in a fresh folder as GCE would: it fetches the code from GCS, builds a venv, reads its secret
from Secret Manager and trains under the guard, streaming its output back. The first VM gets
the 30-second notice once it trains: the guard checkpoints to gs:// and exits 75, and Compute
Engine takes the VM back. The supervisor launches a second VM, which resumes from that
checkpoint and ends with the same model, bit for bit, as a run never interrupted. While the
first VM runs, `gc gcp` beside the live job ends nothing of it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from spotwise.executor.clouds.gcp.fake.compute import PROJECT, GcpLocal
from spotwise.executor.clouds.gcp.gce_player import GcePlayer
from spotwise.executor.local_clouds.metadata import FakeMetadata
from spotwise.executor.local_clouds.player import FIRST_STEP
from tests.conftest import CliRun
from tests.executor.clouds.gcp.conftest import ACCOUNT

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(400)]
TRAIN = """\
import os
import sys
from spotwise.executor.examples.train_mlp import main

assert os.environ["E2E_TOKEN"] == "s3cret", "the secret did not reach the VM"
print("user script: training starts", flush=True)
print("user script: a warning", file=sys.stderr, flush=True)
main()
"""
TRAINING = ["--epochs", "2", "--samples", "256", "--batch-size", "32", "--seed", "3"]


def uninterrupted_digest(tmp_path: Path) -> str:
    """The model's digest after the same training with no preemption, on this machine."""
    out = tmp_path / "baseline.json"
    subprocess.run(
        [
            *(sys.executable, "-m", "spotwise.executor.examples.train_mlp"),
            *("--ckpt", str(tmp_path / "baseline-ckpt"), *TRAINING, "--out", str(out)),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return str(json.loads(out.read_text())["digest"])


def test_a_gcp_job_is_preempted_checkpoints_to_gcs_and_resumes_bit_exact_on_a_new_vm(
    gcp: GcpLocal, metadata: FakeMetadata, tmp_path: Path, cli: CliRun
) -> None:
    bucket = f"e2e-{uuid.uuid4().hex[:8]}"
    where = ("--project", PROJECT, "--region", "us-central1", "--endpoint-url", gcp.fake.url)
    work = tmp_path / "project"
    work.mkdir()
    (work / "train.py").write_text(TRAIN)
    (work / ".gitignore").write_text("*.log\n")
    (work / "debug.log").write_text("local only\n")

    set_up = cli("setup", "gcp", *where, "--bucket", bucket)
    assert set_up.returncode == 0, set_up.stderr
    assert f"service account {ACCOUNT}: made" in set_up.stdout
    beside: dict[str, subprocess.CompletedProcess[str]] = {}

    def gc_beside(vm: str) -> None:
        beside["gc"] = cli("gc", "gcp", *where)

    (tmp_path / "vms").mkdir()
    boots = GcePlayer(  # the notice once the first VM trains, gc beside it as it boots
        *(gcp, metadata, tmp_path / "vms"),
        bucket=bucket,
        notice_after_s=0.0,
        notice_on=FIRST_STEP,
        beside=gc_beside,
    )
    ckpt = f"gs://{bucket}/spotwise/checkpoints/run1"
    try:
        ran = cli(
            *("run", "--launcher", "gcp", *where, "--pools", "us-central1-a"),
            *("--image", gcp.image, "--bucket", bucket, "--service-account", ACCOUNT),
            *("--workdir", str(work), "--spot-price", "0.9", "--on-demand-price", "2.95"),
            *("--secret-env", "E2E_TOKEN", "--json", "--"),
            *("python", "train.py", "--ckpt", ckpt, *TRAINING, "--step-sleep-s", "0.8"),
            *("--out", "result.json"),
            env={"E2E_TOKEN": "s3cret"},
        )
    finally:
        boots.close()
    assert ran.returncode == 0, ran.stderr[-4000:]
    assert not boots.errors, boots.errors
    report = json.loads(ran.stdout)
    job = report["job_id"]
    assert report["status"] == "completed" and report["instances"] == 2
    assert report["preemptions"] == 1 and not report["simulated"]
    (first, first_code), (second, second_code) = boots.booted
    assert first_code == 0 and second_code == 0  # each startup script ran to its end

    # The second VM resumed from the first one's gs:// checkpoint and ends bit-exact.
    result = json.loads((tmp_path / "vms" / second / "work" / "result.json").read_text())
    assert result["digest"] == uninterrupted_digest(tmp_path)
    logs = cli("jobs", "logs", job)
    assert logs.returncode == 0, logs.stderr
    assert f"--- instance 1: spot in us-central1-a ({first}) ---" in logs.stdout
    assert f"--- instance 2: spot in us-central1-a ({second}) ---" in logs.stdout
    assert logs.stdout.count("user script: training starts") == 2, logs.stdout
    from google.cloud import storage

    saved = [b.name for b in storage.Client(project=PROJECT).list_blobs(bucket)]
    assert any(n.startswith("spotwise/checkpoints/run1/step-") for n in saved), saved

    # gc beside the live job: its VM and secret stay, said why.
    gc_run = beside["gc"]
    assert gc_run.returncode == 0, gc_run.stderr
    assert f"left us-central1-a/{first} (job {job}): its job runs under a live supervisor" in (
        gc_run.stdout
    )
    assert f"left secret spotwise-{job}-E2E_TOKEN: its job runs under a live" in gc_run.stdout
    # Afterwards nothing is left: the VMs deleted, the secret gone, gc finds nothing.
    assert not gcp.fake.instances and not gcp.fake.secrets
    after = cli("gc", "gcp", *where)
    assert "no orphaned Spotwise instance or secret in us-central1" in after.stdout
    # The shipped workdir left out what its .gitignore lists.
    assert not (tmp_path / "vms" / first / "work" / "debug.log").exists()
    assert re.search(r"^\[spot in us-central1-a\] .*user script: a warning", ran.stderr, re.M)

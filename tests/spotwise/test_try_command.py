"""`spotwise try aws` and `spotwise try gcp` as a stranger runs them, with a configuration of
their own that must not be touched: moto (AWS) or the loopback fake and gcp-storage-emulator
(GCP) play the cloud, the bundled example is preempted by a spot notice on its first instance,
resumes on a second one from the checkpoint in the local bucket and ends bit-exact; its logs
are shown and gc runs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CliRun

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(400)]


def uninterrupted_digest(tmp_path: Path) -> str:
    """The example's model digest after the same training with no notice, on this machine."""
    out = tmp_path / "baseline.json"
    subprocess.run(
        [
            *(sys.executable, "-m", "spotwise.executor.examples.train_mlp"),
            *("--ckpt", str(tmp_path / "baseline-ckpt"), "--epochs", "2", "--samples", "256"),
            *("--out", str(out)),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return str(json.loads(out.read_text())["digest"])


def test_try_aws_runs_the_example_through_a_notice_to_a_bit_exact_resume_on_local_servers(
    cli: CliRun, tmp_path: Path, store_file: Path
) -> None:
    (tmp_path / "aws").mkdir()
    (tmp_path / "aws" / "config").write_text("[default]\nregion = eu-west-3\n")
    theirs = {  # a real account's setup: none of it may be read or reached
        "AWS_PROFILE": "their-production",
        "AWS_CONFIG_FILE": str(tmp_path / "aws" / "config"),
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",  # nothing listens: a call there fails
    }
    ran = cli("try", "aws", "--keep", env=theirs)
    assert ran.returncode == 0, ran.stderr[-4000:]
    moto = re.search(r"AWS is moto on (http://127\.0\.0\.1:\d+) \(this machine\)", ran.stderr)
    assert moto, ran.stderr[:2000]
    assert "nothing is billed" in ran.stderr
    commands = [line for line in ran.stderr.splitlines() if line.startswith("$ spotwise ")]
    assert [c.split()[2] for c in commands] == ["setup", "run", "jobs", "gc"], commands
    assert all(f"--endpoint-url {moto.group(1)}" in c for c in commands if " aws " in c)
    # the run's report: two instances, moved by the one notice
    report = re.search(r"^job (\w+) \(completed\):", ran.stdout, re.MULTILINE)
    assert report, ran.stdout
    assert "2 instances, 1 preemption (1 notice)" in ran.stdout
    # what the local EC2 played: the notice to the first, the resume on the second
    first, second = re.findall(r"^  (i-\w+): boot script exit 0, its command", ran.stderr, re.M)
    assert f"{first}: boot script exit 0, its command started fresh, then got a spot" in ran.stderr
    resumed = re.search(rf"{second}: .* resumed from its checkpoint, step (\d+)$", ran.stderr, re.M)
    assert resumed and int(resumed.group(1)) > 0, ran.stderr[-3000:]
    # the logs of both instances, then gc on the local cloud
    assert f"--- instance 1: spot in us-east-1a ({first}) ---" in ran.stdout
    assert f"--- instance 2: spot in us-east-1a ({second}) ---" in ran.stdout
    assert "no orphaned Spotwise instance or secret in us-east-1" in ran.stdout
    # bit-exact: the second instance's model is the one an uninterrupted run ends with
    kept = re.search(r"the try's ledger are in (\S+)", ran.stderr)
    assert kept, ran.stderr[-2000:]
    result = Path(kept.group(1)) / "instances" / second / "work" / "result.json"
    assert json.loads(result.read_text())["digest"] == uninterrupted_digest(tmp_path)
    # the try kept its ledger to itself: the user's store was not even made
    assert not store_file.exists()


def test_try_gcp_runs_the_example_through_a_notice_to_a_bit_exact_resume_on_local_servers(
    cli: CliRun, tmp_path: Path, store_file: Path
) -> None:
    gcloud = tmp_path / "gcloud"
    (gcloud / "configurations").mkdir(parents=True)
    (gcloud / "configurations" / "config_default").write_text("[core]\nproject = their-prod\n")
    before = sorted((p.relative_to(gcloud), p.read_bytes()) for p in gcloud.rglob("*.*"))
    theirs = {  # a real project's setup: none of it may be read or reached
        "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "no-such-key.json"),
        "GOOGLE_CLOUD_PROJECT": "their-production",
        "CLOUDSDK_CORE_PROJECT": "their-production",
        "CLOUDSDK_CONFIG": str(gcloud),
        "STORAGE_EMULATOR_HOST": "http://127.0.0.1:9",  # nothing listens: a call there fails
    }
    ran = cli("try", "gcp", "--keep", env=theirs)
    assert ran.returncode == 0, ran.stderr[-4000:]
    fake = re.search(
        r"Compute Engine, Secret Manager and IAM on (http://127\.0\.0\.1:\d+)", ran.stderr
    )
    assert fake, ran.stderr[:2000]
    assert "nothing is billed" in ran.stderr
    commands = [line for line in ran.stderr.splitlines() if line.startswith("$ spotwise ")]
    assert [c.split()[2] for c in commands] == ["setup", "run", "jobs", "gc"], commands
    assert all(f"--endpoint-url {fake.group(1)}" in c for c in commands if " gcp " in c)
    assert all("--project spotwise-fake" in c for c in commands if " gcp " in c)
    # the run's report: two instances, moved by the one notice
    assert re.search(r"^job (\w+) \(completed\):", ran.stdout, re.MULTILINE), ran.stdout
    assert "2 instances, 1 preemption (1 notice)" in ran.stdout
    # what the local Compute Engine played: the notice to the first, the resume on the second
    first, second = re.findall(
        r"^  (spotwise-[-\w]+): startup script exit 0, its", ran.stderr, re.M
    )
    assert f"{first}: startup script exit 0, its command started fresh, then got a" in ran.stderr
    resumed = re.search(rf"{second}: .* resumed from its checkpoint, step (\d+)$", ran.stderr, re.M)
    assert resumed and int(resumed.group(1)) > 0, ran.stderr[-3000:]
    # the logs of both instances, then gc on the local cloud
    assert f"--- instance 1: spot in us-central1-a ({first}) ---" in ran.stdout
    assert f"--- instance 2: spot in us-central1-a ({second}) ---" in ran.stdout
    assert "no orphaned Spotwise instance or secret in us-central1" in ran.stdout
    # bit-exact: the second instance's model is the one an uninterrupted run ends with
    kept = re.search(r"the try's ledger are in (\S+)", ran.stderr)
    assert kept, ran.stderr[-2000:]
    result = Path(kept.group(1)) / "instances" / second / "work" / "result.json"
    assert json.loads(result.read_text())["digest"] == uninterrupted_digest(tmp_path)
    # the try kept its ledger to itself, and gcloud's configuration is as it was
    assert not store_file.exists()
    assert sorted((p.relative_to(gcloud), p.read_bytes()) for p in gcloud.rglob("*.*")) == before

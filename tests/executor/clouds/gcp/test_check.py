"""`spotwise check gcp` on a project that is not ready, and the one line every GCP command gives
for a bad start: no credentials, no ``gcp`` extra, an API not enabled."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from spotwise.executor.clouds.code_bundle import ShippedCode
from spotwise.executor.clouds.gcp.cloud import GcpCloud
from spotwise.executor.clouds.gcp.fake.compute import IMAGE_PROJECT, PROJECT, GcpLocal
from spotwise.executor.clouds.gcp.target import GcpTarget
from spotwise.executor.errors import ExecutorError
from tests.executor.clouds.gcp.conftest import ACCOUNT, options

CODE = ShippedCode(
    "spotwise/code/a/workdir.tar.gz", "spotwise/code/b/spotwise-0.1-py3-none-any.whl"
)
NO_CREDENTIALS = (
    "no Google credentials found; run `gcloud auth application-default login`, or set "
    "GOOGLE_APPLICATION_CREDENTIALS to a service account key file, then run again"
)


@pytest.mark.slow
def test_check_on_a_project_not_set_up_names_each_miss_with_its_fix(gcp: GcpLocal) -> None:
    gcp.fake.quotas["PREEMPTIBLE_NVIDIA_V100_GPUS"] = 0.0
    target = GcpCloud().target(options(gcp, bucket="never-made", zones=("us-central1-a",)))
    target = replace(target, zones=("us-central1-a", "us-central1-f"))
    checks = {c.what: c for c in GcpCloud().check(target)}
    assert [c.status for c in checks.values()] == [
        "ok",  # credentials
        "ok",  # project
        "missing",  # bucket
        "ok",  # image
        "missing",  # service account
        "missing",  # zones
        "missing",  # quota
        "ok",  # APIs, last: from what the others' calls found
    ]
    assert checks["bucket"].fix == (
        f"spotwise setup gcp --project {PROJECT} --region us-central1 --bucket never-made"
    )
    assert checks["service account"].detail == f"{ACCOUNT} does not exist"
    assert checks["zones"].detail == "us-central1-f offer no nvidia-tesla-v100"
    assert checks["Spot GPU quota"].detail == (
        "PREEMPTIBLE_NVIDIA_V100_GPUS in us-central1: 0 of 0 free; one VM takes 1"
    )
    assert "IAM & Admin → Quotas" in checks["Spot GPU quota"].fix


def test_a_deep_learning_image_of_python_310_is_missing_with_the_fix(
    gcp: GcpLocal, project: GcpTarget
) -> None:
    family = "pytorch-2-4-cu124-debian-11-py310"
    gcp.fake.images[(IMAGE_PROJECT, f"{family}-v20241118")] = {
        "family": family,
        "status": "READY",
        "description": "Google, Deep Learning VM with PyTorch 2.4, CUDA 12.4, Debian 11, "
        "Python 3.10, with PyTorch 2.4 and fast.ai preinstalled",
    }
    old = replace(project, image=f"projects/{IMAGE_PROJECT}/global/images/family/{family}")
    image = next(c for c in GcpCloud().check(old) if c.what == "image")
    assert image.status == "missing"
    assert image.detail.endswith(
        ": its name or description says Python 3.10 (Spotwise needs 3.11+)"
    )
    assert "pass spotwise run --python PATH of a Python 3.11+ on this one" in image.fix
    image = next(c for c in GcpCloud().check(project) if c.what == "image")
    assert image.status == "ok"
    assert image.detail.endswith(
        ": its name or description says Python 3.11; torch in its environment, which the boot finds"
    )


def test_an_api_not_enabled_is_one_check_and_one_line_naming_the_command(
    gcp: GcpLocal, project: GcpTarget
) -> None:
    gcp.fake.disabled = {"compute.googleapis.com", "secretmanager.googleapis.com"}
    checks = {c.what: c for c in GcpCloud().check(project)}
    assert checks["APIs enabled"].status == "missing"
    assert checks["APIs enabled"].fix == (
        "gcloud services enable compute.googleapis.com secretmanager.googleapis.com "
        f"--project {PROJECT}"
    )
    with pytest.raises(ExecutorError) as refused:
        GcpCloud().launcher(project, CODE, {}, job_id="j1")
    assert str(refused.value) == (
        "--launcher gcp: reading GPUs of us-central1-a: the Compute Engine API is not enabled "
        f"in project {PROJECT}; run `gcloud services enable compute.googleapis.com --project "
        f"{PROJECT}`, then run again"
    )


def _bare_env(tmp_path: Path, store: Path) -> dict[str, str]:
    """An environment with no Google credentials anywhere (no key, no gcloud login, not on
    GCE)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "CLOUDSDK_"))}
    env.update(
        CLOUDSDK_CONFIG=str(tmp_path / "no-gcloud"),
        NO_GCE_CHECK="true",
        SPOTWISE_STORE=str(store),
        HOME=str(tmp_path),
    )
    return env


@pytest.mark.slow  # CLI subprocesses, four of them
@pytest.mark.parametrize(
    ("who", "args"),
    [
        (
            "--launcher gcp",
            [
                *("run", "--launcher", "gcp", "--project", PROJECT, "--image", "img"),
                *("--bucket", "b-1", "--service-account", ACCOUNT, "--", "true"),
            ],
        ),
        ("setup gcp", ["setup", "gcp", "--project", PROJECT, "--bucket", "b-1"]),
        ("gc gcp", ["gc", "gcp", "--project", PROJECT]),
    ],
)
def test_without_credentials_every_gcp_command_says_so_in_one_line(
    who: str, args: list[str], tmp_path: Path, store_file: Path
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "spotwise", *args],
        env=_bare_env(tmp_path, store_file),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [f"error: {who}: {NO_CREDENTIALS}"]


@pytest.mark.slow  # a CLI subprocess
def test_check_without_credentials_is_one_miss_with_its_fix(
    tmp_path: Path, store_file: Path
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "spotwise", "check", "gcp", "--project", PROJECT],
        env=_bare_env(tmp_path, store_file),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "✗ credentials: none found",
        "    fix: run `gcloud auth application-default login`, or set "
        "GOOGLE_APPLICATION_CREDENTIALS to a service account key file, then run again",
        "1 to fix",
    ]


@pytest.mark.slow  # a CLI subprocess
def test_without_the_gcp_extra_a_gcp_command_names_it_in_one_line(
    tmp_path: Path, store_file: Path
) -> None:
    """As if google-cloud-compute were not installed (an import of it fails)."""
    program = (
        "import sys; sys.modules['google.cloud.compute_v1'] = None\n"
        "from spotwise.cli import main\n"
        "sys.argv = ['spotwise', 'setup', 'gcp', '--project', 'p-123456', '--bucket', 'b-1']\n"
        "main()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program],
        env=_bare_env(tmp_path, store_file),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: setup gcp: Google's client libraries are not installed "
        "(google.cloud.compute_v1); run pip install 'spotwise[gcp]'"
    ]

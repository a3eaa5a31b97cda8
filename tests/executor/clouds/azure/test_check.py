"""`spotwise check azure` on a subscription that is not ready, and the one line every Azure
command gives for a bad start: no credentials, no ``azure`` extra, a subscription these
credentials cannot see, a resource provider not registered, no Spot quota, a zone without the
size."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from spotwise.executor.clouds.azure.cloud import AzureCloud
from spotwise.executor.clouds.azure.fake.arm import Sku
from spotwise.executor.clouds.azure.fake.servers import (
    ACCOUNT,
    AZURE_ENV,
    GROUP,
    SUBSCRIPTION,
    AzureLocal,
    unused_url,
)
from spotwise.executor.clouds.azure.target import AzureTarget
from spotwise.executor.clouds.base import Check
from tests.executor.clouds.azure.conftest import options

NO_CREDENTIALS = (
    "no Azure credentials found; run `az login`, or set AZURE_CLIENT_ID, AZURE_TENANT_ID and "
    "AZURE_CLIENT_SECRET, then run again"
)


def checked(target: AzureTarget) -> dict[str, Check]:
    return {c.what: c for c in AzureCloud().check(target)}


@pytest.mark.slow
def test_check_on_a_subscription_not_set_up_names_each_miss_with_its_fix(
    azure: AzureLocal,
) -> None:
    checks = checked(AzureCloud().target(options(azure)))
    assert {what: c.status for what, c in checks.items()} == {
        "credentials": "ok",
        "subscription and providers": "ok",
        "resource group": "missing",
        "storage": "skipped",
        "image": "ok",
        "managed identity": "missing",
        "VM size": "ok",
        "spot vCPU quota": "ok",
        "Key Vault": "skipped",
        "subnet": "missing",
    }
    assert checks["resource group"].fix == (
        f"spotwise setup azure --project {SUBSCRIPTION}/{GROUP} ..."
    )
    assert checks["storage"].detail == "needs the resource group"
    assert checks["managed identity"].detail == f"spotwise-instance is not in {GROUP}"
    assert all("\n" not in c.detail and "\n" not in c.fix for c in checks.values())


@pytest.mark.slow
def test_ubuntu_hpc_2204_is_missing_a_python_311_and_the_fix_is_python_or_2404(
    azure: AzureLocal,
) -> None:
    target = AzureCloud().target(
        replace(options(azure), image="microsoft-dsvm:ubuntu-hpc:2204:latest")
    )
    image = checked(target)["image"]
    assert image.status == "missing"
    assert image.detail == (
        "microsoft-dsvm:ubuntu-hpc:2204:latest in eastus: Ubuntu 22.04's python3 is 3.10 "
        "(Spotwise needs 3.11+), and no other Python is known on it"
    )
    assert "microsoft-dsvm:ubuntu-hpc:2404:latest (Ubuntu 24.04: python3 3.12" in image.fix
    assert image.fix.endswith("or pass spotwise run --python PATH of a Python 3.11+ on this one")
    current = checked(AzureCloud().target(options(azure)))["image"]  # the docs' image
    assert current.status == "ok"
    assert current.detail == (
        "microsoft-dsvm:ubuntu-hpc:2404:latest in eastus: Ubuntu 24.04's python3 is 3.12; "
        "torch is not on it: each boot installs it from PyPI (minutes)"
    )


@pytest.mark.slow
def test_unregistered_providers_are_one_check_naming_each_command(
    azure: AzureLocal, ready: AzureTarget
) -> None:
    azure.fake.unregistered = {"Microsoft.Compute", "Microsoft.KeyVault"}
    checks = list(AzureCloud().check(ready))
    assert [c.what for c in checks] == ["credentials", "subscription and providers"]
    assert checks[1].status == "missing"
    assert checks[1].detail == (
        f"{SUBSCRIPTION}: Microsoft.Compute, Microsoft.KeyVault not registered"
    )
    assert checks[1].fix == (
        "az provider register --namespace Microsoft.Compute; "
        "az provider register --namespace Microsoft.KeyVault"
    )


@pytest.mark.slow
def test_a_subscription_the_credentials_cannot_see_is_one_miss(
    azure: AzureLocal, ready: AzureTarget
) -> None:
    other = "11111111-2222-3333-4444-555555555555"
    checks = list(AzureCloud().check(replace(ready, subscription=other)))
    assert [(c.what, c.status) for c in checks] == [
        ("credentials", "ok"),
        ("subscription and providers", "missing"),
    ]
    assert checks[1].detail == f"{other} is not a subscription these credentials can see"


@pytest.mark.slow
def test_no_spot_quota_and_a_zone_without_the_size_are_each_a_miss_with_its_fix(
    azure: AzureLocal, ready: AzureTarget
) -> None:
    azure.fake.spot_quota = 4
    azure.fake.skus = [
        Sku(name="Standard_NC6s_v3", family="standardNCSv3Family", vcpus=6, zones=("1", "2"))
    ]
    checks = checked(replace(ready, zones=("1", "3")))
    assert checks["VM size"].status == "missing"
    assert checks["VM size"].detail == (
        "Standard_NC6s_v3 is not available in zone 3 of eastus for this subscription (zones: 1, 2)"
    )
    assert checks["VM size"].fix.startswith("pass --pools with zones that have it, or eastus")
    assert checks["spot vCPU quota"].status == "missing"
    assert "one Standard_NC6s_v3 takes 6" in checks["spot vCPU quota"].detail
    assert "(at least 6)" in checks["spot vCPU quota"].fix
    unknown = checked(replace(ready, instance_type="Standard_ND96asr_v4"))["VM size"]
    assert unknown.status == "missing"
    assert unknown.detail == "Standard_ND96asr_v4 is not offered in eastus"


@pytest.mark.slow
def test_check_finds_a_set_up_subscription_ready(azure: AzureLocal, ready: AzureTarget) -> None:
    checks = list(AzureCloud().check(ready))
    assert [c.what for c in checks if c.status != "ok"] == []


def _bare_env(tmp_path: Path, store: Path) -> dict[str, str]:
    """An environment with no Azure sign-in anywhere (no az login, no service principal, no
    managed identity, no instance metadata service)."""
    env = {k: v for k, v in os.environ.items() if k not in AZURE_ENV and "IDENTITY" not in k}
    env.update(
        AZURE_CONFIG_DIR=str(tmp_path / "no-az"),
        AZURE_POD_IDENTITY_AUTHORITY_HOST=unused_url(),
        AZURE_STORAGE_CONNECTION_STRING="",
        SPOTWISE_STORE=str(store),
        HOME=str(tmp_path),
    )
    return env


ACCOUNT_FLAGS = ["--project", f"{SUBSCRIPTION}/{GROUP}"]


@pytest.mark.slow  # CLI subprocesses, four of them
@pytest.mark.parametrize(
    ("who", "args"),
    [
        (
            "--launcher azure",
            [
                *("run", "--launcher", "azure", *ACCOUNT_FLAGS, "--image", "a:b:c:latest"),
                *("--bucket", f"{ACCOUNT}/ckpt", "--identity", "spotwise-instance"),
                *("--spot-price", "0.9", "--on-demand-price", "3", "--", "true"),
            ],
        ),
        ("setup azure", ["setup", "azure", *ACCOUNT_FLAGS, "--bucket", f"{ACCOUNT}/ckpt"]),
        ("gc azure", ["gc", "azure", *ACCOUNT_FLAGS]),
    ],
)
def test_without_credentials_every_azure_command_says_so_in_one_line(
    who: str, args: list[str], tmp_path: Path, store_file: Path
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "spotwise", *args],
        env=_bare_env(tmp_path, store_file),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip().splitlines() == [f"error: {who}: {NO_CREDENTIALS}"]


@pytest.mark.slow  # a CLI subprocess
def test_check_without_credentials_is_one_miss_with_its_fix(
    tmp_path: Path, store_file: Path
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "spotwise", "check", "azure", *ACCOUNT_FLAGS],
        env=_bare_env(tmp_path, store_file),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "✗ credentials: no Azure credentials found",
        "    fix: az login",
        "1 to fix",
    ]


@pytest.mark.slow  # a CLI subprocess
def test_without_the_azure_extra_an_azure_command_names_it_in_one_line(
    tmp_path: Path, store_file: Path
) -> None:
    """As if azure-mgmt-compute were not installed (an import of it fails)."""
    program = (
        "import sys; sys.modules['azure.mgmt.compute'] = None\n"
        "from spotwise.cli import main\n"
        f"sys.argv = ['spotwise', 'setup', 'azure', '--project', '{SUBSCRIPTION}/{GROUP}',"
        f" '--bucket', '{ACCOUNT}/ckpt']\n"
        "main()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program],
        env=_bare_env(tmp_path, store_file),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: setup azure: the Azure libraries are not installed; pip install "
        "'spotwise[azure]', then run again"
    ]

"""An Azure subscription on this machine: Azurite and the loopback fake of Resource Manager,
Key Vault and the managed identity endpoint (executor/clouds/azure/fake/servers.py), with the Azure
libraries pointed at them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from spotwise.executor.clouds.azure.cloud import AzureCloud
from spotwise.executor.clouds.azure.fake.servers import (
    ACCOUNT,
    GROUP,
    IMAGE,
    SUBSCRIPTION,
    AzureLocal,
    Azurite,
)
from spotwise.executor.clouds.azure.target import AzureTarget
from spotwise.executor.clouds.base import CloudOptions


@pytest.fixture
def azure(
    azurite: Azurite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[AzureLocal]:
    """The servers, and this process's environment pointed at them; every request they were
    sent must be one the Azure SDK's builders allow, its body one Azure's specification (a VM)
    or the SDK's models allow."""
    local = AzureLocal(azurite)
    local.apply(monkeypatch, tmp_path)
    try:
        yield local
    finally:
        local.close()
    assert not local.fake.refused, local.fake.refused


def options(local: AzureLocal, **changes: object) -> CloudOptions:
    """The cloud options of a resource group ``setup azure`` makes."""
    values: dict[str, object] = {
        "project": f"{SUBSCRIPTION}/{GROUP}",
        "image": IMAGE,
        "bucket": f"{ACCOUNT}/spotwise",
        "identity": "spotwise-instance",
        "endpoint_url": local.fake.url,
    }
    return CloudOptions(**(values | changes))  # type: ignore[arg-type]


@pytest.fixture
def ready(azure: AzureLocal, tmp_path: Path) -> AzureTarget:
    """A resource group ``setup azure`` has made ready, and its target for jobs shipped from
    a folder."""
    work = tmp_path / "project"
    work.mkdir()
    (work / "train.py").write_text("print('training')\n")
    target = AzureCloud().target(options(azure, workdir=str(work)))
    AzureCloud().set_up(target, say=lambda _: None)
    return target

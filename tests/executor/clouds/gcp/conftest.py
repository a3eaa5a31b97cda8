"""A GCP project on this machine: the loopback fake of Compute Engine, Secret Manager and IAM
and gcp-storage-emulator, with Google's libraries pointed at them (a service account key as
Application Default Credentials, ``STORAGE_EMULATOR_HOST``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from spotwise.executor.clouds.base import CloudOptions
from spotwise.executor.clouds.gcp.cloud import GcpCloud
from spotwise.executor.clouds.gcp.fake.compute import PROJECT, GcpLocal
from spotwise.executor.clouds.gcp.target import GcpTarget

ACCOUNT = f"spotwise-instance@{PROJECT}.iam.gserviceaccount.com"


@pytest.fixture
def gcp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GcpLocal]:
    """The servers, and this process's environment pointed at them; every request they were
    sent must be one Google's discovery documents allow."""
    folder = tmp_path / "gcp"
    folder.mkdir()
    local = GcpLocal(folder)
    for name, value in local.env.items():
        monkeypatch.setenv(name, value)
    try:
        yield local
    finally:
        local.close()
    assert not local.fake.refused, local.fake.refused


def options(local: GcpLocal, **changes: object) -> CloudOptions:
    """The cloud options of a project set up by ``setup gcp``."""
    values: dict[str, object] = {
        "project": PROJECT,
        "image": local.image,
        "bucket": f"b-{uuid.uuid4().hex[:10]}",
        "identity": ACCOUNT,
        "endpoint_url": local.fake.url,
    }
    return CloudOptions(**(values | changes))  # type: ignore[arg-type]


@pytest.fixture
def project(gcp: GcpLocal, tmp_path: Path) -> GcpTarget:
    """A project ``setup gcp`` has made ready, and its target for jobs shipped from a folder."""
    work = tmp_path / "project"
    work.mkdir()
    (work / "train.py").write_text("print('training')\n")
    target = GcpCloud().target(options(gcp, workdir=str(work)))
    GcpCloud().set_up(target, say=lambda _: None)
    return target

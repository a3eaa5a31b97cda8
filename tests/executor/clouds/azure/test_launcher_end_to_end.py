"""`spotwise run --launcher azure` end to end on the Resource Manager fake, Azurite and a fake
metadata server: the workdir and a wheel built from this checkout are shipped to Blob, and each
"VM" is the custom data the launcher sent, run with bash in a fresh folder as cloud-init would:
it fetches the code, builds a venv, trains, streams its output back and reports its exit code.
The first VM gets Azure's ``Preempt`` scheduled event mid-run (an eviction): the job checkpoints
to ``az://`` on Azurite and stops; the supervisor relaunches, and the next VM resumes from that
checkpoint and ends bit for bit where an uninterrupted run ends. ``gc azure`` run beside the live
job ends nothing of it."""

from __future__ import annotations

import email.utils
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from spotwise.executor.clouds.azure.fake.arm import Booted
from spotwise.executor.clouds.azure.fake.servers import (
    ACCOUNT,
    GROUP,
    IMAGE,
    SUBSCRIPTION,
    AzureLocal,
    unused_url,
)
from spotwise.executor.local_clouds.metadata import FakeMetadata
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


class Hypervisor:
    """Plays Azure: boots each new VM's custom data with bash in a folder of its own, evicts
    the first once it has trained a step (its Preempt event, then its deletion), and runs
    ``gc azure`` before booting the second, while the job is live."""

    def __init__(self, local: AzureLocal, metadata: FakeMetadata, root: Path, gc: Any) -> None:
        self.local, self.metadata, self.root, self.gc = local, metadata, root, gc
        self.env = {
            "PATH": os.environ["PATH"],
            "HOME": str(root),
            **local.env,
            "AZURE_CONFIG_DIR": str(root / "azure-cli"),
            "AZURE_POD_IDENTITY_AUTHORITY_HOST": unused_url(),
            "SPOTWISE_PYTHON": sys.executable,
            "SPOTWISE_AZURE_METADATA_URL": metadata.url,
            "SPOTWISE_SHUTDOWN": "true",  # the supervisor deletes the VM
            "PIP_NO_INDEX": "1",  # everything comes from the container or is there already
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }
        self.booted: list[tuple[str, int]] = []
        self.gc_output = ""
        self.errors: list[BaseException] = []
        self._done = threading.Event()
        local.fake.on_notice = self._preempt
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _preempt(self, vm: Booted) -> None:
        """Azure's Scheduled Events document with a Preempt event for ``vm``."""
        not_before = email.utils.formatdate(time.time() + 30, usegmt=True)
        self.metadata.azure_events = {
            "DocumentIncarnation": 2,
            "Events": [
                {
                    "EventId": "602d9444-d2cd-49c7-8624-8643e7171297",
                    "EventType": "Preempt",
                    "ResourceType": "VirtualMachine",
                    "Resources": [vm.name],
                    "EventStatus": "Scheduled",
                    "NotBefore": not_before,
                    "Description": "",
                    "EventSource": "Platform",
                    "DurationInSeconds": -1,
                }
            ],
        }

    def _run(self) -> None:
        try:
            while not self._done.is_set():
                if len(self.booted) < len(self.local.fake.booted):
                    vm = self.local.fake.booted[len(self.booted)]
                    self.booted.append((vm.name, self._boot(vm, first=not self.booted)))
                time.sleep(0.1)
        except BaseException as exc:  # surfaced by the test, not lost in the thread
            self.errors.append(exc)

    def _boot(self, vm: Booted, *, first: bool) -> int:
        if not first and not self.gc_output:
            self.gc_output = self.gc()
        script = self.root / f"{vm.name}.sh"
        script.write_text(vm.custom_data)
        env = {**self.env, "SPOTWISE_ROOT": str(self.root / vm.name)}
        process = subprocess.Popen(["bash", str(script)], env=env)
        if first:
            self._evict_after_a_step(vm, process)
        code = process.wait(timeout=300)
        if first:  # the eviction completes: the VM is deleted
            self.metadata.azure_events = {"DocumentIncarnation": 3, "Events": []}
            self.local.fake.delete_now(vm.name)
        return code

    def _evict_after_a_step(self, vm: Booted, process: subprocess.Popen[bytes]) -> None:
        from azure.storage.blob import ContainerClient

        container = ContainerClient.from_connection_string(
            self.local.azurite.connection_string, CONTAINER
        )
        prefix = f"spotwise/jobs/{vm.tags['spotwise-job']}/{vm.name}/log/"
        deadline = time.monotonic() + 240
        while process.poll() is None and time.monotonic() < deadline:
            for blob in container.list_blobs(name_starts_with=prefix):
                text = container.download_blob(blob.name).readall().decode()
                if "first_step" in text:
                    self.local.fake.evict(vm.name)
                    return
            time.sleep(0.2)

    def close(self) -> None:
        self._done.set()
        self._thread.join(timeout=60)


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
    azure.fake.eviction_delay_s = 600  # the hypervisor deletes it once its script has ended
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

    def gc() -> str:
        ran = cli("gc", "azure", *account)
        assert ran.returncode == 0, ran.stderr
        return ran.stdout

    hypervisor = Hypervisor(azure, metadata, tmp_path / "vms", gc)
    try:
        ran = cli(
            *("run", "--launcher", "azure", *account, *storage, "--image", IMAGE),
            *("--pools", "1,2", "--workdir", str(work), "--json"),
            *("--spot-price", "0.9", "--on-demand-price", "3.06", "--stall-timeout", "0"),
            *("--", "python", "train.py", "--ckpt", CKPT, "--step-sleep-s", "0.08", *ARGS),
        )
    finally:
        hypervisor.close()
    print(ran.stderr)
    assert ran.returncode == 0, ran.stderr[-4000:]
    assert not hypervisor.errors, hypervisor.errors
    report = json.loads(ran.stdout)
    assert report["status"] == "completed" and report["preemptions"] == 1
    assert report["instances"] == 2 and not report["simulated"]
    (first, first_code), (second, second_code) = hypervisor.booted
    assert (first_code, second_code) == (0, 0)  # both scripts reported and ended
    # gc, beside the live job, left its VM and ended nothing
    assert f"left {second} (job {report['job_id']}): its job runs under a live supervisor" in (
        hypervisor.gc_output
    ), hypervisor.gc_output
    assert "ended " not in hypervisor.gc_output
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

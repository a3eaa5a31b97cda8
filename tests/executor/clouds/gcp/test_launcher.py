"""The GCP launcher through google-cloud-compute's REST transport against the loopback fake
(every request checked against Compute Engine's discovery document) and gcp-storage-emulator:
what a Spot VM is made of, what Compute Engine refuses, secrets, and a preemption under the
supervisor."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from spotwise.executor.clouds.code_bundle import ShippedCode
from spotwise.executor.clouds.gcp.cloud import GcpCloud
from spotwise.executor.clouds.gcp.fake.compute import PROJECT, GcpLocal
from spotwise.executor.clouds.gcp.gc import host_label
from spotwise.executor.clouds.gcp.launcher import GcpLauncher
from spotwise.executor.clouds.gcp.target import GcpTarget, parse_shape
from spotwise.executor.errors import ExecutorError, NoCapacity
from spotwise.executor.launchers.base import Placement
from spotwise.executor.ledger.ledger import JobInfo, Ledger, job_report
from spotwise.executor.supervise.supervisor import Supervisor, SupervisorConfig
from spotwise.policy.service.client import in_process_for
from spotwise.policy.service.schemas import JobTerms
from spotwise.pricing.operational import open_operational
from tests.executor.clouds.gcp.conftest import ACCOUNT

CODE = ShippedCode(
    "spotwise/code/aa11/workdir.tar.gz", "spotwise/code/bb22/spotwise-0.1.0-py3-none-any.whl"
)
COMMAND = ["python", "-m", "spotwise.executor.examples.train_mlp", "--ckpt", "gs://b/ckpt"]


def launcher(target: GcpTarget, job_id: str = "job42", **secrets: str) -> GcpLauncher:
    return GcpCloud().launcher(target, CODE, secrets, job_id=job_id)


def metadata(instance: dict, key: str) -> str:
    return next(i["value"] for i in instance["metadata"]["items"] if i["key"] == key)


def report_exit(launcher: GcpLauncher, name: str, code: int) -> None:
    """What the VM's startup script does at the end: write the exit code."""
    launcher.bucket.blob(f"{launcher.prefix}/{name}/exit").upload_from_string(f"{code}\n")


@pytest.mark.slow
def test_a_spot_vm_carries_its_gpu_labels_and_startup_script_in_the_zone_picked(
    gcp: GcpLocal, project: GcpTarget
) -> None:
    made = launcher(replace(project, python="/opt/conda/bin/python"))
    placement = Placement(market="spot", pool="us-central1-b", price=0.9)
    instance = made.launch(placement, COMMAND, {"SPOTWISE_MARKET": "spot"})
    ((zone, name),) = gcp.fake.instances
    vm = gcp.fake.instances[(zone, name)]
    assert (zone, name) == ("us-central1-b", instance.instance_id)
    assert vm["machineType"].endswith("/zones/us-central1-b/machineTypes/n1-standard-8")
    assert vm["scheduling"] == {
        "provisioningModel": "SPOT",
        "instanceTerminationAction": "DELETE",
        "automaticRestart": False,
        "onHostMaintenance": "TERMINATE",
        "preemptible": False,
    }
    assert vm["guestAccelerators"] == [
        {"acceleratorType": "zones/us-central1-b/acceleratorTypes/nvidia-tesla-v100",
         "acceleratorCount": 1}
    ]  # fmt: skip
    assert vm["labels"] == {
        "spotwise-job": "job42",
        "spotwise-host": host_label(socket.gethostname()),
        "spotwise-market": "spot",
    }
    assert vm["serviceAccounts"][0]["email"] == ACCOUNT
    script = metadata(vm, "startup-script")
    assert f"ID={name}\n" in script and "PREFIX=spotwise/jobs/job42\n" in script
    assert "env SPOTWISE_MARKET=spot SPOTWISE_NOTICES=gcp" in script
    assert "\nASKED=/opt/conda/bin/python\n" in script  # --python, tried first
    assert instance.address == vm["networkInterfaces"][0]["networkIP"]
    assert instance.poll() is None  # running, nothing reported yet
    report_exit(made, name, 0)
    assert instance.poll() == 0
    instance.terminate()
    assert made.running_instances() == [] and not gcp.fake.instances


def test_an_on_demand_vm_is_standard_and_a_built_in_gpu_shape_attaches_none(
    gcp: GcpLocal, project: GcpTarget
) -> None:
    target = replace(project, instance_type="a2-highgpu-1g")
    made = launcher(target)
    made.launch(Placement(market="on-demand", pool=None, price=3.67), COMMAND, {})
    ((zone, _),) = gcp.fake.instances
    vm = next(iter(gcp.fake.instances.values()))
    assert zone == "us-central1-a"  # no pool on demand: the first zone
    assert vm["scheduling"]["provisioningModel"] == "STANDARD"
    assert "guestAccelerators" not in vm
    assert vm["machineType"].endswith("/machineTypes/a2-highgpu-1g")
    assert parse_shape("a2-highgpu-1g").count == 1  # its GPU, from data/gpu_shapes.csv


def test_a_zone_out_of_spot_capacity_is_no_capacity_and_leaves_nothing(
    gcp: GcpLocal, project: GcpTarget
) -> None:
    gcp.fake.stockout.add("us-central1-a")
    made = launcher(project)
    with pytest.raises(NoCapacity, match="us-central1-a: ZONE_RESOURCE_POOL_EXHAUSTED"):
        made.launch(Placement(market="spot", pool="us-central1-a", price=0.9), COMMAND, {})
    assert not gcp.fake.instances
    made.launch(Placement(market="spot", pool="us-central1-c", price=0.9), COMMAND, {})
    assert [z for z, _ in gcp.fake.instances] == ["us-central1-c"]


def test_no_gpu_quota_is_one_line_that_says_where_to_ask(gcp: GcpLocal, project: GcpTarget) -> None:
    gcp.fake.quotas["PREEMPTIBLE_NVIDIA_V100_GPUS"] = 0.0
    made = launcher(project)
    with pytest.raises(ExecutorError) as refused:
        made.launch(Placement(market="spot", pool="us-central1-a", price=0.9), COMMAND, {})
    message = str(refused.value)
    assert "\n" not in message and "no quota for this VM in us-central1" in message
    assert "PREEMPTIBLE_NVIDIA_V100_GPUS" in message and "Quotas" in message
    assert not gcp.fake.instances


def test_a_zone_without_the_gpu_is_refused_before_anything_is_made(
    gcp: GcpLocal, project: GcpTarget
) -> None:
    target = replace(project, zones=("us-central1-a", "us-central1-f"))
    with pytest.raises(ExecutorError) as refused:
        launcher(target, TOKEN="s3cret")
    assert str(refused.value) == (
        "--launcher gcp: us-central1-f offer no nvidia-tesla-v100; pass --pools with zones "
        "that do (gcloud compute accelerator-types list --filter=name=nvidia-tesla-v100)"
    )
    assert not gcp.fake.secrets and not gcp.fake.instances
    with pytest.raises(ExecutorError, match="--pools 'europe-west4-a' is not a zone of"):
        launcher(replace(project, zones=("europe-west4-a",)))


def test_secrets_go_to_secret_manager_for_the_vms_account_alone_and_go_at_close(
    gcp: GcpLocal, project: GcpTarget
) -> None:
    made = launcher(project, "job7", WANDB_API_KEY="wb-789")
    (secret,) = gcp.fake.secrets
    assert secret == "spotwise-job7-WANDB_API_KEY"
    assert gcp.fake.secrets[secret]["labels"]["spotwise-job"] == "job7"
    assert gcp.fake.versions[secret] == [b"wb-789"]
    assert gcp.fake.secret_policies[secret]["bindings"] == [
        {"role": "roles/secretmanager.secretAccessor", "members": [f"serviceAccount:{ACCOUNT}"]}
    ]
    made.launch(Placement(market="spot", pool="us-central1-a", price=0.9), COMMAND, {})
    script = metadata(next(iter(gcp.fake.instances.values())), "startup-script")
    assert "wb-789" not in script
    assert f"--secret WANDB_API_KEY=projects/{PROJECT}/secrets/{secret}" in script
    # the VM's side reads it back with the same library
    from spotwise.executor.clouds.gcp.on_instance import _secret_client, read_secret

    value = read_secret(_secret_client(gcp.fake.url), f"projects/{PROJECT}/secrets/{secret}")
    assert value == "wb-789"
    made.close()
    assert not gcp.fake.secrets
    with pytest.raises(ExecutorError, match="secret name 'not a name!'"):
        launcher(project, **{"not a name!": "x"})


def test_a_spot_vm_taken_back_without_a_report_was_preempted_and_a_vanished_one_failed(
    gcp: GcpLocal, project: GcpTarget
) -> None:
    made = launcher(project)
    spot = Placement(market="spot", pool="us-central1-a", price=0.9)
    taken = made.launch(spot, COMMAND, {})
    gcp.fake.preempt(taken.instance_id)
    assert taken.poll() == 75
    vanished = made.launch(spot, COMMAND, {})
    vanished.kill()  # gone, but no compute.instances.preempted operation
    assert vanished.poll() == 1
    asked = made.launch(spot, COMMAND, {})
    asked.notice()  # a notice to move: it had its chance to checkpoint
    assert asked.poll() == 75


@pytest.mark.slow
def test_the_supervisor_relaunches_on_gcp_after_a_preemption_and_tears_down(
    gcp: GcpLocal, project: GcpTarget, tmp_path: Path
) -> None:
    made = launcher(project)
    info = JobInfo(
        name="gcp",
        command=" ".join(COMMAND),
        launcher="gcp",
        compute_hours=1,
        deadline_hours=3,
        on_demand_price=2.95,
        simulated=False,
    )
    store = tmp_path / "store.duckdb"
    ledger = Ledger(store, info)
    job = JobTerms(compute_hours=1, deadline_hours=3, spot_price=0.9, on_demand_price=2.95)
    supervisor = Supervisor(made, in_process_for, SupervisorConfig(job=job), ledger)
    finished = threading.Event()
    errors: list[BaseException] = []

    def cloud() -> None:
        """The first VM is taken back by Compute Engine; the next one finishes."""
        seen: set[str] = set()
        try:
            while not finished.is_set():
                for instance in gcp.fake.live():
                    if instance["name"] not in seen:
                        seen.add(instance["name"])
                        time.sleep(0.3)
                        if len(seen) == 1:
                            gcp.fake.preempt(instance["name"])
                        else:
                            report_exit(made, instance["name"], 0)
                time.sleep(0.1)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=cloud, daemon=True)
    thread.start()
    try:
        report = supervisor.run(COMMAND)
    finally:
        finished.set()
        thread.join(10)
    assert not errors, errors
    assert report.completed and report.preemptions == 1 and report.instances == 2
    assert report.placements[0].startswith("spot in us-central1")
    assert made.running_instances() == []
    with open_operational(store) as market:
        ledger_report = job_report(market, ledger.job_id)
    assert ledger_report.preemptions == 1 and not ledger_report.simulated

"""The Azure launcher against the Resource Manager fake and Azurite: the Spot VM request as the
Azure SDK sends it, bids, refusals that are NoCapacity and leave nothing, evictions and Key
Vault secrets."""

from __future__ import annotations

import base64
import socket
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from spotwise.executor.clouds.azure.cloud import AzureCloud
from spotwise.executor.clouds.azure.fake.arm import Booted
from spotwise.executor.clouds.azure.fake.models import Invalid
from spotwise.executor.clouds.azure.fake.openapi import VIRTUAL_MACHINE, check_definition
from spotwise.executor.clouds.azure.fake.servers import AzureLocal
from spotwise.executor.clouds.azure.launcher import AzureInstance, AzureLauncher
from spotwise.executor.clouds.azure.target import AzureTarget
from spotwise.executor.clouds.code_bundle import ShippedCode
from spotwise.executor.errors import PREEMPTED_EXIT_CODE, ExecutorError, NoCapacity
from spotwise.executor.launchers.base import Placement

CODE = ShippedCode(
    "spotwise/code/aa11/workdir.tar.gz", "spotwise/code/bb22/spotwise-0.1.0-py3-none-any.whl"
)
COMMAND = ["python", "-m", "spotwise.executor.examples.train_mlp", "--ckpt", "az://spotwise/c"]
SIZE = "Standard_NC6s_v3"


def launcher(target: AzureTarget, job_id: str = "job42", **secrets: str) -> AzureLauncher:
    return AzureCloud().launcher(target, CODE, secrets, job_id=job_id)


def sent_vm(azure: AzureLocal, name: str) -> dict[str, Any]:
    """The body of the request that made VM ``name``, as the Azure SDK sent it."""
    (body,) = [
        r.json()
        for r in azure.fake.requests
        if r.method == "PUT" and r.path.endswith(f"/virtualMachines/{name}")
    ]
    return dict(body)


def left_of(azure: AzureLocal, job_id: str) -> list[str]:
    """The job's VMs and NICs the fake still has."""
    return [
        r["name"]
        for r in azure.fake.resources.values()
        if r.get("tags", {}).get("spotwise-job") == job_id
    ]


def eventually(what: str, check: Callable[[], Any], timeout_s: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if answer := check():
            return answer
        time.sleep(0.05)
    raise AssertionError(f"waited {timeout_s:.0f} s for {what}")


@pytest.mark.slow
def test_a_spot_launch_is_a_tagged_spot_vm_in_its_zone_running_the_boot_script(
    azure: AzureLocal, ready: AzureTarget
) -> None:
    runs = launcher(replace(ready, python="/anaconda/envs/py312/bin/python"))
    placement = Placement(market="spot", pool="2", price=0.9)
    env = {"SPOTWISE_MARKET": "spot", "SPOTWISE_API_TOKEN": "tok-123"}
    instance = runs.launch(placement, COMMAND, env)
    body = sent_vm(azure, instance.instance_id)
    properties = body["properties"]
    assert body["zones"] == ["2"] and body["location"] == "eastus"
    assert properties["priority"] == "Spot" and properties["evictionPolicy"] == "Delete"
    assert properties["billingProfile"] == {"maxPrice": -1}
    assert properties["hardwareProfile"] == {"vmSize": SIZE}
    assert body["tags"] == {
        "spotwise-job": "job42",
        "spotwise-host": socket.gethostname(),
        "spotwise-market": "spot",
    }
    assert list(body["identity"]["userAssignedIdentities"]) == [ready.identity_id]
    assert properties["storageProfile"]["osDisk"]["deleteOption"] == "Delete"
    (nic,) = properties["networkProfile"]["networkInterfaces"]
    assert nic["properties"]["deleteOption"] == "Delete"
    assert properties["osProfile"]["linuxConfiguration"]["disablePasswordAuthentication"]
    script = base64.b64decode(properties["osProfile"]["customData"]).decode()
    assert script.startswith("#!/bin/bash")
    assert "env SPOTWISE_MARKET=spot SPOTWISE_NOTICES=azure" in script
    assert f"blob get {CODE.wheel_key} " in script and "tok-123" not in script
    assert "\nASKED=/anaconda/envs/py312/bin/python\n" in script  # --python, tried first
    assert instance.address and instance.address.startswith("10.42.0.")
    assert runs.running_instances() == [instance.instance_id]
    assert instance.poll() is None  # running, nothing reported yet
    runs.container.upload_blob(f"{runs.prefix}/{instance.instance_id}/exit", b"0\n")
    assert instance.poll() == 0
    instance.terminate()
    eventually("the VM deleted", lambda: runs.running_instances() == [])
    eventually("its NIC deleted with it", lambda: left_of(azure, "job42") == [])


@pytest.mark.slow
def test_the_a100_size_plan_recommends_launches_as_real_azure_takes_any_size_name(
    azure: AzureLocal, ready: AzureTarget
) -> None:
    # the SDK's size enum stops at 2019's sizes; Azure's specification marks the list open
    runs = launcher(replace(ready, instance_type="Standard_NC24ads_A100_v4"))
    instance = runs.launch(Placement(market="spot", pool="1", price=3.0), COMMAND, {})
    body = sent_vm(azure, instance.instance_id)
    assert body["properties"]["hardwareProfile"] == {"vmSize": "Standard_NC24ads_A100_v4"}
    assert not azure.fake.refused
    instance.terminate()


def test_the_fake_judges_a_vm_body_by_azures_rest_specification() -> None:
    def refusal(body: dict[str, Any]) -> str:
        with pytest.raises(Invalid) as refused:
            check_definition(VIRTUAL_MACHINE, "VirtualMachine", body)
        return str(refused.value)

    good = {
        "location": "eastus",
        "properties": {
            "hardwareProfile": {"vmSize": "Standard_ND96isr_H200_v5"},  # open: any size
            "storageProfile": {"osDisk": {"createOption": "FromImage"}},
            "priority": "Spot",
        },
        "identity": {"type": "UserAssigned", "userAssignedIdentities": {"/x/id": {}}},
    }
    check_definition(VIRTUAL_MACHINE, "VirtualMachine", good)
    assert refusal({**good, "identity": {"type": "Managed"}}) == (  # a closed enum
        "body.identity.type='Managed' is not one of ['SystemAssigned', 'UserAssigned', "
        "'SystemAssigned, UserAssigned', 'None']"
    )
    assert refusal({"properties": {}}) == "body lacks 'location', which VirtualMachine requires"
    assert refusal({**good, "properties": {"vmId": "x"}}) == (
        "body.properties.vmId is read-only in VirtualMachineProperties: a request may not set it"
    )
    osdisk = {"storageProfile": {"osDisk": {"caching": "ReadOnly"}}}
    assert refusal({**good, "properties": osdisk}) == (
        "body.properties.storageProfile.osDisk lacks 'createOption', which OSDisk requires"
    )
    assert refusal({**good, "properties": {"hardwareProfile": {"vmSize": 8}}}) == (
        "body.properties.hardwareProfile.vmSize=8 is not a string"
    )
    assert "the fake has no SecurityProfile of computeRPCommon.json" in refusal(
        {**good, "properties": {"securityProfile": {}}}  # not vendored: vendor before trusting
    )
    assert refusal({**good, "sku": "x"}) == "body.sku is not a field of VirtualMachine"


@pytest.mark.slow  # five VMs
def test_a_spot_vm_bids_the_policys_price_never_above_the_users_cap(
    azure: AzureLocal, ready: AzureTarget
) -> None:
    """The policy's bid is the VM's maxPrice; --max-price caps it; neither: -1 (up to the
    on-demand price); an on-demand VM has no Spot fields."""
    azure.fake.sku(SIZE).spot_price = 0.5  # type: ignore[union-attr]
    caps = []
    for bid, cap in ((0.95, None), (0.95, 0.8), (None, 0.7), (None, None)):
        runs = AzureCloud().launcher(
            AzureTarget.from_dict(ready.to_dict() | {"max_price": cap}), CODE, job_id="bids"
        )
        vm = runs.launch(Placement(market="spot", pool="1", price=0.5, bid=bid), COMMAND, {})
        caps.append(sent_vm(azure, vm.instance_id)["properties"]["billingProfile"]["maxPrice"])
        vm.kill()
    assert caps == [0.95, 0.8, 0.7, -1]
    regular = runs.launch(Placement(market="on-demand", pool=None, price=3.06), COMMAND, {})
    properties = sent_vm(azure, regular.instance_id)["properties"]
    assert not {"priority", "evictionPolicy", "billingProfile"} & set(properties)
    assert "zones" not in sent_vm(azure, regular.instance_id)
    regular.kill()


@pytest.mark.slow  # six refused launches
def test_a_spot_vm_azure_refuses_is_no_capacity_and_leaves_nothing(
    azure: AzureLocal, ready: AzureTarget
) -> None:
    fake = azure.fake
    sku = fake.sku(SIZE)
    assert sku is not None
    fake.no_capacity = {"1": "ZonalAllocationFailed", "2": "OverconstrainedAllocationRequest"}
    sku.restricted_zones = ("3",)
    runs = launcher(ready, job_id="refused")
    for pool, code in (
        ("1", "ZonalAllocationFailed"),
        ("2", "OverconstrainedAllocationRequest"),
        ("3", "SkuNotAvailable"),
    ):
        with pytest.raises(NoCapacity, match=f"^{pool}: {code}$"):
            runs.launch(Placement(market="spot", pool=pool, price=0.9), COMMAND, {})
    fake.no_capacity, sku.restricted_zones = {}, ()
    with pytest.raises(NoCapacity, match="SpotPriceGreaterThanProvidedMaxPrice"):
        runs.launch(Placement(market="spot", pool="1", price=0.9, bid=0.5), COMMAND, {})
    fake.spot_quota = 4
    with pytest.raises(NoCapacity, match="OperationNotAllowed"):
        runs.launch(Placement(market="spot", pool="1", price=0.9), COMMAND, {})
    # the same refusal on demand is the launch's failure, in one line
    fake.no_capacity = {"": "AllocationFailed"}
    with pytest.raises(ExecutorError, match=r"^Azure VM in eastus: AllocationFailed: ") as caught:
        runs.launch(Placement(market="on-demand", pool=None, price=3.06), COMMAND, {})
    assert not isinstance(caught.value, NoCapacity) and "\n" not in str(caught.value)
    assert left_of(azure, "refused") == []  # the Failed VMs and their NICs were deleted


@pytest.mark.slow
def test_an_unregistered_provider_is_one_line_naming_the_fix_and_leaves_nothing(
    azure: AzureLocal, ready: AzureTarget
) -> None:
    azure.fake.unregistered = {"Microsoft.Compute"}
    runs = launcher(ready, job_id="noprovider")
    with pytest.raises(ExecutorError) as caught:
        runs.launch(Placement(market="spot", pool="1", price=0.9), COMMAND, {})
    message = str(caught.value)
    assert message.startswith("Azure VM in 1: MissingSubscriptionRegistration: ")
    assert message.endswith("az provider register --namespace NAME") and "\n" not in message
    assert left_of(azure, "noprovider") == []


@pytest.mark.slow
def test_a_price_above_the_cap_evicts_the_spot_vm_after_its_notice_and_it_was_preempted(
    azure: AzureLocal, ready: AzureTarget
) -> None:
    fake = azure.fake
    fake.eviction_delay_s = 0.2
    noticed: list[Booted] = []
    fake.on_notice = noticed.append
    runs = launcher(ready, job_id="price")
    capped = runs.launch(Placement(market="spot", pool="1", price=0.9, bid=0.95), COMMAND, {})
    uncapped = runs.launch(Placement(market="spot", pool="1", price=0.9), COMMAND, {})
    regular = runs.launch(Placement(market="on-demand", pool=None, price=3.06), COMMAND, {})
    fake.set_spot_price(SIZE, 1.2)
    assert [b.name for b in noticed] == [capped.instance_id]  # its Preempt event
    assert eventually("the eviction", lambda: capped.poll()) == PREEMPTED_EXIT_CODE
    assert uncapped.poll() is None  # -1: never evicted for price
    fake.delete_now(regular.instance_id)  # an on-demand VM gone without reporting failed
    assert regular.poll() == 1
    uncapped.kill()


@pytest.mark.slow
def test_a_vm_asked_to_leave_is_powered_off_and_counts_as_preempted(
    azure: AzureLocal, ready: AzureTarget
) -> None:
    powered_off: list[str] = []
    azure.fake.on_power_off = lambda vm: powered_off.append(vm.name)
    runs = launcher(ready, job_id="leave")
    instance = runs.launch(Placement(market="on-demand", pool=None, price=3.06), COMMAND, {})
    assert isinstance(instance, AzureInstance)
    instance.notice()  # a migration or a drill: the OS shuts down, SIGTERM to the job
    assert eventually("the power-off", lambda: instance.poll()) == PREEMPTED_EXIT_CODE
    assert powered_off == [instance.instance_id]
    instance.terminate()


@pytest.mark.slow
def test_secrets_live_in_key_vault_tagged_with_the_job_and_never_in_the_custom_data(
    azure: AzureLocal, ready: AzureTarget
) -> None:
    runs = launcher(ready, job_id="job7", WANDB_API_KEY="wb-789")
    (vault,) = azure.fake.vaults.values()
    stored = vault["spotwise-job7-wandb-api-key"]
    assert stored["value"] == "wb-789"
    assert stored["tags"] == {
        "spotwise-job": "job7",
        "spotwise-host": socket.gethostname(),
        "spotwise-env": "WANDB_API_KEY",
    }
    instance = runs.launch(Placement(market="spot", pool="1", price=0.9), COMMAND, {})
    script = base64.b64decode(
        sent_vm(azure, instance.instance_id)["properties"]["osProfile"]["customData"]
    ).decode()
    assert "wb-789" not in script
    assert "--secret WANDB_API_KEY=spotwise-job7-wandb-api-key" in script
    assert f"--vault {runs.vault} --emulated " in script
    instance.terminate()
    runs.close()
    assert (
        vault == {}
        and "spotwise-job7-wandb-api-key" in azure.fake.deleted_secrets[ready.vault_name]
    )
    with pytest.raises(ExecutorError, match="use letters, digits and _"):
        launcher(ready, job_id="job8", **{"not a name!": "x"})
    with pytest.raises(ExecutorError, match="Key Vault names ignore case and _"):
        launcher(ready, job_id="job9", HF_TOKEN="a", hf_token="b")
    assert vault == {}  # nothing half-written


@pytest.mark.slow
def test_a_launcher_without_the_vault_setup_makes_says_so_in_one_line(
    azure: AzureLocal, ready: AzureTarget
) -> None:
    azure.fake.resources = {
        k: v for k, v in azure.fake.resources.items() if "microsoft.keyvault" not in k
    }
    with pytest.raises(ExecutorError, match=r"^Key Vault spotwise-\w+ \(the job's secrets\)"):
        launcher(ready, job_id="novault", TOKEN="x")

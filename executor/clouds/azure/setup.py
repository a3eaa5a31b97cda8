"""``spotwise setup azure``: the subscription's side of ``--launcher azure``, made once by someone
allowed to: the resource group, a storage account with public blob access and shared keys off
and a private container, a user-assigned managed identity with the least role assignments
(:data:`IDENTITY_ROLES`: Storage Blob Data Contributor on the container, Key Vault Secrets User
on the vault, the list ``docs/azure.md`` shows), a Key Vault for the job's secrets (Azure RBAC,
soft delete), and the nodes' network: a virtual network whose subnet carries a network
security group that opens TCP between the subnet's own addresses (the rendezvous, the workers'
store and gloo/NCCL's ports). Each step says whether it made the resource or found it; running
it again changes nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from spotwise.executor.clouds.azure.clients import arm, azure_call, get_or_none
from spotwise.executor.clouds.azure.target import SUBNET_NAME, VNET_NAME, AzureTarget
from spotwise.executor.errors import ExecutorError

T = TypeVar("T")
ROLE_IDS = {
    "Storage Blob Data Contributor": "ba92f5b4-2d11-453d-a403-e96b0029c9fe",
    "Key Vault Secrets User": "4633458b-17de-408a-b874-0445c86b69e6",
    "Key Vault Secrets Officer": "b86a8fe4-44ce-4948-aee5-eccb2c155cd7",
}
"""Azure's built-in roles Spotwise uses, by their fixed ids."""
IDENTITY_ROLES = (
    ("Storage Blob Data Contributor", "container"),
    ("Key Vault Secrets User", "vault"),
)
"""The VMs' identity's role assignments, and the scope of each."""
NODES_GROUP = "spotwise-nodes"
NODES_RULE = "spotwise-nodes-tcp"
ADDRESS_SPACE = "10.42.0.0/16"
SUBNET_PREFIX = "10.42.0.0/24"


def role_definition(subscription: str, role: str) -> str:
    """The resource id of the built-in role ``role``."""
    return (
        f"/subscriptions/{subscription}/providers/Microsoft.Authorization/roleDefinitions/"
        f"{ROLE_IDS[role]}"
    )


def assignment_name(scope: str, role: str, principal: str) -> str:
    """A role assignment's name (a GUID), the same for the same scope, role and principal, so a
    second setup finds the first's."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"spotwise:{scope.lower()}|{role}|{principal}"))


def _made_or_found(get: Callable[[], T | None], make: Callable[[], T]) -> tuple[T, str]:
    found = get_or_none(get)
    if found is not None:
        return found, "found"
    return make(), "made"


def set_up(target: AzureTarget, credential: Any, say: Callable[[str], None]) -> str:
    """Make (or find) every resource; the subnet's id.

    Raises:
        ExecutorError: when Azure refuses a step (which, and why).
    """
    subscription, group = target.require_account("setup azure")
    account, container_name = target.storage_account, target.container
    if not account or not container_name:
        raise ExecutorError(
            "setup azure needs --bucket STORAGE_ACCOUNT/CONTAINER: the account to make (or "
            "reuse) and its container"
        )
    from azure.mgmt.keyvault import models as kv
    from azure.mgmt.msi import models as msi
    from azure.mgmt.resource.resources import models as res
    from azure.mgmt.storage import models as st

    resources = arm(target, "resource", credential)
    storage = arm(target, "storage", credential)
    identities = arm(target, "msi", credential).user_assigned_identities
    vaults = arm(target, "keyvault", credential).vaults
    location = target.region

    def step(what: str, call: Callable[[], T]) -> T:
        return azure_call(f"setup azure: {what}", call)

    made = "found"
    if not step(
        f"reading the resource group {group}",
        lambda: resources.resource_groups.check_existence(group),
    ):
        step(
            f"making the resource group {group}",
            lambda: resources.resource_groups.create_or_update(
                group, res.ResourceGroup(location=location)
            ),
        )
        made = "made"
    say(f"resource group {group} in {location}: {made}")

    _, made = step(
        f"making the storage account {account}",
        lambda: _made_or_found(
            lambda: storage.storage_accounts.get_properties(group, account),
            lambda: storage.storage_accounts.begin_create(
                group,
                account,
                st.StorageAccountCreateParameters(
                    sku=st.Sku(name="Standard_LRS"),
                    kind="StorageV2",
                    location=location,
                    tags={"spotwise": "code, logs and checkpoints"},
                    properties=st.StorageAccountPropertiesCreateParameters(
                        allow_blob_public_access=False,
                        allow_shared_key_access=False,
                        minimum_tls_version="TLS1_2",
                        enable_https_traffic_only=True,
                    ),
                ),
            ).result(),
        ),
    )
    say(f"storage account {account}: {made}, public blob access and shared keys off")
    container, made = step(
        f"making the container {container_name}",
        lambda: _made_or_found(
            lambda: storage.blob_containers.get(group, account, container_name),
            lambda: storage.blob_containers.create(
                group,
                account,
                container_name,
                st.BlobContainer(container_properties=st.ContainerProperties(public_access="None")),
            ),
        ),
    )
    say(f"container az://{container_name} in {account}: {made}, private")

    identity_name = target.identity_id.rsplit("/", 1)[1]
    if not target.identity_id.lower().startswith(target.group_id.lower() + "/"):
        raise ExecutorError(
            f"setup azure: --identity {target.identity} is in another resource group; pass its "
            f"name to make it in {group}, or assign it the roles of docs/azure.md yourself"
        )
    identity, made = step(
        f"making the managed identity {identity_name}",
        lambda: _made_or_found(
            lambda: identities.get(group, identity_name),
            lambda: identities.create_or_update(
                group, identity_name, msi.Identity(location=location)
            ),
        ),
    )
    say(f"managed identity {identity_name}: {made}")

    vault_name = target.vault_name
    vault, made = step(
        f"making the Key Vault {vault_name}",
        lambda: _made_or_found(
            lambda: vaults.get(group, vault_name),
            lambda: vaults.begin_create_or_update(
                group,
                vault_name,
                kv.VaultCreateOrUpdateParameters(
                    location=location,
                    tags={"spotwise": "job secrets"},
                    properties=kv.VaultProperties(
                        tenant_id=identity.tenant_id,
                        sku=kv.Sku(family="A", name="standard"),
                        enable_rbac_authorization=True,
                        enable_soft_delete=True,
                        soft_delete_retention_in_days=7,
                    ),
                ),
            ).result(),
        ),
    )
    say(f"Key Vault {vault_name}: {made}, access by Azure roles only")

    from azure.mgmt.authorization.v2022_04_01.models import RoleAssignmentCreateParameters

    authorization = arm(target, "authorization", credential)
    scopes = {"container": str(container.id), "vault": str(vault.id)}
    for role, scope_of in IDENTITY_ROLES:
        scope = scopes[scope_of]
        name = assignment_name(scope, role, identity.principal_id)

        def assign(scope: str = scope, role: str = role, name: str = name) -> tuple[Any, str]:
            return _made_or_found(
                lambda: authorization.role_assignments.get(scope, name),
                lambda: authorization.role_assignments.create(
                    scope,
                    name,
                    RoleAssignmentCreateParameters(
                        role_definition_id=role_definition(subscription, role),
                        principal_id=identity.principal_id,
                        principal_type="ServicePrincipal",
                    ),
                ),
            )

        _, made = step(f"assigning {role} to {identity_name}", assign)
        say(f"role {role} for {identity_name} on its {scope_of}: {made}")

    if target.subnet:
        say(
            f"subnet {target.subnet.rsplit('/', 1)[1]} given with --network: left as it is (its "
            "network security group must let the nodes reach each other, docs/azure.md)"
        )
        return target.subnet
    return _network(target, credential, step, say)


def _network(
    target: AzureTarget,
    credential: Any,
    step: Callable[[str, Callable[[], Any]], Any],
    say: Callable[[str], None],
) -> str:
    """The nodes' security group and rule, and the virtual network with its subnet."""
    from azure.mgmt.network import models as n

    _, group = target.require_account("setup azure")
    network = arm(target, "network", credential)
    location = target.region
    rule = n.SecurityRule(
        name=NODES_RULE,
        properties=n.SecurityRulePropertiesFormat(
            description="Spotwise elastic job nodes: every TCP port between the subnet's own "
            "addresses (rendezvous, the workers' store, gloo/NCCL)",
            protocol="Tcp",
            source_address_prefix=SUBNET_PREFIX,
            source_port_range="*",
            destination_address_prefix=SUBNET_PREFIX,
            destination_port_range="*",
            access="Allow",
            priority=1000,
            direction="Inbound",
        ),
    )
    nsg, made = step(
        f"making the network security group {NODES_GROUP}",
        lambda: _made_or_found(
            lambda: network.network_security_groups.get(group, NODES_GROUP),
            lambda: network.network_security_groups.begin_create_or_update(
                group,
                NODES_GROUP,
                n.NetworkSecurityGroup(
                    location=location,
                    properties=n.NetworkSecurityGroupPropertiesFormat(security_rules=[rule]),
                ),
            ).result(),
        ),
    )
    if get_or_none(lambda: network.security_rules.get(group, NODES_GROUP, NODES_RULE)) is None:
        step(
            f"adding the rule {NODES_RULE}",
            lambda: network.security_rules.begin_create_or_update(
                group, NODES_GROUP, NODES_RULE, rule
            ).result(),
        )
    say(f"network security group {NODES_GROUP}: {made}, TCP open within {SUBNET_PREFIX} only")
    vnet, made = step(
        f"making the virtual network {VNET_NAME}",
        lambda: _made_or_found(
            lambda: network.virtual_networks.get(group, VNET_NAME),
            lambda: network.virtual_networks.begin_create_or_update(
                group,
                VNET_NAME,
                n.VirtualNetwork(
                    location=location,
                    properties=n.VirtualNetworkPropertiesFormat(
                        address_space=n.AddressSpace(address_prefixes=[ADDRESS_SPACE]),
                        subnets=[
                            n.Subnet(
                                name=SUBNET_NAME,
                                properties=n.SubnetPropertiesFormat(
                                    address_prefix=SUBNET_PREFIX,
                                    network_security_group=n.NetworkSecurityGroup(id=nsg.id),
                                    service_endpoints=[
                                        n.ServiceEndpointPropertiesFormat(service=s)
                                        for s in ("Microsoft.Storage", "Microsoft.KeyVault")
                                    ],
                                ),
                            )
                        ],
                    ),
                ),
            ).result(),
        ),
    )
    say(f"virtual network {VNET_NAME} with subnet {SUBNET_NAME} ({SUBNET_PREFIX}): {made}")
    return f"{vnet.id}/subnets/{SUBNET_NAME}"

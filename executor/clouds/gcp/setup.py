"""``spotwise setup gcp``: the project's side of ``--launcher gcp``, made once by someone allowed
to: a private bucket (uniform bucket-level access, public access prevention enforced), the VMs'
service account with the least roles (:data:`BUCKET_ROLE` on that bucket alone; each job's
secrets are granted to it one by one when they are made), and the firewall rule an elastic
job's VMs share (:data:`NODES_TAG`: every TCP port open between VMs of that network tag only,
for torchrun's rendezvous, the workers' store and gloo/NCCL). Each step says whether it made
the resource or found it; running it again changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spotwise.executor.clouds.gcp.clients import Clients, explain, google_errors, status
from spotwise.executor.errors import ExecutorError

ACCOUNT_ID = "spotwise-instance"
CHECKPOINT_PREFIX = "spotwise/checkpoints"
"""Where in the bucket a job's checkpoints go (``--ckpt gs://BUCKET/spotwise/checkpoints/RUN``)."""
BUCKET_ROLE = "roles/storage.objectUser"
"""The VMs' one role on the bucket: read, write, list and delete objects (the code, logs and
exit codes, checkpoints); no IAM, no bucket settings."""
SECRET_ROLE = "roles/secretmanager.secretAccessor"
"""Granted on each job secret, to the VMs' service account alone."""
NODES_TAG = "spotwise-nodes"
NODES_RULE = "spotwise-nodes"


def set_up(
    clients: Clients,
    region: str,
    bucket: str,
    account: str,
    *,
    say: Callable[[str], None] = lambda _: None,
) -> str:
    """Make (or find) the bucket, the service account, its role on the bucket and the nodes'
    firewall rule; the rule's network tag.

    Raises:
        ExecutorError: when Google refuses a step (which, and why), in one line.
    """
    project = clients.project
    step = f"making the bucket gs://{bucket}"
    try:
        storage = clients.storage()
        made, bucket_ = _bucket(storage, bucket, region)
        say(
            f"bucket gs://{bucket} in {bucket_.location or region}: {made}, uniform "
            "bucket-level access, public access prevention enforced"
        )
        step = f"making the service account {account}"
        made = _service_account(clients, account)
        say(f"service account {account}: {made}")
        step = f"granting {BUCKET_ROLE} on gs://{bucket} to {account}"
        made = _bucket_role(bucket_, account)
        say(f"{BUCKET_ROLE} on gs://{bucket} for {account}: {made} (its only role)")
        step = f"making the firewall rule {NODES_RULE}"
        made = _nodes_rule(clients)
        say(
            f"firewall rule {NODES_RULE} on the default network: {made}, TCP between VMs "
            f"tagged {NODES_TAG} only"
        )
    except google_errors() as exc:
        raise ExecutorError(explain(exc, project, f"setup gcp: {step}")) from exc
    return NODES_TAG


def _bucket(storage: Any, name: str, region: str) -> tuple[str, Any]:
    """The bucket, made private if it is not: "made" or "found"."""
    from google.api_core.exceptions import NotFound

    try:
        bucket = storage.get_bucket(name)
        made = "found"
    except NotFound:
        bucket = storage.bucket(name)
        bucket.iam_configuration.uniform_bucket_level_access_enabled = True
        bucket.iam_configuration.public_access_prevention = "enforced"
        bucket = storage.create_bucket(bucket, location=region)
        made = "made"
    config = bucket.iam_configuration
    if not config.uniform_bucket_level_access_enabled or (
        config.public_access_prevention != "enforced"
    ):
        config.uniform_bucket_level_access_enabled = True
        config.public_access_prevention = "enforced"
        bucket.patch()
        made = "made private" if made == "found" else made
    return made, bucket


def _service_account(clients: Clients, email: str) -> str:
    """The VMs' service account: "made" or "found"."""
    accounts = clients.iam()
    try:
        accounts.get(name=f"projects/{clients.project}/serviceAccounts/{email}").execute()
        return "found"
    except google_errors() as exc:
        if status(exc) != 404:
            raise
    accounts.create(
        name=f"projects/{clients.project}",
        body={
            "accountId": email.split("@", 1)[0],
            "serviceAccount": {
                "displayName": "Spotwise job VMs",
                "description": "Spotwise job VMs: fetch code, send logs, checkpoints, read "
                "their job's secrets",
            },
        },
    ).execute()
    return "made"


def _bucket_role(bucket: Any, email: str) -> str:
    """:data:`BUCKET_ROLE` on the bucket for the service account: "granted" or "found"."""
    member = f"serviceAccount:{email}"
    policy = bucket.get_iam_policy(requested_policy_version=3)
    for binding in policy.bindings:
        if binding.get("role") == BUCKET_ROLE and member in binding.get("members", ()):
            return "found"
    policy.bindings.append({"role": BUCKET_ROLE, "members": {member}})
    bucket.set_iam_policy(policy)
    return "granted"


def _nodes_rule(clients: Clients) -> str:
    """The firewall rule between VMs tagged :data:`NODES_TAG`: "made" or "found"."""
    from google.api_core.exceptions import NotFound

    firewalls = clients.compute("firewalls")
    try:
        firewalls.get(project=clients.project, firewall=NODES_RULE)
        return "found"
    except NotFound:
        pass
    firewalls.insert(
        project=clients.project,
        firewall_resource={
            "name": NODES_RULE,
            "network": "global/networks/default",
            "description": "Spotwise elastic job nodes: TCP between VMs tagged spotwise-nodes",
            "direction": "INGRESS",
            "allowed": [{"I_p_protocol": "tcp", "ports": ["0-65535"]}],
            "source_tags": [NODES_TAG],
            "target_tags": [NODES_TAG],
        },
    ).result(timeout=300)
    return "made"

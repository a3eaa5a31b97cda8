"""``spotwise gc azure``'s side of the one orphan rule (:mod:`executor.clouds.orphans`): the VMs
of the resource group and the secrets of its Key Vault tagged ``spotwise-job=JOB`` and
``spotwise-host=HOST``, judged by the ledger, and ending those it proves orphaned."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spotwise.executor.clouds.orphans import Judged, Verdict, judge, this_host

JOB_TAG = "spotwise-job"
HOST_TAG = "spotwise-host"


def job_tags(job_id: str) -> dict[str, str]:
    """The tags of everything made for ``job_id`` on this host."""
    return {JOB_TAG: job_id, HOST_TAG: this_host()}


def secret_name(job_id: str, variable: str) -> str:
    """The Key Vault secret holding ``variable`` for ``job_id`` (Key Vault names take letters,
    digits and hyphens, and ignore case)."""
    return f"spotwise-{job_id}-{variable.replace('_', '-').lower()}"


def _mine(tags: dict[str, str], host: str | None, named: frozenset[str]) -> bool:
    return host is None or tags.get(HOST_TAG) == host or tags.get(JOB_TAG, "") in named


def judge_vms(
    compute: Any,
    group: str,
    verdicts: dict[str, Verdict] | None,
    host: str | None,
    *,
    named: frozenset[str] = frozenset(),
    store_path: Path,
) -> list[Judged]:
    """Every tagged VM of ``group`` not being deleted, of ``host`` (None: any; a ``named``
    job's of any host), judged by :func:`judge`."""
    judged = []
    for vm in compute.virtual_machines.list(group):
        tags = dict(vm.tags or {})
        if JOB_TAG not in tags or vm.properties.provisioning_state == "Deleting":
            continue
        if _mine(tags, host, named):
            judged.append(judge(str(vm.name), tags[JOB_TAG], verdicts, named, store_path))
    return judged


def judge_secrets(
    client: Any,
    verdicts: dict[str, Verdict] | None,
    host: str | None,
    *,
    named: frozenset[str] = frozenset(),
    store_path: Path,
) -> list[Judged]:
    """The vault's secrets tagged with a job (of ``host``; None: any; a ``named`` job's of any
    host), judged by :func:`judge`: a job's secrets outlive it only when its supervisor died."""
    judged = []
    for secret in client.list_properties_of_secrets():
        tags = dict(secret.tags or {})
        if JOB_TAG in tags and _mine(tags, host, named):
            judged.append(
                judge(str(secret.name), tags[JOB_TAG], verdicts, named, store_path, kind="secret")
            )
    return judged


def end_vms(compute: Any, group: str, names: list[str]) -> None:
    """Delete the VMs (their NICs and disks go with them), waiting for Azure to finish."""
    pollers = [compute.virtual_machines.begin_delete(group, name) for name in names]
    for poller in pollers:
        poller.result()


def delete_secrets(client: Any, names: list[str]) -> None:
    """Delete the secrets (soft delete: the vault keeps them for its retention days)."""
    for name in names:
        client.begin_delete_secret(name)

"""``spotwise gc azure``'s side of the one orphan rule (:mod:`executor.clouds.orphans`): the VMs
of the resource group and the secrets of its Key Vault tagged ``spotwise-job=JOB`` and
``spotwise-host=HOST``, judged by the ledger, and ending those it proves orphaned."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spotwise.executor.clouds.orphans import Judged, Verdict, judge, this_host

if TYPE_CHECKING:
    from spotwise.executor.clouds.azure.target import AzureTarget

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
) -> Iterator[Judged]:
    """Every tagged VM of ``group`` not being deleted, of ``host`` (None: any; a ``named``
    job's of any host), judged by :func:`judge` as its page comes."""
    for vm in compute.virtual_machines.list(group):
        tags = dict(vm.tags or {})
        if JOB_TAG not in tags or vm.properties.provisioning_state == "Deleting":
            continue
        if _mine(tags, host, named):
            yield judge(str(vm.name), tags[JOB_TAG], verdicts, named, store_path)


def judge_secrets(
    client: Any,
    verdicts: dict[str, Verdict] | None,
    host: str | None,
    *,
    named: frozenset[str] = frozenset(),
    store_path: Path,
) -> Iterator[Judged]:
    """The vault's secrets tagged with a job (of ``host``; None: any; a ``named`` job's of any
    host), judged by :func:`judge` as its page comes: a job's secrets outlive it only when its
    supervisor died."""
    for secret in client.list_properties_of_secrets():
        tags = dict(secret.tags or {})
        if JOB_TAG in tags and _mine(tags, host, named):
            yield judge(str(secret.name), tags[JOB_TAG], verdicts, named, store_path, kind="secret")


class AzureSweep:
    """``gc azure``'s pass over a resource group (:class:`~executor.clouds.base.Sweep`): its
    VMs and its Key Vault's secrets, with a credential that has shown it gets a token."""

    def __init__(self, target: AzureTarget, cred: Any) -> None:
        _, self._group = target.require_account("gc azure")
        self._target, self._cred = target, cred
        at = f" at {target.endpoint_url}" if target.endpoint_url else ""
        self.looking = (
            f"Azure resource group {self._group}{at}: VMs tagged {JOB_TAG}, then the secrets of "
            f"Key Vault {target.vault_name} tagged so"
        )

    def judged(
        self,
        verdicts: dict[str, Verdict] | None,
        host: str | None,
        *,
        named: frozenset[str],
        store_path: Path,
    ) -> Iterator[Judged]:
        """The VMs, then the vault's secrets (none without a vault), each judged as its page
        comes.

        Raises:
            ExecutorError: when Azure refuses to list them.
        """
        vms = judge_vms(
            self._compute, self._group, verdicts, host, named=named, store_path=store_path
        )
        yield from self._each(vms)
        if self._secrets is not None:
            yield from self._each(
                judge_secrets(self._secrets, verdicts, host, named=named, store_path=store_path),
                "Key Vault",
            )

    def ended(self, judged: Iterable[Judged]) -> Iterator[Judged]:
        """Each of ``judged``: at once when it is left; a VM to end once Azure has taken its
        deletion (they run together: each is waited for before the last is given back, so an
        error in one is said before gc's summary); a secret once its deletion is taken (soft
        delete: the vault keeps it for its retention days).

        Raises:
            ExecutorError: when Azure refuses.
        """
        from spotwise.executor.clouds.azure.clients import azure_call

        deleting: list[tuple[str, Any]] = []
        for item in judged:
            if item.end and item.kind == "instance":
                vms = self._compute.virtual_machines
                poller = azure_call(
                    f"gc azure ({self._group})",
                    functools.partial(vms.begin_delete, self._group, item.resource),
                )
                deleting.append((item.resource, poller))
            elif item.end:
                delete = functools.partial(self._secrets.begin_delete_secret, item.resource)
                azure_call("gc azure (Key Vault)", delete)
            yield item
        for name, poller in deleting:
            azure_call(f"gc azure ({self._group}, deleting VM {name})", poller.result)

    def _each(self, items: Iterator[Judged], what: str = "") -> Iterator[Judged]:
        """``items``, each of Azure's errors in one line."""
        from spotwise.executor.clouds.azure.clients import azure_call

        where = f"gc azure ({what or self._group})"
        while (item := azure_call(where, lambda: next(items, None))) is not None:
            yield item

    @functools.cached_property
    def _compute(self) -> Any:
        from spotwise.executor.clouds.azure.clients import arm

        return arm(self._target, "compute", self._cred)

    @functools.cached_property
    def _secrets(self) -> Any:
        """The vault's SecretClient (None: no vault, so no secret)."""
        from spotwise.executor.clouds.azure.clients import (
            arm,
            azure_call,
            get_or_none,
            secrets_client,
        )

        vaults = arm(self._target, "keyvault", self._cred).vaults
        vault = azure_call(
            f"gc azure ({self._group})",
            lambda: get_or_none(lambda: vaults.get(self._group, self._target.vault_name)),
        )
        if vault is None:
            return None
        emulated = bool(self._target.endpoint_url)
        return secrets_client(str(vault.properties.vault_uri), self._cred, emulated=emulated)

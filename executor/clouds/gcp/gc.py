"""``spotwise gc gcp``'s side of the one orphan rule (:mod:`executor.clouds.orphans`): the VMs
and Secret Manager secrets labelled ``spotwise-job=JOB`` and ``spotwise-host=HOST``, judged by
the ledger, and ending those it proves orphaned.

GCP labels take only lowercase letters, digits, ``_`` and ``-`` (63 at most), so a host name is
written with :func:`host_label`: those characters kept, every other byte ``_`` and two hex
digits (``_`` itself too), so two hosts never share a label; a name too long for 63 ends in a
hash of the whole."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spotwise.executor.clouds.orphans import Judged, Verdict, judge, this_host

if TYPE_CHECKING:
    from spotwise.executor.clouds.gcp.clients import Clients

JOB_LABEL = "spotwise-job"
HOST_LABEL = "spotwise-host"
SECRET_PREFIX = "spotwise-"
"""Every job secret's id starts so: ``spotwise-JOB-NAME``."""
LABEL_MAX = 63
LIST_TIMEOUT_S = 30.0
"""Seconds one listing may wait for Google's answer (an endpoint that never answers is said
then, in one line, not after the libraries' minutes)."""
KEPT = re.compile(r"[a-z0-9-]")


def host_label(host: str) -> str:
    """``host`` as a GCP label value, one to one (up to a hash for a very long name)."""
    text = "".join(
        ch if KEPT.fullmatch(ch) else "".join(f"_{b:02x}" for b in ch.encode()) for ch in host
    )
    if len(text) <= LABEL_MAX:
        return text
    digest = hashlib.sha256(host.encode()).hexdigest()[:16]
    return f"{text[: LABEL_MAX - 17]}-{digest}"


def job_labels(job_id: str) -> dict[str, str]:
    """The labels of everything made for ``job_id`` on this host."""
    return {JOB_LABEL: job_id, HOST_LABEL: host_label(this_host())}


def secret_id(job_id: str, name: str) -> str:
    """The id of job ``job_id``'s secret for the variable ``name``."""
    return f"{SECRET_PREFIX}{job_id}-{name}"


def job_instances(instances: Any, project: str, job_id: str | None) -> list[tuple[str, Any]]:
    """Every labelled VM (of ``job_id``, when given) as (zone, instance)."""
    return list(_labelled(instances, project, job_id))


def _labelled(instances: Any, project: str, job_id: str | None) -> Iterator[tuple[str, Any]]:
    """Every labelled VM (of ``job_id``, when given) as (zone, instance), as its page comes."""
    term = f'labels.{JOB_LABEL} = "{job_id}"' if job_id else f"labels.{JOB_LABEL}:*"
    pages = instances.aggregated_list(
        request={"project": project, "filter": term}, timeout=LIST_TIMEOUT_S
    )
    for scope, listed in pages:
        for instance in listed.instances:
            yield scope.removeprefix("zones/"), instance


def judge_instances(
    instances: Any,
    project: str,
    verdicts: dict[str, Verdict] | None,
    host: str | None,
    *,
    named: frozenset[str] = frozenset(),
    store_path: Path,
) -> Iterator[Judged]:
    """Every labelled VM of ``host`` (None: any; a ``named`` job's of any host), judged by
    :func:`judge` as its page comes; its resource is ``ZONE/NAME``."""
    mine = None if host is None else host_label(host)
    for zone, instance in _labelled(instances, project, None):
        labels = dict(instance.labels)
        job = labels.get(JOB_LABEL, "")
        if mine is not None and labels.get(HOST_LABEL) != mine and job not in named:
            continue
        yield judge(f"{zone}/{instance.name}", job, verdicts, named, store_path)


def end_instance(instances: Any, project: str, resource: str) -> None:
    """Delete the VM ``ZONE/NAME``, waiting for the deletion (one already gone is fine)."""
    from google.api_core.exceptions import NotFound

    zone, _, name = resource.partition("/")
    try:
        instances.delete(project=project, zone=zone, instance=name).result(timeout=300)
    except NotFound:
        return  # gone meanwhile: what was wanted


def judge_secrets(
    secrets: Any,
    project: str,
    verdicts: dict[str, Verdict] | None,
    host: str | None,
    *,
    named: frozenset[str] = frozenset(),
    store_path: Path,
) -> Iterator[Judged]:
    """Secrets labelled with a job (of ``host``; None: any; a ``named`` job's of any host),
    judged by :func:`judge` as its page comes: a job's secrets outlive it only when its
    supervisor died. The resource is the secret's id."""
    mine = None if host is None else host_label(host)
    listed = secrets.list_secrets(
        request={"parent": f"projects/{project}", "filter": f"labels.{JOB_LABEL}:*"},
        timeout=LIST_TIMEOUT_S,
    )
    for secret in listed:
        labels = dict(secret.labels)
        job = labels.get(JOB_LABEL, "")
        if mine is not None and labels.get(HOST_LABEL) != mine and job not in named:
            continue
        name = secret.name.rsplit("/", 1)[-1]
        yield judge(name, job, verdicts, named, store_path, kind="secret")


def delete_secret(secrets: Any, project: str, secret: str) -> None:
    """Delete the secret ``secret`` (one already gone is fine)."""
    from google.api_core.exceptions import NotFound

    try:
        secrets.delete_secret(name=f"projects/{project}/secrets/{secret}")
    except NotFound:
        return


class GcpSweep:
    """``gc gcp``'s pass over a project (:class:`~executor.clouds.base.Sweep`): its clients,
    with credentials already found."""

    def __init__(self, clients: Clients, endpoint_url: str | None) -> None:
        self._clients = clients
        at = f" at {endpoint_url}" if endpoint_url else ""
        self.looking = (
            f"GCP project {clients.project}{at}: Compute Engine VMs labelled {JOB_LABEL}, then "
            "Secret Manager secrets labelled so"
        )

    def judged(
        self,
        verdicts: dict[str, Verdict] | None,
        host: str | None,
        *,
        named: frozenset[str],
        store_path: Path,
    ) -> Iterator[Judged]:
        """The VMs, then the secrets, each judged as its page comes.

        Raises:
            ExecutorError: when Google refuses to list them.
        """
        from spotwise.executor.clouds.gcp.clients import explained

        project = self._clients.project
        with explained(project, "gc gcp"):
            yield from judge_instances(
                self._instances, project, verdicts, host, named=named, store_path=store_path
            )
            yield from judge_secrets(
                self._secrets, project, verdicts, host, named=named, store_path=store_path
            )

    def ended(self, judged: Iterable[Judged]) -> Iterator[Judged]:
        """Each of ``judged`` once its VM's deletion is done or its secret deleted, or at once
        when it is left.

        Raises:
            ExecutorError: when Google refuses.
        """
        from spotwise.executor.clouds.gcp.clients import explained

        project = self._clients.project
        for item in judged:
            if item.end:
                with explained(project, "gc gcp"):
                    if item.kind == "instance":
                        end_instance(self._instances, project, item.resource)
                    else:
                        delete_secret(self._secrets, project, item.resource)
            yield item

    @functools.cached_property
    def _instances(self) -> Any:
        return self._clients.compute("instances")

    @functools.cached_property
    def _secrets(self) -> Any:
        return self._clients.secrets()

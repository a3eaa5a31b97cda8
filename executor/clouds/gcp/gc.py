"""``spotwise gc gcp``'s side of the one orphan rule (:mod:`executor.clouds.orphans`): the VMs
and Secret Manager secrets labelled ``spotwise-job=JOB`` and ``spotwise-host=HOST``, judged by
the ledger, and ending those it proves orphaned.

GCP labels take only lowercase letters, digits, ``_`` and ``-`` (63 at most), so a host name is
written with :func:`host_label`: those characters kept, every other byte ``_`` and two hex
digits (``_`` itself too), so two hosts never share a label; a name too long for 63 ends in a
hash of the whole."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from spotwise.executor.clouds.orphans import Judged, Verdict, judge, this_host

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
    term = f'labels.{JOB_LABEL} = "{job_id}"' if job_id else f"labels.{JOB_LABEL}:*"
    found = []
    pages = instances.aggregated_list(
        request={"project": project, "filter": term}, timeout=LIST_TIMEOUT_S
    )
    for scope, listed in pages:
        for instance in listed.instances:
            found.append((scope.removeprefix("zones/"), instance))
    return found


def judge_instances(
    instances: Any,
    project: str,
    verdicts: dict[str, Verdict] | None,
    host: str | None,
    *,
    named: frozenset[str] = frozenset(),
    store_path: Path,
) -> list[Judged]:
    """Every labelled VM of ``host`` (None: any; a ``named`` job's of any host), judged by
    :func:`judge`; its resource is ``ZONE/NAME``."""
    judged = []
    mine = None if host is None else host_label(host)
    for zone, instance in job_instances(instances, project, None):
        labels = dict(instance.labels)
        job = labels.get(JOB_LABEL, "")
        if mine is not None and labels.get(HOST_LABEL) != mine and job not in named:
            continue
        judged.append(judge(f"{zone}/{instance.name}", job, verdicts, named, store_path))
    return judged


def end_instances(instances: Any, project: str, judged: list[Judged]) -> None:
    """Delete the VMs ``judged`` to end, waiting for each deletion."""
    from google.api_core.exceptions import NotFound

    for item in judged:
        if not item.end:
            continue
        zone, _, name = item.resource.partition("/")
        try:
            instances.delete(project=project, zone=zone, instance=name).result(timeout=300)
        except NotFound:
            continue  # gone meanwhile: what was wanted


def judge_secrets(
    secrets: Any,
    project: str,
    verdicts: dict[str, Verdict] | None,
    host: str | None,
    *,
    named: frozenset[str] = frozenset(),
    store_path: Path,
) -> list[Judged]:
    """Secrets labelled with a job (of ``host``; None: any; a ``named`` job's of any host),
    judged by :func:`judge`: a job's secrets outlive it only when its supervisor died. The
    resource is the secret's id."""
    mine = None if host is None else host_label(host)
    judged = []
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
        judged.append(judge(name, job, verdicts, named, store_path, kind="secret"))
    return judged


def delete_secrets(secrets: Any, project: str, ids: list[str]) -> None:
    """Delete the secrets ``ids`` (one already gone is fine)."""
    from google.api_core.exceptions import NotFound

    for secret in ids:
        try:
            secrets.delete_secret(name=f"projects/{project}/secrets/{secret}")
        except NotFound:
            continue

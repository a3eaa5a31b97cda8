"""Cloud resources nobody supervises any more. Every instance and secret Spotwise makes is
tagged ``spotwise:job=JOB`` (the ledger's id of the job) and ``spotwise:host=HOST`` (the
machine whose ledger has the job). ``spotwise gc aws`` ends only what it can prove orphaned:
the ledger recorded its job, and that job has ended, or its supervisor (a process of this
host) is gone. A job the ledger has never seen (another store's, or a mistyped ``--store``)
is reported, never ended, unless the user names it (``--job``); so is a job running under a
live supervisor, or under one on another host, which this host cannot check."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

JOB_TAG = "spotwise:job"
HOST_TAG = "spotwise:host"
SECRETS_PATH = "/spotwise/"
PROBE_PARAMETER = f"{SECRETS_PATH}check/probe"
"""The parameter `check aws` writes and deletes to test SSM: no job's secret."""
LIVE_STATES = ("pending", "running", "stopping", "stopped")


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """What the ledger says of one job: whether its resources may be ended, and why."""

    orphaned: bool
    why: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Judged:
    """One tagged resource (an instance id, or a secret's name) and what gc does with it."""

    resource: str
    job_id: str
    end: bool
    why: str


def ledger_verdicts(store_path: Path) -> dict[str, Verdict] | None:
    """Each job of the ledger at ``store_path`` judged: orphaned when it has ended, or when it
    is ``running`` and its supervisor, on this host, is gone; live otherwise (None: there is
    no ledger there)."""
    from spotwise.executor.supervise.cancel import supervisor_alive  # the store: only gc reads it
    from spotwise.pricing.operational import open_operational, operational_exists

    if not operational_exists(store_path):
        return None
    with open_operational(store_path, read_only=True) as store:
        rows = store.records("SELECT job_id, status, host, supervisor_pid FROM jobs")
    here = socket.gethostname()
    verdicts = {}
    for row in rows:
        status, host, pid = row["status"], row["host"], row["supervisor_pid"]
        if status != "running":
            verdict = Verdict(orphaned=True, why=f"its job is {status} in the ledger")
        elif host != here:
            verdict = Verdict(
                orphaned=False, why=f"its job runs under a supervisor on {host}, not checked here"
            )
        elif pid is None:
            verdict = Verdict(orphaned=False, why="its job runs; the ledger has no supervisor pid")
        elif supervisor_alive(int(pid)):
            verdict = Verdict(
                orphaned=False, why=f"its job runs under a live supervisor (pid {pid})"
            )
        else:
            verdict = Verdict(
                orphaned=True, why=f"its job's supervisor (pid {pid} on {here}) is gone"
            )
        verdicts[str(row["job_id"])] = verdict
    return verdicts


def judge(
    resource: str,
    job_id: str,
    verdicts: dict[str, Verdict] | None,
    named: frozenset[str],
    store_path: Path,
) -> Judged:
    """Whether gc ends ``resource`` of ``job_id``: a job the ledger proves orphaned, or one the
    user ``named`` that the ledger does not show live."""
    verdict = (verdicts or {}).get(job_id)
    if verdict is not None:
        return Judged(resource=resource, job_id=job_id, end=verdict.orphaned, why=verdict.why)
    if job_id in named:
        return Judged(resource=resource, job_id=job_id, end=True, why="named with --job")
    where = f"the ledger at {store_path}" if verdicts is not None else f"{store_path} (no ledger)"
    return Judged(
        resource=resource,
        job_id=job_id,
        end=False,
        why=f"job {job_id or '?'} is not in {where}: left alone; if it is yours and no "
        f"supervisor runs it, add --job {job_id or 'ID'} (or pass the --store that ran it)",
    )


def job_tags(job_id: str) -> list[dict[str, str]]:
    """The tags of everything made for ``job_id`` on this host."""
    return [{"Key": JOB_TAG, "Value": job_id}, {"Key": HOST_TAG, "Value": socket.gethostname()}]


def judge_instances(
    ec2: Any,
    verdicts: dict[str, Verdict] | None,
    host: str | None,
    *,
    named: frozenset[str] = frozenset(),
    store_path: Path,
) -> list[Judged]:
    """Every tagged instance not yet terminated of ``host`` (None: any; a ``named`` job's of
    any host), judged by :func:`judge`."""
    filters = [
        {"Name": "tag-key", "Values": [JOB_TAG]},
        {"Name": "instance-state-name", "Values": list(LIVE_STATES)},
    ]
    pages = ec2.get_paginator("describe_instances").paginate(Filters=filters)
    judged = []
    for page in pages:
        for reservation in page["Reservations"]:
            for instance in reservation["Instances"]:
                tags = {t["Key"]: t["Value"] for t in instance.get("Tags", [])}
                job = tags.get(JOB_TAG, "")
                if host is not None and tags.get(HOST_TAG) != host and job not in named:
                    continue
                judged.append(judge(instance["InstanceId"], job, verdicts, named, store_path))
    return judged


def end_instances(ec2: Any, judged: list[Judged]) -> None:
    """Terminate the instances ``judged`` to end (one call)."""
    ids = [j.resource for j in judged if j.end]
    if ids:
        ec2.terminate_instances(InstanceIds=ids)


def judge_secrets(
    ssm: Any,
    verdicts: dict[str, Verdict] | None,
    host: str | None,
    *,
    named: frozenset[str] = frozenset(),
    store_path: Path,
) -> list[Judged]:
    """SSM parameters under ``/spotwise/JOB/`` (tagged for ``host``; None: any; a ``named``
    job's of any host), judged by :func:`judge`: a job's secrets outlive it only when its
    supervisor died."""
    filters = [{"Key": "Path", "Option": "Recursive", "Values": [SECRETS_PATH]}]
    pages = ssm.get_paginator("describe_parameters").paginate(ParameterFilters=filters)
    names = [p["Name"] for page in pages for p in page["Parameters"]]
    mine = set(names) if host is None else _tagged_for(ssm, host)
    judged = []
    for name in names:
        if name == PROBE_PARAMETER:
            continue
        job = name.split("/")[2]
        if name in mine or job in named:
            judged.append(judge(name, job, verdicts, named, store_path))
    return judged


def _tagged_for(ssm: Any, host: str) -> set[str]:
    filters = [
        {"Key": "Path", "Option": "Recursive", "Values": [SECRETS_PATH]},
        {"Key": f"tag:{HOST_TAG}", "Values": [host]},
    ]
    pages = ssm.get_paginator("describe_parameters").paginate(ParameterFilters=filters)
    return {p["Name"] for page in pages for p in page["Parameters"]}


def delete_secrets(ssm: Any, names: list[str]) -> None:
    """Delete ``names`` from SSM, ten per call (the API's most)."""
    for start in range(0, len(names), 10):
        ssm.delete_parameters(Names=names[start : start + 10])

"""Cloud resources nobody supervises any more. Every instance and secret Spotwise makes is
tagged ``spotwise:job=JOB`` and ``spotwise:host=HOST`` (the machine whose ledger has the
job); one of this host whose job is not running in the ledger, or whose supervisor is gone, is
an orphan, and ``spotwise gc aws`` ends it. Another host's resources are that host's ledger's
to judge: they are left alone unless asked (``--any-host``)."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

JOB_TAG = "spotwise:job"
HOST_TAG = "spotwise:host"
SECRETS_PATH = "/spotwise/"
LIVE_STATES = ("pending", "running", "stopping", "stopped")


@dataclass(frozen=True, slots=True, kw_only=True)
class Orphan:
    """One instance to end, and why."""

    instance_id: str
    job_id: str
    why: str


def supervised_jobs(store_path: Path) -> set[str]:
    """Jobs the ledger has running with a supervisor that is alive (or on another host)."""
    from spotwise.executor.cancel import supervisor_alive  # the store: only gc reads it
    from spotwise.pricing.operational import open_operational, operational_exists

    if not operational_exists(store_path):
        return set()
    with open_operational(store_path, read_only=True) as store:
        rows = store.records(
            "SELECT job_id, host, supervisor_pid FROM jobs WHERE status = 'running'"
        )
    here = socket.gethostname()
    return {
        str(r["job_id"])
        for r in rows
        if r["host"] != here
        or r["supervisor_pid"] is None
        or supervisor_alive(int(r["supervisor_pid"]))
    }


def job_tags(job_id: str) -> list[dict[str, str]]:
    """The tags of everything made for ``job_id`` on this host."""
    return [{"Key": JOB_TAG, "Value": job_id}, {"Key": HOST_TAG, "Value": socket.gethostname()}]


def find_orphans(ec2: Any, supervised: set[str], host: str | None) -> list[Orphan]:
    """Tagged instances of ``host`` (None: any) not yet terminated whose job is not in
    ``supervised``."""
    filters = [
        {"Name": "tag-key", "Values": [JOB_TAG]},
        {"Name": "instance-state-name", "Values": list(LIVE_STATES)},
    ]
    if host is not None:
        filters.append({"Name": f"tag:{HOST_TAG}", "Values": [host]})
    pages = ec2.get_paginator("describe_instances").paginate(Filters=filters)
    orphans = []
    for page in pages:
        for reservation in page["Reservations"]:
            for instance in reservation["Instances"]:
                tags = {t["Key"]: t["Value"] for t in instance.get("Tags", [])}
                job = tags.get(JOB_TAG, "")
                if job in supervised:
                    continue
                orphans.append(
                    Orphan(
                        instance_id=instance["InstanceId"],
                        job_id=job,
                        why="no running job in the ledger has a live supervisor for it",
                    )
                )
    return orphans


def end_orphans(ec2: Any, orphans: list[Orphan]) -> None:
    """Terminate ``orphans`` (one call)."""
    if orphans:
        ec2.terminate_instances(InstanceIds=[o.instance_id for o in orphans])


def find_orphan_secrets(ssm: Any, supervised: set[str], host: str | None) -> list[str]:
    """SSM parameters under ``/spotwise/JOB/`` (tagged for ``host``; None: any) whose job is
    not in ``supervised``: a job's secrets outlive it only when its supervisor died."""
    filters = [{"Key": "Path", "Option": "Recursive", "Values": [SECRETS_PATH]}]
    if host is not None:
        filters.append({"Key": f"tag:{HOST_TAG}", "Values": [host]})
    pages = ssm.get_paginator("describe_parameters").paginate(ParameterFilters=filters)
    names = [p["Name"] for page in pages for p in page["Parameters"]]
    return [n for n in names if n.split("/")[2] not in supervised]


def delete_secrets(ssm: Any, names: list[str]) -> None:
    """Delete ``names`` from SSM, ten per call (the API's most)."""
    for start in range(0, len(names), 10):
        ssm.delete_parameters(Names=names[start : start + 10])

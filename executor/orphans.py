"""Cloud instances nobody supervises any more: every instance Spotwise starts is tagged
``spotwise:job=JOB``; one whose job is not running in the ledger, or whose supervisor on this
host is gone, is an orphan, and ``spotwise gc aws`` ends it."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spotwise.executor.cancel import supervisor_alive
from spotwise.pricing.store import MarketStore

JOB_TAG = "spotwise:job"
LIVE_STATES = ("pending", "running", "stopping", "stopped")


@dataclass(frozen=True, slots=True, kw_only=True)
class Orphan:
    """One instance to end, and why."""

    instance_id: str
    job_id: str
    why: str


def supervised_jobs(store_path: Path) -> set[str]:
    """Jobs the ledger has running with a supervisor that is alive (or on another host)."""
    if not store_path.exists():
        return set()
    with MarketStore.open(store_path, read_only=True) as store:
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


def find_orphans(ec2: Any, supervised: set[str]) -> list[Orphan]:
    """Tagged instances not yet terminated whose job is not in ``supervised``."""
    pages = ec2.get_paginator("describe_instances").paginate(
        Filters=[
            {"Name": "tag-key", "Values": [JOB_TAG]},
            {"Name": "instance-state-name", "Values": list(LIVE_STATES)},
        ]
    )
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

"""Cloud resources nobody supervises any more: the one rule ``spotwise gc CLOUD`` applies on
every cloud. Every instance and secret Spotwise makes carries the ledger's id of its job and
the machine whose ledger has the job (AWS tags, GCP labels, Azure tags). gc ends only what it
can prove orphaned: the ledger recorded its job, and that job has ended, or its supervisor (a
process of this host) is gone. A job the ledger has never seen (another store's) is reported,
never ended, unless the user names it (``--job``, refused against a store with no ledger: a
mistyped ``--store`` would hide a live supervisor); so is a job running under a live
supervisor, or under one on another host, which this host cannot check."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Literal


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """What the ledger says of one job: whether its resources may be ended, and why."""

    orphaned: bool
    why: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Judged:
    """One tagged resource (an instance id, or a secret's name) and what gc does with it."""

    kind: Literal["instance", "secret"] = "instance"
    resource: str
    job_id: str
    end: bool
    why: str


def ledger_verdicts(store_path: Path) -> dict[str, Verdict] | None:
    """Each job of the ledger at ``store_path`` judged: orphaned when it has ended, or when it
    is ``running`` and its supervisor, on this host, is gone; live otherwise (None: there is
    no ledger there)."""
    from spotwise.executor.ledger.liveness import supervisor_alive
    from spotwise.pricing.operational import open_operational, operational_exists

    if not operational_exists(store_path):
        return None
    with open_operational(store_path, read_only=True) as store:
        rows = store.records(
            "SELECT job_id, status, host, supervisor_pid, supervisor_started FROM jobs"
        )
    here = this_host()
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
        elif supervisor_alive(int(pid), row["supervisor_started"]):
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
    kind: Literal["instance", "secret"] = "instance",
) -> Judged:
    """Whether gc ends ``resource`` of ``job_id``: a job the ledger proves orphaned, or one the
    user ``named`` that the ledger does not show live."""
    verdict = (verdicts or {}).get(job_id)
    if verdict is not None:
        return Judged(
            kind=kind, resource=resource, job_id=job_id, end=verdict.orphaned, why=verdict.why
        )
    if job_id in named:
        return Judged(kind=kind, resource=resource, job_id=job_id, end=True, why="named with --job")
    where = f"the ledger at {store_path}" if verdicts is not None else f"{store_path} (no ledger)"
    return Judged(
        kind=kind,
        resource=resource,
        job_id=job_id,
        end=False,
        why=f"job {job_id or '?'} is not in {where}: left alone; if it is yours and no "
        f"supervisor runs it, add --job {job_id or 'ID'} (or pass the --store that ran it)",
    )


def this_host() -> str:
    """The name this machine gives its resources' host tag or label."""
    return socket.gethostname()

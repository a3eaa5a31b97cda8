"""``spotwise gc aws``'s side of the one orphan rule (:mod:`executor.clouds.orphans`): the
instances and SSM secrets tagged ``spotwise:job=JOB`` and ``spotwise:host=HOST``, judged by the
ledger, and ending those it proves orphaned."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spotwise.executor.clouds.orphans import Judged, Verdict, judge, this_host

JOB_TAG = "spotwise:job"
HOST_TAG = "spotwise:host"
SECRETS_PATH = "/spotwise/"
PROBE_PARAMETER = f"{SECRETS_PATH}check/probe"
"""The parameter `check aws` writes and deletes to test SSM: no job's secret."""
LIVE_STATES = ("pending", "running", "stopping", "stopped")


def job_tags(job_id: str) -> list[dict[str, str]]:
    """The tags of everything made for ``job_id`` on this host."""
    return [{"Key": JOB_TAG, "Value": job_id}, {"Key": HOST_TAG, "Value": this_host()}]


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
            judged.append(judge(name, job, verdicts, named, store_path, kind="secret"))
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

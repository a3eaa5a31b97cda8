"""``spotwise gc aws``'s side of the one orphan rule (:mod:`executor.clouds.orphans`): the
instances and SSM secrets tagged ``spotwise:job=JOB`` and ``spotwise:host=HOST``, judged by the
ledger, and ending those it proves orphaned."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from spotwise.executor.clouds.orphans import Judged, Verdict, judge, this_host
from spotwise.executor.errors import ExecutorError

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
) -> Iterator[Judged]:
    """Every tagged instance not yet terminated of ``host`` (None: any; a ``named`` job's of
    any host), judged by :func:`judge` as its page of the listing comes."""
    filters = [
        {"Name": "tag-key", "Values": [JOB_TAG]},
        {"Name": "instance-state-name", "Values": list(LIVE_STATES)},
    ]
    pages = ec2.get_paginator("describe_instances").paginate(Filters=filters)
    for page in pages:
        for reservation in page["Reservations"]:
            for instance in reservation["Instances"]:
                tags = {t["Key"]: t["Value"] for t in instance.get("Tags", [])}
                job = tags.get(JOB_TAG, "")
                if host is not None and tags.get(HOST_TAG) != host and job not in named:
                    continue
                yield judge(instance["InstanceId"], job, verdicts, named, store_path)


def judge_secrets(
    ssm: Any,
    verdicts: dict[str, Verdict] | None,
    host: str | None,
    *,
    named: frozenset[str] = frozenset(),
    store_path: Path,
) -> Iterator[Judged]:
    """SSM parameters under ``/spotwise/JOB/`` (tagged for ``host``; None: any; a ``named``
    job's of any host), judged by :func:`judge`: a job's secrets outlive it only when its
    supervisor died."""
    filters = [{"Key": "Path", "Option": "Recursive", "Values": [SECRETS_PATH]}]
    pages = ssm.get_paginator("describe_parameters").paginate(ParameterFilters=filters)
    names = [p["Name"] for page in pages for p in page["Parameters"]]
    mine = set(names) if host is None else _tagged_for(ssm, host)
    for name in names:
        if name == PROBE_PARAMETER:
            continue
        job = name.split("/")[2]
        if name in mine or job in named:
            yield judge(name, job, verdicts, named, store_path, kind="secret")


def _tagged_for(ssm: Any, host: str) -> set[str]:
    filters = [
        {"Key": "Path", "Option": "Recursive", "Values": [SECRETS_PATH]},
        {"Key": f"tag:{HOST_TAG}", "Values": [host]},
    ]
    pages = ssm.get_paginator("describe_parameters").paginate(ParameterFilters=filters)
    return {p["Name"] for page in pages for p in page["Parameters"]}


class AwsSweep:
    """``gc aws``'s pass over a region (:class:`~executor.clouds.base.Sweep`): the EC2 and SSM
    clients of credentials already found."""

    def __init__(self, ec2: Any, ssm: Any, region: str, endpoint_url: str | None) -> None:
        self._ec2, self._ssm, self._region = ec2, ssm, region
        at = f" at {endpoint_url}" if endpoint_url else ""
        self.looking = (
            f"AWS {region}{at}: EC2 instances tagged {JOB_TAG}, then SSM parameters under "
            f"{SECRETS_PATH}"
        )

    def judged(
        self,
        verdicts: dict[str, Verdict] | None,
        host: str | None,
        *,
        named: frozenset[str],
        store_path: Path,
    ) -> Iterator[Judged]:
        """The instances, then the secrets, each judged as its page comes.

        Raises:
            ExecutorError: when AWS refuses to list them.
        """
        with self._said():
            yield from judge_instances(
                self._ec2, verdicts, host, named=named, store_path=store_path
            )
            yield from judge_secrets(self._ssm, verdicts, host, named=named, store_path=store_path)

    def ended(self, judged: Iterable[Judged]) -> Iterator[Judged]:
        """Each of ``judged`` once its instance is terminated or its secret deleted (one call
        each), or at once when it is left.

        Raises:
            ExecutorError: when AWS refuses.
        """
        for item in judged:
            if item.end:
                with self._said():
                    if item.kind == "instance":
                        self._ec2.terminate_instances(InstanceIds=[item.resource])
                    else:
                        self._ssm.delete_parameters(Names=[item.resource])
            yield item

    @contextlib.contextmanager
    def _said(self) -> Iterator[None]:
        """AWS's errors inside it become one line naming the region."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            yield
        except (BotoCoreError, ClientError) as exc:
            raise ExecutorError(f"AWS {self._region}: {exc}") from exc

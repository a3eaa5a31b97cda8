"""``gc`` on a Kubernetes namespace, through the one orphan rule (:mod:`executor.clouds.orphans`):
the Jobs labelled ``spotwise.dev/job=JOB`` (of this host's ``spotwise.dev/host``, or of a job
named with ``--job``), each judged by the ledger as its page of the listing comes, then the
jobs' Secrets; a Job proven orphaned is deleted with its Pods (their grace kept: the guard
checkpoints on the way out), a Secret on its own. A Job already
being deleted is left out."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from spotwise.executor.clouds.kubernetes.clients import Gone, call
from spotwise.executor.clouds.kubernetes.manifests import HOST_LABEL, JOB_LABEL, label_value
from spotwise.executor.clouds.kubernetes.target import KubernetesTarget
from spotwise.executor.clouds.orphans import Judged, Verdict, judge

PAGE = 100
"""Jobs per page of the listing."""


class KubernetesSweep:
    """One ``gc`` pass over the target's namespace (:class:`~executor.clouds.base.Sweep`)."""

    def __init__(self, target: KubernetesTarget, api: Any) -> None:
        from kubernetes import client

        self.target = target
        self.batch: Any = client.BatchV1Api(api)
        self.core: Any = client.CoreV1Api(api)
        server = api.configuration.host
        self.looking = (
            f"namespace {target.namespace} of {target.context or 'the current context'} "
            f"({server}): Jobs labelled {JOB_LABEL}, then Secrets labelled so"
        )

    def judged(
        self,
        verdicts: dict[str, Verdict] | None,
        host: str | None,
        *,
        named: frozenset[str],
        store_path: Path,
    ) -> Iterator[Judged]:
        """Every labelled Job not being deleted, then every labelled Secret, of ``host`` (None:
        any; a ``named`` job's of any host), judged by :func:`judge` as its page comes."""
        cursor: str | None = None
        while True:
            page = self._page(cursor)
            for job in page.items:
                labels = job.metadata.labels or {}
                job_id = labels.get(JOB_LABEL, "")
                if job.metadata.deletion_timestamp:
                    continue
                mine = host is None or labels.get(HOST_LABEL) == label_value(host)
                if mine or job_id in named:
                    yield judge(str(job.metadata.name), job_id, verdicts, named, store_path)
            cursor = page.metadata._continue if page.metadata else None
            if not cursor:
                break
        secrets = call(
            f"Secrets in {self.target.namespace}",
            lambda: self.core.list_namespaced_secret(
                self.target.namespace, label_selector=JOB_LABEL, _request_timeout=15
            ),
        )
        for stored in secrets.items:
            labels = stored.metadata.labels or {}
            job_id = labels.get(JOB_LABEL, "")
            if host is None or labels.get(HOST_LABEL) == label_value(host) or job_id in named:
                name = str(stored.metadata.name)
                yield judge(name, job_id, verdicts, named, store_path, kind="secret")

    def _delete(self, name: str) -> None:
        """Delete the Job ``name`` (its Pods in the background, each with its grace) and its
        disruption budget; one gone meanwhile is deleted."""
        from kubernetes import client

        ns = self.target.namespace
        background = client.V1DeleteOptions(propagation_policy="Background")
        with contextlib.suppress(Gone):
            call(
                f"deleting Job {name}",
                lambda: self.batch.delete_namespaced_job(
                    name, ns, body=background, _request_timeout=15
                ),
            )

    def _delete_secret(self, name: str) -> None:
        ns = self.target.namespace
        with contextlib.suppress(Gone):
            call(
                f"deleting Secret {name}",
                lambda: self.core.delete_namespaced_secret(name, ns, _request_timeout=15),
            )

    def _page(self, cursor: str | None) -> Any:
        ns = self.target.namespace
        return call(
            f"Jobs in {ns}",
            lambda: self.batch.list_namespaced_job(
                ns, label_selector=JOB_LABEL, limit=PAGE, _continue=cursor, _request_timeout=15
            ),
        )

    def ended(self, judged: Iterable[Judged]) -> Iterator[Judged]:
        """Each of ``judged`` again, one to end once its Job (Pods with their grace) and its
        disruption budget are deleted."""
        for each in judged:
            if each.end and each.kind == "secret":
                self._delete_secret(each.resource)
            elif each.end:
                self._delete(each.resource)
            yield each

"""``spotwise gc huawei``'s side of the one orphan rule (:mod:`executor.clouds.orphans`): the ECS
servers tagged ``spotwise-job=JOB`` and ``spotwise-host=HOST`` and the CSMS secrets named
``spotwise-JOB-NAME`` (their description says their host), judged by the ledger, and ending those
it proves orphaned."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from spotwise.executor.clouds.huawei.clients import sdk_call
from spotwise.executor.clouds.huawei.launcher import (
    GONE,
    HOST_TAG,
    JOB_TAG,
    SECRET_PREFIX,
    list_servers,
)
from spotwise.executor.clouds.orphans import Judged, Verdict, judge

PAGE = 100


def _tags(tags: Iterable[str]) -> dict[str, str]:
    """A server's ``KEY=VALUE`` tags as ECS lists them."""
    return dict(tag.partition("=")[::2] for tag in tags)


def _secret_owner(secret: Any) -> tuple[str, str] | None:
    """(job, host) a Spotwise secret's description names; None for another secret."""
    words = _tags((secret.description or "").split())
    if not secret.name.startswith(SECRET_PREFIX) or JOB_TAG not in words:
        return None
    return words[JOB_TAG], words.get(HOST_TAG, "")


class HuaweiSweep:
    """``gc huawei``'s pass over a project (:class:`~executor.clouds.base.Sweep`): ECS and CSMS
    clients of credentials already found."""

    def __init__(self, ecs: Any, csms: Any, region: str, endpoint_url: str | None) -> None:
        self._ecs, self._csms = ecs, csms
        at = f" at {endpoint_url}" if endpoint_url else ""
        self.looking = (
            f"Huawei Cloud {region}{at}: ECS servers tagged {JOB_TAG}, then CSMS secrets named "
            f"{SECRET_PREFIX}JOB-NAME"
        )

    def judged(
        self,
        verdicts: dict[str, Verdict] | None,
        host: str | None,
        *,
        named: frozenset[str],
        store_path: Path,
    ) -> Iterator[Judged]:
        """The servers, then the secrets, each judged as its page comes.

        Raises:
            ExecutorError: when ECS or CSMS refuses to list them.
        """
        for server in list_servers(self._ecs, "gc huawei"):
            tags = _tags(server.tags or ())
            job = tags.get(JOB_TAG)
            if job is None or server.status in GONE:
                continue
            if host is not None and tags.get(HOST_TAG) != host and job not in named:
                continue
            yield judge(server.id, job, verdicts, named, store_path)
        for secret in self._secrets():
            owner = _secret_owner(secret)
            if owner is None:
                continue
            job, secret_host = owner
            if host is not None and secret_host != host and job not in named:
                continue
            yield judge(secret.name, job, verdicts, named, store_path, kind="secret")

    def _secrets(self) -> Iterator[Any]:
        from huaweicloudsdkcsms.v1 import ListSecretsRequest

        marker = None
        while True:
            page = sdk_call(
                "gc huawei: listing CSMS secrets",
                lambda marker=marker: self._csms.list_secrets(
                    ListSecretsRequest(limit=str(PAGE), marker=marker)
                ),
            )
            yield from page.secrets or ()
            marker = page.page_info.next_marker if page.page_info else None
            if not marker:
                return

    def ended(self, judged: Iterable[Judged]) -> Iterator[Judged]:
        """Each of ``judged`` once its server's deletion is asked or its secret deleted, or at
        once when it is left.

        Raises:
            ExecutorError: when ECS or CSMS refuses.
        """
        from huaweicloudsdkcsms.v1 import DeleteSecretRequest
        from huaweicloudsdkecs.v2 import DeleteServersRequest, DeleteServersRequestBody, ServerId

        for item in judged:
            if item.end and item.kind == "instance":
                body = DeleteServersRequestBody(servers=[ServerId(id=item.resource)])
                sdk_call(
                    f"gc huawei: deleting server {item.resource}",
                    lambda body=body: self._ecs.delete_servers(DeleteServersRequest(body=body)),
                )
            elif item.end:
                sdk_call(
                    f"gc huawei: deleting secret {item.resource}",
                    lambda item=item: self._csms.delete_secret(
                        DeleteSecretRequest(secret_name=item.resource)
                    ),
                )
            yield item

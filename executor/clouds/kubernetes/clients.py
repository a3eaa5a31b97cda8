"""The official ``kubernetes`` client, made from a kubeconfig and context as ``kubectl`` reads
them (``$KUBECONFIG``, else ``~/.kube/config``; the context given, else the current one), and
the rule that a request which times out or finds the apiserver unreachable is *unknown*, never a
verdict on the job."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from spotwise.executor.errors import ExecutorError

if TYPE_CHECKING:
    from spotwise.executor.clouds.kubernetes.target import KubernetesTarget

T = TypeVar("T")
REQUEST_TIMEOUT_S = 15.0
"""How long one request to the apiserver may take (connect and read)."""


class Unreachable(ExecutorError):
    """The apiserver did not answer in time (or answered 5xx/429): nothing is known."""


class Gone(ExecutorError):
    """The object asked for is not there (404)."""


def api_client(target: KubernetesTarget, who: str) -> Any:
    """An ``ApiClient`` for the target's kubeconfig context (its server replaced by the target's
    ``--endpoint-url`` when given: its credentials are then the ones loaded now, not
    refreshed).

    Raises:
        ExecutorError: when the client library is missing, or the kubeconfig has no such
            context, naming what to do.
    """
    try:
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException
    except ImportError:
        raise ExecutorError(
            f"{who} needs the kubernetes client: pip install 'spotwise[kubernetes]'"
        ) from None
    configuration = client.Configuration()
    # read now, not when the library was imported: KUBECONFIG may list several files (":")
    files = os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
    try:
        config.load_kube_config(
            config_file=files, context=target.context, client_configuration=configuration
        )
    except (ConfigException, OSError) as error:
        where = f"context {target.context!r}" if target.context else "its current context"
        raise ExecutorError(
            f"{who}: no kubeconfig with {where} ({str(error)[:160]}); set KUBECONFIG or "
            "~/.kube/config as kubectl reads it, and --project CONTEXT/NAMESPACE"
        ) from None
    if target.server:
        # the loader's refresh hook would set the kubeconfig's server again (and itself back):
        # another server is a local fake or a tunnel, its credentials those loaded now
        configuration.refresh_api_key_hook = None
        configuration.host = target.server
    return client.ApiClient(configuration)


def call(what: str, request: Callable[[], T]) -> T:
    """Run one request; a timeout, a refused connection, 429 or 5xx becomes :class:`Unreachable`
    (the caller decides that nothing changed), any other refusal an ExecutorError naming it.

    Raises:
        Unreachable: when the apiserver could not say.
        Gone: when the object is not there.
        ExecutorError: when it refused the request otherwise.
    """
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        return request()
    except ApiException as error:
        if error.status in (429, 500, 502, 503, 504):
            raise Unreachable(f"{what}: the apiserver answered {error.status}") from None
        if error.status == 404:
            raise Gone(f"{what}: not found") from None
        if error.status == 403:
            raise ExecutorError(
                f"{what}: forbidden by the cluster's RBAC; grant the Role of "
                "docs/kubernetes.md (KubernetesCheck says each verb)"
            ) from None
        reason = str(error.reason or "")[:200]
        raise ExecutorError(f"{what}: the apiserver refused ({error.status} {reason})") from None
    except (HTTPError, OSError) as error:
        raise Unreachable(f"{what}: no answer from the apiserver ({str(error)[:160]})") from None

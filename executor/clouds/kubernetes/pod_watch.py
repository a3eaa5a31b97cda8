"""Every change of an instance's Pods, seen as it happens: the apiserver's watch
(``?watch=1`` from a ``resourceVersion``, through the official client's ``watch.Watch``) on a
thread of its own, so that a Pod which is disrupted and deleted between two status reads (an
eviction, a reclaim through the taint manager) is still seen, once.

The watch starts from the ``resourceVersion`` of the Job's creation: no Pod of the Job can be
made before it, so none is missed. Each stream is asked to end after ``window_s`` and is
reopened from the last ``resourceVersion`` it delivered (what an informer does); a stream the
apiserver cannot resume (410 Gone: its history was compacted) is replaced by a list of the Pods
now and a watch from the list's ``resourceVersion``: a Pod deleted inside that gap is the one
thing not seen (:attr:`PodWatch.relisted` counts such gaps). A stream that fails otherwise
(a timeout, a refused socket, 5xx) is retried from where it was after ``retry_s``; it never
counts as anything happening to the job.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

WATCH_WINDOW_S = 5
"""How long one watch stream is asked to stay open (``timeoutSeconds``) before it is reopened
from the last ``resourceVersion``: also how long :meth:`PodWatch.close` may wait for it."""
RETRY_S = 1.0
"""The wait before a failed stream is reopened."""
GONE = 410


class PodWatch:
    """Watch the Pods of ``namespace`` matching ``selector`` through ``core`` (a
    ``CoreV1Api``) from ``resource_version`` on, on a daemon thread, until :meth:`close`:
    each Pod in each event (``ADDED``, ``MODIFIED``, ``DELETED``: the Pod as it was deleted)
    goes to ``saw``, on the watch's thread. ``timeout_s``: what one request may take beyond
    its window."""

    def __init__(
        self,
        core: Any,
        namespace: str,
        selector: str,
        resource_version: str | None,
        saw: Callable[[Any], None],
        *,
        timeout_s: float,
        window_s: int = WATCH_WINDOW_S,
        retry_s: float = RETRY_S,
    ) -> None:
        if window_s < 1:
            raise ValueError(f"a watch window is a whole number of seconds >= 1, not {window_s}")
        self.core, self.namespace, self.selector = core, namespace, selector
        self.resource_version = resource_version
        """The last resourceVersion delivered (None: the Pods are listed first)."""
        self.saw, self.timeout_s, self.window_s, self.retry_s = saw, timeout_s, window_s, retry_s
        self.streams = 0
        """How many watch streams were opened."""
        self.relisted = 0
        """How many times the watch could not be resumed (410) and the Pods were listed."""
        self.failures = 0
        """How many streams or lists failed (no answer, 5xx, 429): retried, never a verdict."""
        self._stopped = threading.Event()
        self._watch: Any = None
        self._thread = threading.Thread(target=self._run, name=f"watch {selector}", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop watching (the open stream ends at its next event or its window)."""
        self._stopped.set()
        if self._watch is not None:
            self._watch.stop()

    @property
    def alive(self) -> bool:
        """Whether its thread still runs."""
        return self._thread.is_alive()

    def _run(self) -> None:
        from kubernetes import watch
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        while not self._stopped.is_set():
            try:
                if self.resource_version is None:
                    self._list()
                self._watch = watch.Watch()
                self._stream(self._watch)
            except ApiException as error:
                if error.status == GONE:
                    self.resource_version = None  # listed again at once
                    self.relisted += 1
                    continue
                self._failed()
            except (HTTPError, OSError, ValueError):
                self._failed()

    def _failed(self) -> None:
        self.failures += 1
        self._stopped.wait(self.retry_s)

    def _list(self) -> None:
        found = self.core.list_namespaced_pod(
            self.namespace, label_selector=self.selector, _request_timeout=self.timeout_s
        )
        for pod in found.items:
            self.saw(pod)
        self.resource_version = found.metadata.resource_version

    def _stream(self, stream: Any) -> None:
        self.streams += 1
        events = stream.stream(
            self.core.list_namespaced_pod,
            self.namespace,
            label_selector=self.selector,
            resource_version=self.resource_version,
            timeout_seconds=self.window_s,
            _request_timeout=self.window_s + self.timeout_s,
        )
        with contextlib.closing(events):
            for event in events:
                pod = event["object"]
                self.saw(pod)
                self.resource_version = pod.metadata.resource_version or self.resource_version
                if self._stopped.is_set():
                    return

"""A whole cluster on this machine: the fake apiserver, the node player with its spot nodes,
and the kubeconfig that reaches them, in one folder (``kubeconfig``, ``logs/``, ``nodes/``,
``claims/CLAIM/``: the PersistentVolumeClaims' host folders).

``python -m spotwise.executor.clouds.kubernetes.fake.local_cluster FOLDER [PLATFORM]`` serves
one with two spot nodes of the platform (default ``gke``) until SIGTERM or Ctrl-C, and prints
the ``KUBECONFIG`` to use."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.executor.clouds.kubernetes.claim import checkpoint_claim
from spotwise.executor.clouds.kubernetes.fake.apiserver import FakeApiServer, MissingSchemas
from spotwise.executor.clouds.kubernetes.fake.cluster import Cluster
from spotwise.executor.clouds.kubernetes.fake.node_player import NodePlayer

CONTEXT = "spotwise-fake"
NAMESPACE = "train"


STATE_BYTES = 10**9
"""The checkpoint size a local cluster's claims are sized for when none is given (a 1 GB
state: 5 GiB with the guard's three kept, one in flight and the margin)."""


def persistent_claim(name: str, state_bytes: int = STATE_BYTES) -> dict[str, Any]:
    """A bound ReadWriteMany claim sized for checkpoints of ``state_bytes``
    (:func:`~executor.clouds.kubernetes.claim.checkpoint_claim`; its host folder stands in for
    the volume, whatever its size)."""
    claim = checkpoint_claim(name, state_bytes)
    capacity = claim["spec"]["resources"]["requests"]
    claim["status"] = {"phase": "Bound", "accessModes": ["ReadWriteMany"], "capacity": capacity}
    return claim


class LocalCluster:
    """The fake cluster in ``folder``, with ``claims`` (names of PersistentVolumeClaims, each a
    host folder, sized for checkpoints of ``state_bytes``) and ``env`` for every Pod's process,
    until :meth:`close`; over HTTPS with ``tls`` (a self-signed certificate the kubeconfig
    trusts), for ``kubectl``."""

    def __init__(
        self,
        folder: Path,
        *,
        claims: Sequence[str] = ("checkpoints",),
        env: Mapping[str, str] | None = None,
        denied: frozenset[tuple[str, str]] = frozenset(),
        tls: bool = False,
        clock: Clock = SYSTEM_CLOCK,
        state_bytes: int = STATE_BYTES,
    ) -> None:
        self.folder = folder
        self.cluster = Cluster(clock)
        self.server = FakeApiServer(
            self.cluster, logs=folder / "logs", denied=denied, tls=folder / "tls" if tls else None
        )
        self.claims = {claim: folder / "claims" / claim for claim in claims}
        for path in self.claims.values():
            path.mkdir(parents=True, exist_ok=True)
        self.player = NodePlayer(
            self.cluster,
            folder / "nodes",
            logs=folder / "logs",
            claims=self.claims,
            env=env,
            clock=clock,
        )
        self.kubeconfig = self.server.kubeconfig(
            folder / "kubeconfig", context=CONTEXT, namespace=NAMESPACE
        )
        self.cluster.create(
            "namespaces",
            "",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        )
        for claim in claims:
            made = persistent_claim(claim, state_bytes)
            self.cluster.create("persistentvolumeclaims", NAMESPACE, made)

    def close(self) -> None:
        """Stop the nodes' processes, then the apiserver."""
        self.player.close()
        self.server.close()


CCE_POOL = "spot-pool"
"""The CCE node pool the played spot nodes are in (CCE selects spot nodes by their pool)."""


def spot_node(platform: str) -> tuple[dict[str, str], list[dict[str, str]]]:
    """The labels and taints of a spot node of ``platform``.

    Raises:
        ValueError: for a platform with no played spot node.
    """
    from spotwise.executor.clouds.kubernetes.platforms import PLATFORMS

    rules = PLATFORMS.get(platform)
    if rules is None:
        raise ValueError(f"no platform {platform[:40]!r}; use {', '.join(PLATFORMS)}")
    labels = dict(rules.spot_selector)
    if platform == "cce":
        labels[rules.pool_label] = CCE_POOL
    taints = [
        {"key": t["key"], "value": t.get("value", ""), "effect": t["effect"]}
        for t in rules.spot_tolerations
    ]
    return labels, taints


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a local cluster until SIGTERM or Ctrl-C."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not 1 <= len(args) <= 2:
        print(
            "usage: python -m spotwise.executor.clouds.kubernetes.fake.local_cluster "
            "FOLDER [PLATFORM]",
            file=sys.stderr,
        )
        return 2
    platform = args[1] if len(args) == 2 else "gke"
    try:
        labels, taints = spot_node(platform)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    stop = threading.Event()  # caught before the first line says it serves
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        local = LocalCluster(Path(args[0]), tls=True)  # kubectl sends its token over HTTPS only
    except MissingSchemas as error:
        print(error, file=sys.stderr)
        return 2
    for name in ("spot-1", "spot-2"):
        local.player.add_node(name, labels=labels, taints=taints, gpus=1)
    print(f"export KUBECONFIG={local.kubeconfig}", flush=True)
    print(
        f"# context {CONTEXT}, namespace {NAMESPACE}, claim checkpoints at "
        f"{local.claims['checkpoints']}; two {platform} spot nodes (spot-1, spot-2)",
        flush=True,
    )
    stop.wait()
    local.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

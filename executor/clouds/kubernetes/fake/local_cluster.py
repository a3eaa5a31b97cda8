"""A whole cluster on this machine: the fake apiserver, the node player with its spot nodes,
and the kubeconfig that reaches them, in one folder (``kubeconfig``, ``logs/``, ``nodes/``,
``claims/CLAIM/``: the PersistentVolumeClaims' host folders)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.executor.clouds.kubernetes.fake.apiserver import FakeApiServer
from spotwise.executor.clouds.kubernetes.fake.cluster import Cluster
from spotwise.executor.clouds.kubernetes.fake.node_player import NodePlayer

CONTEXT = "spotwise-fake"
NAMESPACE = "train"


def persistent_claim(name: str) -> dict[str, Any]:
    """A bound ReadWriteMany claim of 100 GiB (its host folder stands in for the volume)."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "100Gi"}}},
        "status": {"phase": "Bound", "accessModes": ["ReadWriteMany"]},
    }


class LocalCluster:
    """The fake cluster in ``folder``, with ``claims`` (names of PersistentVolumeClaims, each a
    host folder) and ``env`` for every Pod's process, until :meth:`close`."""

    def __init__(
        self,
        folder: Path,
        *,
        claims: Sequence[str] = ("checkpoints",),
        env: Mapping[str, str] | None = None,
        denied: frozenset[tuple[str, str]] = frozenset(),
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.folder = folder
        self.cluster = Cluster(clock)
        self.server = FakeApiServer(self.cluster, logs=folder / "logs", denied=denied)
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
            self.cluster.create("persistentvolumeclaims", NAMESPACE, persistent_claim(claim))

    def close(self) -> None:
        """Stop the nodes' processes, then the apiserver."""
        self.player.close()
        self.server.close()

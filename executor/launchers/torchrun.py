"""The torchrun launcher: the command runs under ``torchrun`` elastic (``--nnodes MIN:MAX``,
c10d rendezvous), so a lost node shrinks the job instead of stopping it; workers resume from
the job's torch.distributed.checkpoint folder. Each node runs the same launcher command."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class Elastic:
    """torchrun's elastic settings."""

    min_nodes: int = 1
    max_nodes: int = 2
    nproc_per_node: int = 1
    rdzv_endpoint: str = "127.0.0.1:29400"
    rdzv_id: str = "spotwise"
    max_restarts: int = 3
    last_call_timeout_s: int = 2
    is_host: bool | None = None
    """Whether this node hosts the rendezvous store (None: the first to bind the port does)."""

    def __post_init__(self) -> None:
        if not 1 <= self.min_nodes <= self.max_nodes:
            raise ValueError(f"nodes {self.min_nodes}:{self.max_nodes}: need 1 <= MIN <= MAX")


def torchrun_command(
    command: Sequence[str], elastic: Elastic, python: str = sys.executable
) -> list[str]:
    """``command`` (``python -m module ...``, ``python script.py ...`` or ``script.py ...``)
    wrapped in ``torchrun`` with elastic c10d rendezvous, started by ``python`` (the
    instance's)."""
    args = list(command)
    if args and ("python" in args[0].rsplit("/", 1)[-1]):
        args = args[1:]
    return [
        python,
        "-m",
        "torch.distributed.run",
        f"--nnodes={elastic.min_nodes}:{elastic.max_nodes}",
        f"--nproc-per-node={elastic.nproc_per_node}",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint={elastic.rdzv_endpoint}",
        f"--rdzv-id={elastic.rdzv_id}",
        f"--rdzv-conf=last_call_timeout={elastic.last_call_timeout_s}"
        + ("" if elastic.is_host is None else f",is_host={str(elastic.is_host).lower()}"),
        f"--max-restarts={elastic.max_restarts}",
        *args,
    ]

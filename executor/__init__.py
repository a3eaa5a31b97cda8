"""Run torch training so that a preemption costs seconds (see :func:`executor.guard`).

``executor.guard`` is imported on first use, so that reaching :mod:`spotwise.executor.errors` or the
ledger (as the CLI does) does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spotwise.executor.errors import PREEMPTED_EXIT_CODE

if TYPE_CHECKING:
    from spotwise.executor.training.guard import Guard, guard

__all__ = ["PREEMPTED_EXIT_CODE", "Guard", "guard"]


def __getattr__(name: str) -> Any:
    if name in ("guard", "Guard"):
        from spotwise.executor.training import guard as training_guard

        return getattr(training_guard, name)
    raise AttributeError(f"module 'executor' has no attribute {name!r}")

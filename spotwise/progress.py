"""How long work reports progress: a callable that takes one line of text."""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str], None]


def silent(_: str) -> None:
    """Report nothing."""

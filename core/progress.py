"""How long work reports progress: a callable that takes one line of text, and, for work made
of countable steps, a counter a progress bar can follow (count and ETA)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

Progress = Callable[[str], None]


def silent(_: str) -> None:
    """Report nothing."""


class Steps(Protocol):
    """Countable work: ``expect`` says how many steps are coming, ``advance`` that some are
    done."""

    def expect(self, n: int) -> None:
        """Say that ``n`` more steps are coming."""

    def advance(self, n: int = 1) -> None:
        """Say that ``n`` steps are done."""


class Uncounted:
    """Steps nobody follows."""

    def expect(self, n: int) -> None:
        """Ignore it."""

    def advance(self, n: int = 1) -> None:
        """Ignore it."""


UNCOUNTED = Uncounted()

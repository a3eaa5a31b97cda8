"""Errors of the pricing package: each says what was wrong, where, and what to do."""

from __future__ import annotations

from pathlib import Path


def first_line(exc: BaseException) -> str:
    """The first line of what a driver or library said (its repr when it said nothing)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else repr(exc)


class PricingError(Exception):
    """Base class of every error the pricing package raises on purpose."""


class InputError(PricingError):
    """A file or API response that does not match its format; nothing was stored."""

    def __init__(self, source: str | Path, where: str, problem: str, hint: str) -> None:
        self.source = str(source)
        self.where = where
        self.problem = problem
        self.hint = hint
        location = f"{self.source}: {where}" if where else self.source
        super().__init__(f"{location}: {problem}. {hint}")


class StoreError(PricingError):
    """The store cannot be opened, migrated or written.

    ``permanent`` errors (no permission, not a store, a newer schema) do not heal by waiting;
    others (another process holding the lock) may.
    """

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


class StoreBehind(StoreError):
    """Read-only, the store's tables are older than this code: a writable open migrates them."""


class SourceUnavailable(PricingError):
    """A remote source could not be reached or refused the request."""


class FlagError(PricingError):
    """A command's flag whose value cannot be used: the message names the flag and what to give
    instead (``--since 'x' is not a time: give ISO 8601 like ...``)."""

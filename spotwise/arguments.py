"""Small parsers of flag values shared by the commands."""

from __future__ import annotations


def comma_list(text: str | None) -> list[str]:
    """The non-empty items of a comma-separated flag, stripped, in order (None: none)."""
    return [item.strip() for item in (text or "").split(",") if item.strip()]

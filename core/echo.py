"""Input echoed back in a message, cut short: a refusal names what it refused without
repeating a pasted file or a runaway flag whole."""

from __future__ import annotations

ECHO_CHARS = 60
"""How much of a refused value a message shows."""


def echo(value: object, limit: int = ECHO_CHARS, *, quote: bool = True) -> str:
    """``value`` as a message shows it (text quoted, unless ``quote`` is False; anything else
    as its ``repr``), cut to ``limit`` characters with its length when it is longer
    (``'aaaa'… (100,000 characters)``)."""
    text = value if isinstance(value, str) else repr(value)
    shown = text[:limit]
    if quote and isinstance(value, str):
        shown = repr(shown)
    return shown if len(text) <= limit else f"{shown}… ({len(text):,} characters)"

"""Input echoed back in a message is cut short, with its length."""

from __future__ import annotations

from spotwise.core.echo import echo


def test_short_text_is_quoted_whole() -> None:
    assert echo("us-east1") == "'us-east1'"
    assert echo("us-east1", quote=False) == "us-east1"


def test_long_text_is_cut_with_its_length() -> None:
    assert echo("a" * 100_000) == f"{'a' * 60!r}… (100,000 characters)"
    assert echo("ab" * 10, 4, quote=False) == "abab… (20 characters)"


def test_anything_else_is_shown_as_its_repr_cut_the_same_way() -> None:
    assert echo(None) == "None"
    assert echo(2e5) == "200000.0"
    assert echo(list(range(1000)), 10) == "[0, 1, 2, … (4,890 characters)"

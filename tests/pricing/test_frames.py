"""The present as pricing reads it (:func:`spotwise.pricing.frames.utc_now`)."""

from __future__ import annotations

import warnings

import pandas as pd

from spotwise.pricing.frames import utc_now


class _At:
    """A clock stopped at ``seconds`` since the epoch."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def monotonic(self) -> float:
        return self.seconds

    def time(self) -> float:
        return self.seconds

    def sleep(self, seconds: float) -> None:
        self.seconds += seconds


def test_now_is_utc_to_the_microsecond_and_converts_without_a_warning() -> None:
    now = utc_now(_At(1764547200.1234567))
    assert now.tz is not None and str(now.tz) == "UTC"
    assert now == pd.Timestamp("2025-12-01T00:00:00.123456", tz="UTC")
    assert now.nanosecond == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Discarding nonzero nanoseconds" was printed to users
        assert now.to_pydatetime().microsecond == 123456

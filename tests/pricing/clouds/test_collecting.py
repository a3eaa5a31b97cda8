"""What every cloud's collect run shares: its flags' values read the same way, each refused in
one line that names the flag and what to give."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pytest

from spotwise.pricing.clouds.collecting import cloud_shapes, collected, names, since
from spotwise.pricing.errors import FlagError


def test_names_are_split_on_commas_and_a_bad_one_is_refused_by_its_flag() -> None:
    assert names(" us-central1, ,europe-west4 ", "--regions") == ["us-central1", "europe-west4"]
    assert names("", "--regions") == []
    with pytest.raises(FlagError) as refused:
        names("eastus,east us", "--regions")
    assert str(refused.value) == (
        "--regions: 'east us' is not a name (letters, digits, '.', '_', '+' and '-')"
    )


def test_since_is_utc_and_a_time_without_a_zone_is_taken_as_utc() -> None:
    assert since(None) is None
    assert since("2026-01-01") == pd.Timestamp("2026-01-01T00:00:00Z")
    assert since("2026-01-01T02:00:00+02:00") == pd.Timestamp("2026-01-01T00:00:00Z")
    with pytest.raises(FlagError, match=r"^--since 'soon' is not a time: give ISO 8601 like "):
        since("soon")


def test_shapes_are_the_gpu_tables_and_an_unknown_shape_or_gpu_is_refused() -> None:
    every = cloud_shapes("gcp", "", None, "--shapes")
    assert every and {s.cloud for s in every} == {"gcp"}
    a100 = cloud_shapes("gcp", "", "a100", "--shapes")
    assert a100 and all(s.gpu == "A100" for s in a100)
    assert [s.shape for s in cloud_shapes("gcp", "A2-HIGHGPU-1G", None, "--shapes")] == [
        "a2-highgpu-1g"
    ]
    with pytest.raises(
        FlagError, match=r"^--shapes: n1-x not in the GPU table for gcp with A100; "
    ):
        cloud_shapes("gcp", "n1-x", "A100", "--shapes")
    with pytest.raises(FlagError, match=r"^--vm-sizes: 'x;rm -rf /' is not a name"):
        cloud_shapes("azure", "x;rm -rf /", None, "--vm-sizes")
    with pytest.raises(FlagError, match=r"^--gpu 'Z9': no azure shape carries it; GPUs: A100, "):
        cloud_shapes("azure", "", "Z9", "--vm-sizes")


def test_the_collected_line_counts_prices_shapes_and_regions() -> None:
    frame = pd.DataFrame(
        {
            "instance_type": ["a", "a", "b"],
            "region": ["r1", "r2", "r1"],
            "ts": pd.to_datetime(
                ["2026-01-01 00:00", "2026-01-02 03:04", "2026-01-01 00:00"], utc=True
            ),
        }
    )
    line = collected("gcp", frame, 2, "3 pages (1 month)")
    assert (line.lead, line.text) == (
        "collected gcp",
        " from 3 pages (1 month): 3 prices (2 new) of 2 shapes in 2 regions, "
        "as of 2026-01-01 .. 2026-01-02 03:04Z",
    )
    assert collected("gcp", None, 0, "1 page").text == " from 1 page: no prices"


@pytest.mark.parametrize(
    ("call", "flag"),
    [
        (lambda text: names(text, "--regions"), "--regions"),
        (lambda text: since(text), "--since"),
        (lambda text: cloud_shapes("gcp", "", text, "--shapes"), "--gpu"),
    ],
)
def test_a_runaway_flag_value_is_echoed_cut_short_with_its_length(
    call: Callable[[str], object], flag: str
) -> None:
    with pytest.raises(FlagError) as refused:
        call("x" * 100_000)
    message = str(refused.value)
    assert message.startswith(flag) and "(100,000 characters)" in message
    assert len(message) < 400

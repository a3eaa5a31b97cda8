"""Every loader under damaged input: random truncation, byte flips, other encodings, extreme
numbers. A load either stores the file or refuses it with one clear line (an InputError), and a
refused load leaves the store exactly as it was; nothing else may escape."""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spotwise.pricing.errors import InputError
from spotwise.pricing.ingest import load_paths
from spotwise.pricing.store import MarketStore
from tests.conftest import DATA


def _head(relative: str, lines: int = 40) -> bytes:
    text = (DATA / relative).read_text(encoding="utf-8")
    return "".join(text.splitlines(keepends=True)[:lines]).encode()


def _short_trace(relative: str, ticks: int = 200) -> bytes:
    doc = json.loads((DATA / relative).read_text())
    doc["data"] = doc["data"][:ticks]
    return json.dumps(doc).encode()


SAMPLES: dict[str, bytes] = {
    "prices/aws_spot_price_history_2019-12_2020-01.csv": _head(
        "prices/aws_spot_price_history_2019-12_2020-01.csv"
    ),
    "prices/gcp_spot_ondemand_changepoints.csv": _head("prices/gcp_spot_ondemand_changepoints.csv"),
    "traces/cbl/availability/1-node/aws-02-15-2023/us-east-1a_v100_1.json": _short_trace(
        "traces/cbl/availability/1-node/aws-02-15-2023/us-east-1a_v100_1.json"
    ),
    "traces/bamboo/p3-trace.csv": _head("traces/bamboo/p3-trace.csv"),
    "traces/parcae/p3-available-nodes.csv": _head("traces/parcae/p3-available-nodes.csv"),
    "traces/bamboo/gcloud/v100x1-east1c.txt": _head("traces/bamboo/gcloud/v100x1-east1c.txt"),
    "advisor/spot-advisor-data_2021-02-10.json": (
        DATA / "advisor/spot-advisor-data_2021-02-10.json"
    ).read_bytes(),
}
EXTREMES = ["1e308", "-1e308", "nan", "inf", "-inf", "1e-320", "99999999999999999999999", "-0"]
NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


@st.composite
def damaged(draw: st.DrawFn) -> tuple[str, bytes, str]:
    """(relative path, damaged bytes, what was done)."""
    name = draw(st.sampled_from(sorted(SAMPLES)))
    data = SAMPLES[name]
    kind = draw(st.sampled_from(["truncate", "flip", "encoding", "extreme"]))
    if kind == "truncate":
        cut = draw(st.integers(0, len(data) - 1))
        return name, data[:cut], f"truncated at byte {cut}"
    if kind == "flip":
        at = draw(st.integers(0, len(data) - 1))
        mask = draw(st.integers(1, 255))
        return name, data[:at] + bytes([data[at] ^ mask]) + data[at + 1 :], f"byte {at} ^ {mask}"
    if kind == "encoding":
        codec = draw(st.sampled_from(["utf-16", "utf-8-sig", "latin-1", "cp1252", "utf-32"]))
        return name, data.decode("utf-8").encode(codec, "replace"), f"re-encoded {codec}"
    numbers = list(NUMBER.finditer(data))
    match = numbers[draw(st.integers(0, len(numbers) - 1))]
    value = draw(st.sampled_from(EXTREMES)).encode()
    changed = data[: match.start()] + value + data[match.end() :]
    return name, changed, f"number at byte {match.start()} -> {value.decode()}"


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@pytest.mark.slow
@given(case=damaged())
def test_damaged_files_are_stored_or_refused_in_one_line_and_the_store_is_untouched(
    store: MarketStore, case: tuple[str, bytes, str]
) -> None:
    name, data, what = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data" / name  # folder names carry meaning (dates, zones)
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
        before = store.summary()
        try:
            load_paths(store, [path])
        except InputError as exc:
            message = str(exc)
            assert "\n" not in message and str(path) in message, (what, message)
            assert store.summary() == before, what


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MarketStore]:
    """One store for every example (what earlier examples stored stays: each compares the
    store before and after its own load)."""
    with MarketStore.open(tmp_path_factory.mktemp("damaged") / "market.duckdb") as market:
        load_paths(market, [DATA / "prices/gcp_snapshots.csv"])
        yield market

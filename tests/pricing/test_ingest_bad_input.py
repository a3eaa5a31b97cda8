"""Bad input: one clear message (file, line or field, what to do), non-zero exit, store unchanged.

Each test first loads good data, then a broken file, and compares the summary before and after.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import DATA, CliRun, summary_json

AWS_CSV = DATA / "prices/aws_spot_price_history_2019-12_2020-01.csv"
GCP_CSV = DATA / "prices/gcp_spot_ondemand_changepoints.csv"
CBL_TRACE = DATA / "traces/cbl/availability/1-node/aws-02-15-2023/us-east-1a_v100_1.json"


@pytest.fixture
def cli(cli_in_process: CliRun) -> CliRun:
    """These are message tests: the CLI runs in process."""
    return cli_in_process


@pytest.fixture
def loaded(cli: CliRun) -> dict:
    result = cli("data", "load", str(DATA / "prices"), str(DATA / "advisor"))
    assert result.returncode == 0, result.stderr
    return summary_json(cli)


def edit_line(source: Path, target: Path, line: int, edit) -> Path:
    lines = source.read_text().splitlines(keepends=True)
    lines[line - 1] = edit(lines[line - 1])
    target.write_text("".join(lines))
    return target


def set_field(column: int, value: str):
    def edit(text: str) -> str:
        fields = text.rstrip("\n").split(",")
        fields[column] = value
        return ",".join(fields) + "\n"

    return edit


def assert_rejected(
    cli: CliRun, before: dict, path: Path, *needles: str, extra: tuple[str, ...] = ()
) -> str:
    result = cli("data", "load", str(path), *extra)
    assert result.returncode != 0
    message = result.stderr.strip()
    assert message.startswith("error:") and message.count("\n") == 0, message
    for needle in (str(path), *needles):
        assert needle in message, message
    assert summary_json(cli) == before
    return message


def test_negative_price_on_line_500_names_line_500_and_stores_nothing(
    cli: CliRun, loaded: dict, tmp_path: Path
) -> None:
    bad = edit_line(AWS_CSV, tmp_path / "aws.csv", 500, set_field(4, "-0.918"))
    message = assert_rejected(cli, loaded, bad, "line 500", "'spot_price'", "positive")
    assert "nothing was stored" in message


def test_non_numeric_price_is_rejected(cli: CliRun, loaded: dict, tmp_path: Path) -> None:
    bad = edit_line(AWS_CSV, tmp_path / "aws.csv", 42, set_field(4, "cheap"))
    assert_rejected(cli, loaded, bad, "line 42", "'spot_price'", "not a number")


def test_unparsable_timestamp_is_rejected(cli: CliRun, loaded: dict, tmp_path: Path) -> None:
    bad = edit_line(AWS_CSV, tmp_path / "aws.csv", 7, set_field(0, "2019-13-45T99:00:00Z"))
    assert_rejected(cli, loaded, bad, "line 7", "'timestamp'", "unparsable")


def test_non_utc_timestamp_is_rejected(cli: CliRun, loaded: dict, tmp_path: Path) -> None:
    bad = edit_line(AWS_CSV, tmp_path / "aws.csv", 9, set_field(0, "2019-12-23T08:57:21+02:00"))
    assert_rejected(cli, loaded, bad, "line 9", "non-UTC")


def test_timestamp_without_zone_is_rejected(cli: CliRun, loaded: dict, tmp_path: Path) -> None:
    bad = edit_line(GCP_CSV, tmp_path / "gcp.csv", 3, set_field(0, "2023-05-08T06:42:47"))
    assert_rejected(cli, loaded, bad, "line 3", "no zone")


def test_renamed_column_is_rejected(cli: CliRun, loaded: dict, tmp_path: Path) -> None:
    bad = edit_line(AWS_CSV, tmp_path / "aws.csv", 1, lambda h: h.replace("spot_price", "price"))
    assert_rejected(
        cli,
        loaded,
        bad,
        "line 1",
        "missing column",
        "spot_price",
        extra=("--format", "aws-price-history"),
    )


def test_missing_column_makes_the_format_unknown(cli: CliRun, loaded: dict, tmp_path: Path) -> None:
    lines = AWS_CSV.read_text().splitlines()
    bad = tmp_path / "aws.csv"
    bad.write_text("\n".join(",".join(x.split(",")[1:]) for x in lines) + "\n")
    assert_rejected(cli, loaded, bad, "unknown format", "--format")


def test_truncated_csv_names_the_last_line(cli: CliRun, loaded: dict, tmp_path: Path) -> None:
    text = AWS_CSV.read_text()
    bad = tmp_path / "aws.csv"
    bad.write_text(text[: text.index("\n", 20000) + 30])
    last_line = bad.read_text().count("\n") + 1
    assert_rejected(cli, loaded, bad, f"line {last_line}", "truncated")


def test_truncated_json_trace_is_rejected(cli: CliRun, loaded: dict, tmp_path: Path) -> None:
    folder = tmp_path / "aws-02-15-2023"
    folder.mkdir()
    bad = folder / CBL_TRACE.name
    bad.write_text(CBL_TRACE.read_text()[:5000])
    assert_rejected(cli, loaded, bad, "line 1, column", "truncated JSON", extra=("--format", "cbl"))


def test_garbage_in_a_trace_names_the_tick(cli: CliRun, loaded: dict, tmp_path: Path) -> None:
    folder = tmp_path / "aws-02-15-2023"
    folder.mkdir()
    doc = json.loads(CBL_TRACE.read_text())
    doc["data"][1234] = "x"
    bad = folder / CBL_TRACE.name
    bad.write_text(json.dumps(doc))
    assert_rejected(cli, loaded, bad, "data[1234]")


def test_unknown_format_is_rejected(cli: CliRun, loaded: dict, tmp_path: Path) -> None:
    bad = tmp_path / "notes.csv"
    bad.write_text("a,b,c\n1,2,3\n")
    assert_rejected(cli, loaded, bad, "unknown format", "--format")


def test_unknown_format_name_is_rejected(cli: CliRun, loaded: dict) -> None:
    result = cli("data", "load", str(AWS_CSV), "--format", "excel")
    assert result.returncode != 0 and "unknown format" in result.stderr
    assert "aws-price-history" in result.stderr
    assert summary_json(cli) == loaded


def test_one_bad_file_in_a_folder_stores_none_of_the_good_ones(
    cli: CliRun, loaded: dict, tmp_path: Path
) -> None:
    folder = tmp_path / "mixed"
    shutil.copytree(DATA / "traces" / "bamboo", folder)
    edit_line(
        DATA / "traces/bamboo/g4dn-trace.csv",
        folder / "g4dn-trace.csv",
        10,
        set_field(1, "explode"),
    )
    assert_rejected(cli, loaded, folder / "g4dn-trace.csv", "line 10", "add or remove")
    before_events = loaded["tables"]["events"]
    assert summary_json(cli)["tables"]["events"] == before_events == 0


def test_missing_path_is_rejected(cli: CliRun, loaded: dict, tmp_path: Path) -> None:
    assert_rejected(cli, loaded, tmp_path / "nope.csv", "no such file")


@pytest.mark.parametrize(
    ("stamp", "words"),
    [
        ("2099-01-01T00:00:00Z", "in the future"),
        ("2300-01-01T00:00:00Z", "outside the years 1678..2261"),
    ],
)
def test_times_that_cannot_be_real_are_refused_with_their_reason(
    cli: CliRun, loaded: dict, tmp_path: Path, stamp: str, words: str
) -> None:
    bad = edit_line(AWS_CSV, tmp_path / "aws.csv", 300, set_field(0, stamp))
    assert_rejected(cli, loaded, bad, "line 300", words)


def test_a_line_with_a_field_more_than_the_header_names_that_line(
    cli: CliRun, loaded: dict, tmp_path: Path
) -> None:
    bad = edit_line(AWS_CSV, tmp_path / "aws.csv", 2, lambda text: text.rstrip("\n") + ",x\n")
    assert_rejected(cli, loaded, bad, "line 2", "Expected 5 fields")


def test_a_count_file_time_no_timestamp_holds_is_refused(
    cli: CliRun, loaded: dict, tmp_path: Path
) -> None:
    source = DATA / "traces/bamboo/gcloud/a100x1-east1b.txt"
    bad = edit_line(source, tmp_path / source.name, 3, lambda text: "3" + text[1:])  # year 3xxx
    assert_rejected(cli, loaded, bad, "line 3", "'time'", "not a date and time")


def test_an_implausible_price_is_refused(cli: CliRun, loaded: dict, tmp_path: Path) -> None:
    bad = edit_line(AWS_CSV, tmp_path / "aws.csv", 42, set_field(4, "1e308"))
    assert_rejected(cli, loaded, bad, "line 42", "not plausible")


def test_json_nested_too_deeply_is_one_clear_line(
    cli: CliRun, loaded: dict, tmp_path: Path
) -> None:
    bad = tmp_path / "aws-02-15-2023" / "us-east-1a_v100_1.json"
    bad.parent.mkdir()
    bad.write_text("[" * 200_000)
    message = assert_rejected(cli, loaded, bad, "nested too deeply", extra=("--format", "cbl"))
    assert "Traceback" not in message


def test_a_csv_with_a_byte_order_mark_is_recognised(cli: CliRun, tmp_path: Path) -> None:
    marked = tmp_path / "aws.csv"
    marked.write_bytes(b"\xef\xbb\xbf" + AWS_CSV.read_bytes())
    result = cli("data", "load", str(marked))
    assert result.returncode == 0, result.stderr
    plain = tmp_path / "plain"
    plain.mkdir()
    shutil.copy(AWS_CSV, plain / "aws.csv")
    before = summary_json(cli)
    assert cli("data", "load", str(plain)).returncode == 0
    assert summary_json(cli)["tables"] == before["tables"]  # the same rows: nothing new


def test_a_folder_that_cannot_be_read_fails_the_whole_load(tmp_path: Path) -> None:
    """As a user who may not read one sub-folder (root reads everything, so a forked child
    drops to ``nobody``): the load refuses, where it used to load the rest and exit 0."""
    import multiprocessing
    import os
    import tempfile

    from spotwise.pricing.errors import InputError
    from spotwise.pricing.ingest import discover

    top = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        top.chmod(0o755)
        shutil.copy(AWS_CSV, top / "aws.csv")
        (top / "aws.csv").chmod(0o644)
        locked = top / "locked"
        locked.mkdir()
        shutil.copy(GCP_CSV, locked / "gcp.csv")
        locked.chmod(0o000)

        def walk(results: multiprocessing.Queue) -> None:
            if os.getuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            try:
                discover([top])
                results.put("loaded")
            except InputError as exc:
                results.put(str(exc))

        results: multiprocessing.Queue = multiprocessing.get_context("fork").Queue()
        child = multiprocessing.get_context("fork").Process(target=walk, args=(results,))
        child.start()
        child.join(30)
        message = results.get(timeout=5)
        assert "cannot read this folder" in message and str(locked) in message
    finally:
        locked.chmod(0o755)
        shutil.rmtree(top)

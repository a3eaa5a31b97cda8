"""The hostile probes of the commands (issue 53): numbers past any job, a fleet file's runaway
hours, a mistyped store beside a named job, ids and zones that could name something else, a
runaway flag, a broken key file, and cloud APIs answering what they never document. Each probe
ends in one line saying what, where and what to do: a non-zero exit, no traceback, no input
echoed whole, and nothing done that the line says was not."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from spotwise.executor.local_clouds.http import Answer
from tests.conftest import DATA, CliRun
from tests.fakes.azure_prices import RetailPricesFake
from tests.fakes.gcp_billing import CloudBillingFake

RUNAWAY = "us" + "x" * 100_000
GCP_RUN = [
    *("run", "--launcher", "gcp", "--project", "proj-123456", "--image", "img"),
    *("--bucket", "b-1", "--service-account", "acct-1234"),
]


@dataclass(frozen=True, slots=True)
class Probe:
    """A command with hostile input and the words its one line must hold."""

    args: tuple[str, ...]
    said: str
    env: dict[str, str] | None = None


def _fleet(tmp: Path, hours: str) -> str:
    path = tmp / "fleet.yaml"
    path.write_text(
        f"name: f\nbudget_usd_per_hour: 5\njobs:\n  - name: a\n    compute_hours: 1\n"
        f"    deadline_hours: {hours}\n    command: [python, -c, pass]\n"
    )
    return str(path)


def _key(tmp: Path, content: str | None) -> dict[str, str]:
    key = tmp / "key.json"
    if content is not None:
        key.write_text(content)
    return {
        "GOOGLE_APPLICATION_CREDENTIALS": str(key),
        "CLOUDSDK_CONFIG": str(tmp / "gcloud"),
        "NO_GCE_CHECK": "True",
        "HOME": str(tmp),
    }


PROBES: dict[str, Callable[[Path], Probe]] = {
    "plan hours of 1e308": lambda _: Probe(
        (
            "plan",
            "--instance-type",
            "p3.2xlarge",
            "--gpu-hours",
            "1e308",
            "--deadline-hours",
            "1e308",
        ),
        "--gpu-hours 1e+308: a plan takes at most 100,000 hours",
    ),
    "plan deadline of 1e308": lambda _: Probe(
        ("plan", "--instance-type", "p3.2xlarge", "--gpu-hours", "10", "--deadline-hours", "1e308"),
        "--deadline-hours 1e+308: a plan takes at most 100,000 hours",
    ),
    "fleet deadline of 200000 h": lambda tmp: Probe(
        ("fleet", "run", _fleet(tmp, "200000")),
        "jobs[0].deadline_hours must be at most 100,000 hours",
    ),
    "fleet deadline of 10**400": lambda tmp: Probe(
        ("fleet", "run", _fleet(tmp, "1" + "0" * 400)),
        "jobs[0].deadline_hours must be a finite positive number",
    ),
    "gc --job with a mistyped --store": lambda tmp: Probe(
        ("gc", "aws", "--store", str(tmp / "typo.duckdb"), "--job", "0123456789ab"),
        "typo.duckdb does not exist",
    ),
    "gc --job climbing out": lambda _: Probe(
        ("gc", "gcp", "--project", "proj-123456", "--job", "../../x"),
        "--job '../../x' is not a job id",
    ),
    "run gcp --pools with a ;": lambda _: Probe(
        (*GCP_RUN, "--pools", "us-central1-a;id", "--", "true"),
        "--pools 'us-central1-a;id' is not a zone name",
    ),
    "run gcp --pools of another region": lambda tmp: Probe(
        (*GCP_RUN, "--pools", "us-east1-b", "--", "true"),
        "--pools 'us-east1-b' is not a zone of us-central1",
        _key(tmp, None),
    ),
    "run gcp --ckpt climbing out": lambda _: Probe(
        (*GCP_RUN, "--ckpt", "gs://b-1/../other", "--", "true"),
        "a checkpoint folder is a plain path under gs://b-1/",
    ),
    "collect azure --regions of 100,000 characters": lambda _: Probe(
        ("collect", "azure", "--regions", RUNAWAY), "(100,002 characters)"
    ),
    "collect gcp --regions of 100,000 characters": lambda tmp: Probe(
        ("collect", "gcp", "--regions", RUNAWAY), "(100,002 characters)", _key(tmp, None)
    ),
    "collect gcp with a missing key file": lambda tmp: Probe(
        ("collect", "gcp", "--gpu", "A100"), "key.json', which does not exist", _key(tmp, None)
    ),
    "collect gcp with a key file that is not JSON": lambda tmp: Probe(
        ("collect", "gcp", "--gpu", "A100"), "key.json', which is not JSON", _key(tmp, "{")
    ),
}
"""Probes that need no server, by name."""


def assert_one_line(result: subprocess.CompletedProcess[str], said: str) -> None:
    assert result.returncode != 0, result.stdout[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr[-3000:]
    assert lines[0].startswith("error: ") and said in lines[0], lines[0]
    assert "Traceback" not in result.stderr and len(lines[0]) < 600


@pytest.fixture
def priced(cli_in_process: CliRun) -> CliRun:
    """The in-process CLI on a store with the bundled AWS prices (a plan has pools)."""
    assert cli_in_process("data", "load", str(DATA / "prices")).returncode == 0
    return cli_in_process


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PROBES))
def test_a_hostile_probe_ends_in_one_line(priced: CliRun, tmp_path: Path, name: str) -> None:
    probe = PROBES[name](tmp_path)
    assert_one_line(priced(*probe.args, env=probe.env), probe.said)
    assert not (tmp_path / "typo.duckdb").exists()


@pytest.fixture
def billing(tmp_path: Path) -> Iterator[tuple[CloudBillingFake, dict[str, str]]]:
    fake = CloudBillingFake(page_size=50)
    env = {
        **_key(tmp_path, None),
        "GOOGLE_APPLICATION_CREDENTIALS": str(fake.credentials_file(tmp_path)),
        "SPOTWISE_GCP_BILLING_ENDPOINT": fake.url,
    }
    yield fake, env
    fake.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    "body",
    [b'{"skus": [{"name": "services/x', b'{"skus": 7}', b"<html><body>Sign in</body></html>"],
    ids=["cut short", "wrongly typed", "a web page"],
)
def test_collect_gcp_with_a_billing_answer_that_is_no_catalog_ends_in_one_line(
    cli_in_process: CliRun, billing: tuple[CloudBillingFake, dict[str, str]], body: bytes
) -> None:
    fake, env = billing
    fake.damaged_next = [Answer(200, body)]
    result = cli_in_process("collect", "gcp", "--gpu", "A100", env=env)
    assert_one_line(result, "answered something other than its documented JSON")
    assert "<html" not in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "body", [{"Items": {}}, {"Items": [{"armSkuName": 6}]}], ids=["items a map", "a size a number"]
)
def test_collect_azure_with_a_wrongly_typed_answer_fails_never_reports_nothing_sold(
    cli_in_process: CliRun, tmp_path: Path, body: dict
) -> None:
    retail = RetailPricesFake(page_size=40)
    retail.damaged_next = [Answer(200, body)]
    try:
        result = cli_in_process(
            *("collect", "azure", "--regions", "eastus", "--gpu", "V100"),
            env={"SPOTWISE_AZURE_PRICES_URL": retail.url, "HOME": str(tmp_path)},
        )
    finally:
        retail.close()
    assert_one_line(result, "answered its JSON with")
    assert "not sold there" not in result.stderr

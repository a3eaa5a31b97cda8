"""Shared fixtures: a store file per test, and the CLI run as a real subprocess or, for
argument and message tests, in process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from threadpoolctl import threadpool_limits

from tests.postgres import PostgresServer

if TYPE_CHECKING:
    from spotwise.executor.clouds.azure.fake.servers import Azurite

# Compiled modules are cached (__pycache__/, which git ignores), here and in every process the
# tests start: with PYTHONDONTWRITEBYTECODE set, each `spotwise` subprocess compiled ~800 modules
# from source again (a 2-task work queue: 9.5 s of CPU, 2.9 s with the cache).
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "data"
SYSTEM_TEMP = tempfile.gettempdir()
"""The system's temporary folder (the tests' own is in pytest's base: :func:`temporary_folder`)."""
STAGES = {"soak": "--soak", "notebook": "--notebooks", "e2e": "--e2e"}
"""Marks of the tests CI runs apart from the suite, and the flag that runs them."""


def pytest_configure(config: pytest.Config) -> None:
    """Share the cores between xdist workers: OpenMP threads (torch, scikit-learn) that
    outnumber the cores spin against each other's barriers and slow down many times over.
    Subprocesses inherit the limit through ``OMP_NUM_THREADS``."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers:
        cores = len(os.sched_getaffinity(0))
        threads = os.environ.setdefault("OMP_NUM_THREADS", str(max(1, cores // int(workers))))
        threadpool_limits(limits=int(threads))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--soak", action="store_true", help="run only the soak tests (minutes each; `make soak`)"
    )
    parser.addoption(
        "--notebooks",
        action="store_true",
        help="run only the notebooks top to bottom (a minute of documentation; "
        "`make test-notebooks`, CI)",
    )
    parser.addoption(
        "--e2e",
        action="store_true",
        help="run only the end-to-end jobs: the demo, the sweep demo, torchrun jobs, and one "
        "job on each cloud's local servers (minutes of boots, trainings and resumes; "
        "`make test-e2e`, CI)",
    )
    parser.addoption(
        "--operational-store",
        choices=("file", "postgresql"),
        default="file",
        help="where the jobs, ledger and forecasts live: the store file, or a fresh database "
        "on a local PostgreSQL server per test (`make test-postgres`)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Soak tests run under ``--soak`` only, the notebooks under ``--notebooks`` only, the
    end-to-end jobs under ``--e2e`` only (CI runs all three after the suite), and each
    alone then. The slow tests go first, so that the xdist workers end together on the short
    ones rather than one waiting out a long test begun last (the longest-first rule of
    scheduling)."""
    stage = next((mark for mark, flag in STAGES.items() if config.getoption(flag)), None)
    keep = [item for item in items if _stage(item) == stage]
    if len(keep) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in keep])
    items[:] = sorted(keep, key=lambda item: "slow" not in item.keywords)


def _stage(item: pytest.Item) -> str | None:
    """The CI stage a test runs in apart from the suite (None: the suite)."""
    return next((mark for mark in STAGES if mark in item.keywords), None)


@pytest.fixture(scope="session", autouse=True)
def temporary_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Temporary files of this test process and of every process its tests start go to a
    folder under pytest's own temporary base instead of the system's /tmp, where they outlived
    the run: torchrun's elastic agent makes a ``torchelastic_*`` log folder per run and never
    removes it, and a killed process removes nothing. Started processes read ``TMPDIR``; this
    process's tempfile has read it already (pytest's base is under it), so its cached folder
    is set too; torch makes its compile cache folder from that once, at the first optimizer,
    and hands it to its children in ``TORCHINDUCTOR_CACHE_DIR``, set here as well."""
    folder = tmp_path_factory.mktemp("tmp")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TMPDIR", str(folder))
        patch.setattr(tempfile, "tempdir", str(folder))
        patch.setenv("TORCHINDUCTOR_CACHE_DIR", str(folder / "torchinductor"))
        yield folder


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    """A local PostgreSQL server (Unix socket only) for this test process, its data in pytest's
    temporary base and removed at the session's end. As root, pgserver runs the server as a
    user of its own and opens every folder above the data to all users (o+rx), pytest's base
    among them: there the data is in a folder of its own in the system's temporary folder."""
    if os.geteuid() == 0:
        folder = Path(tempfile.mkdtemp(prefix="spotwise-pg-", dir=SYSTEM_TEMP))
    else:
        folder = tmp_path_factory.mktemp("postgres")
    server = PostgresServer(folder)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Azurite]:
    """One Azurite for this test process (its start takes seconds): each test uses containers
    of its own. Its data is in pytest's temporary base; at the session's end it is killed and
    its folder removed."""
    from spotwise.executor.clouds.azure.fake.servers import Azurite

    folder = tmp_path_factory.mktemp("azurite")
    with Azurite(folder) as server:
        yield server
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(autouse=True)
def operational_store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Under ``--operational-store postgresql``, every test's jobs, ledger and forecasts go to
    a fresh database of its own (the CLI's subprocesses inherit it); else the store file."""
    monkeypatch.delenv("SPOTWISE_OPERATIONAL_STORE", raising=False)
    if request.config.getoption("--operational-store") != "postgresql":
        return "file"
    server: PostgresServer = request.getfixturevalue("postgres_server")
    url = server.fresh_database()
    monkeypatch.setenv("SPOTWISE_OPERATIONAL_STORE", url)
    return url


@pytest.fixture
def store_file(tmp_path: Path) -> Path:
    return tmp_path / "store" / "market.duckdb"


CliRun = Callable[..., subprocess.CompletedProcess[str]]
StoreBusy = Callable[[Path], AbstractContextManager[None]]


@pytest.fixture
def cli(store_file: Path) -> CliRun:
    """Run ``spotwise ARGS`` in a subprocess against this test's store."""

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        full_env = {
            **os.environ,
            "SPOTWISE_STORE": str(store_file),
            "COLUMNS": "200",
            **(env or {}),
        }
        return subprocess.run(
            [sys.executable, "-m", "spotwise", *args],
            capture_output=True,
            text=True,
            env=full_env,
            timeout=600,
            check=False,
        )

    return run


@pytest.fixture
def cli_in_process(store_file: Path) -> CliRun:
    """Run ``spotwise ARGS`` in this process (typer's test runner) against this test's store:
    for argument and message tests, where a fresh interpreter per call adds only time."""
    from typer.testing import CliRunner

    from spotwise.cli import app

    runner = CliRunner()

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        result = runner.invoke(
            app,
            list(args),
            env={"SPOTWISE_STORE": str(store_file), "COLUMNS": "200", **(env or {})},
            catch_exceptions=False,
        )
        return subprocess.CompletedProcess(
            ["spotwise", *args], result.exit_code, result.stdout, result.stderr
        )

    return run


def summary_json(cli: CliRun) -> dict:
    result = cli("data", "summary", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(autouse=True)
def fake_aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Credentials for loopback endpoints only; never the instance metadata service."""
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def moto_server() -> Iterator[str]:
    from spotwise.executor.clouds.aws.local import local_aws

    with local_aws() as url:
        yield url


@pytest.fixture
def s3_url(moto_server: str) -> Iterator[tuple[str, dict]]:
    """A fresh bucket on the moto server: its ``s3://`` URL and the fsspec options to reach it."""
    import boto3

    bucket = f"ckpt-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=moto_server, region_name="us-east-1").create_bucket(
        Bucket=bucket
    )
    options = {
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"endpoint_url": moto_server, "region_name": "us-east-1"},
    }
    yield f"s3://{bucket}/run-1", options


API_TOKEN = "s3cret-token"


@pytest.fixture(scope="session")
def api_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``spotwise serve`` on a free loopback port, with a token from a file (one per worker)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token_file = tmp_path_factory.mktemp("api") / "token"
    token_file.write_text(API_TOKEN + "\n")
    env = {k: v for k, v in os.environ.items() if k != "SPOTWISE_API_API_TOKEN"}
    command = [sys.executable, "-m", "spotwise", "serve", "--port", str(port)]
    process = subprocess.Popen([*command, "--token-file", str(token_file)], env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            try:
                httpx.get(f"{base}/healthz", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture
def store_busy(
    operational_store: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> StoreBusy:
    """Make the ledger's store unavailable for a while: another process holds a write on the
    operational file (and the store file), or (PostgreSQL) the database cannot be reached."""

    @contextmanager
    def busy(store: Path) -> Iterator[None]:
        if operational_store == "file":
            holders = [hold_operational(store), hold_store(store)]
            try:
                yield
            finally:
                for holder in holders:
                    holder.kill()
                    holder.wait()
            return
        down = f"postgresql://spotwise@/down?host={tmp_path}/no-server"
        monkeypatch.setenv("SPOTWISE_OPERATIONAL_STORE", down)
        try:
            yield
        finally:
            monkeypatch.setenv("SPOTWISE_OPERATIONAL_STORE", operational_store)

    return busy


def hold_store(path: Path, seconds: float = 1e5) -> subprocess.Popen[str]:
    """Another process holding the store's DuckDB lock for ``seconds`` (returns once it holds
    it; the caller kills it)."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True)"
            "; time.sleep(float(sys.argv[2]))",
            str(path),
            str(seconds),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def hold_operational(store: Path) -> subprocess.Popen[str]:
    """Another process holding a write transaction on the operational file beside ``store``
    (made first, with its tables; returns once it holds it; the caller kills it)."""
    from spotwise.pricing.local_operational import SqliteStore, operational_path

    SqliteStore.open(store).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1], isolation_level=None)"
            "; c.execute('BEGIN IMMEDIATE'); print('held', flush=True); time.sleep(1e5)",
            str(operational_path(store)),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


class ManualClock:
    """A clock that moves only when told (``sleep`` advances it at once)."""

    def __init__(self, start: float = 1_000.0) -> None:
        self.now = start

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

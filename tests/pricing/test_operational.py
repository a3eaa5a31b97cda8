"""The operational tables in the store file and in PostgreSQL: one schema and the same
migrations, the same answers to the same SQL, all-or-nothing writes, clear errors."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from spotwise.executor.ledger import schema as ledger_schema  # noqa: F401  (registers jobs and ledger)
from spotwise.pricing.database import PostgresStore
from spotwise.pricing.errors import StoreError
from spotwise.pricing.operational import (
    OPERATIONAL_TABLES,
    open_operational,
    operational_url,
    upsert_frames,
)
from spotwise.pricing.schemas import SCHEMAS
from spotwise.pricing.store import MarketStore
from tests.conftest import CliRun
from tests.postgres import PostgresServer

BACKENDS = ("file", "postgresql")


@pytest.fixture(params=BACKENDS)
def backend(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    postgres_server: PostgresServer,
    store_file: Path,
) -> Iterator[str]:
    """The operational store in the store file, or in a fresh PostgreSQL database."""
    if request.param == "postgresql":
        monkeypatch.setenv("SPOTWISE_OPERATIONAL_STORE", postgres_server.fresh_database())
    else:
        monkeypatch.delenv("SPOTWISE_OPERATIONAL_STORE", raising=False)
    yield request.param


def columns(store: MarketStore | PostgresStore, table: str) -> list[tuple[str, str]]:
    """Column names and portable type names, in order."""
    rows = store.records(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_name = ? ORDER BY ordinal_position",
        [table],
    )
    aliases = {"DOUBLE": "double precision", "TIMESTAMP WITH TIME ZONE": "timestamp with time zone"}
    return [(r["column_name"], aliases.get(r["data_type"], r["data_type"]).lower()) for r in rows]


def test_one_schema_and_the_same_migrations_build_the_same_tables_in_both(
    postgres_server: PostgresServer, store_file: Path
) -> None:
    with (
        MarketStore.open(store_file) as duck,
        PostgresStore.open(postgres_server.fresh_database(), store_file) as pg,
    ):
        assert duck.schema_versions() == pg.schema_versions()
        assert pg.schema_versions() == {name: s.version for name, s in SCHEMAS.items()}
        for table in OPERATIONAL_TABLES:
            duck_columns = [
                (name, kind.replace("character varying", "varchar"))
                for name, kind in columns(duck, table)
            ]
            pg_columns = [
                (name, kind.replace("character varying", "varchar"))
                for name, kind in columns(pg, table)
            ]
            assert pg_columns, table
            assert duck_columns == pg_columns, table


def test_a_second_open_migrates_nothing_and_two_processes_can_build_a_new_database_at_once(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    url = postgres_server.fresh_database()
    script = (
        "import sys; from pathlib import Path; "
        "from spotwise.executor.ledger import schema as ledger_schema; "
        "from spotwise.pricing.database import PostgresStore; "
        "PostgresStore.open(sys.argv[1], Path(sys.argv[2])).close(); print('ok')"
    )
    openers = [
        subprocess.Popen(
            [sys.executable, "-c", script, url, str(tmp_path / "m.duckdb")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    outputs = [p.communicate(timeout=120) for p in openers]
    assert [p.returncode for p in openers] == [0, 0, 0], outputs
    with PostgresStore.open(url, tmp_path / "m.duckdb") as pg:
        rows = pg.records("SELECT name, version FROM schemas ORDER BY name")
    assert {r["name"]: r["version"] for r in rows} == {n: s.version for n, s in SCHEMAS.items()}


@pytest.mark.slow
def test_writes_and_reads_answer_alike_and_a_failed_batch_leaves_nothing(
    backend: str, store_file: Path
) -> None:
    job = ["j1", "train", "python train.py", "local", "2026-12-01T08:00:00+00:00", "running"]
    with open_operational(store_file) as store:
        store.execute_all(
            [
                (
                    "INSERT INTO jobs (job_id, name, command, launcher, started, status, "
                    "compute_hours, deadline_hours, on_demand_price, checkpoint_usd_per_gb_month)"
                    " VALUES (?, ?, ?, ?, ?, ?, 1.5, 3, 3.06, 0.023)",
                    job,
                ),
                (
                    "INSERT INTO ledger (job_id, seq, ts, kind, detail) VALUES (?, 1, ?, ?, ?)",
                    ["j1", "2026-12-01T08:01:00+00:00", "notice", "50% off? 'quoted ?'"],
                ),
            ]
        )
        with pytest.raises(StoreError, match="nothing was stored"):
            store.execute_all(
                [
                    ("UPDATE jobs SET status = 'completed' WHERE job_id = ?", ["j1"]),
                    (
                        "INSERT INTO ledger (job_id, seq, ts, kind) VALUES (?, 1, now(), 'x')",
                        ["j1"],
                    ),
                ]
            )
        frame = store.query("SELECT job_id, started, status FROM jobs")
        entries = store.records("SELECT seq, kind, detail FROM ledger WHERE kind LIKE 'not%'")
    assert frame["status"].tolist() == ["running"]  # the update rolled back with the insert
    assert str(frame["started"].dtype) == "datetime64[us, UTC]" or "UTC" in str(
        frame["started"].dtype
    )
    assert frame["started"].iloc[0] == pd.Timestamp("2026-12-01T08:00:00Z")
    assert entries == [{"seq": 1, "kind": "notice", "detail": "50% off? 'quoted ?'"}]


def test_forecasts_replace_each_series_models_last_run_in_both(
    backend: str, store_file: Path
) -> None:
    def run(created: str, means: list[float]) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "unique_id": ["aws:us-east-1a:p3.2xlarge:spot"] * len(means),
                "ds": pd.date_range("2026-12-01", periods=len(means), freq="h", tz="UTC"),
                "model": "risk_logistic",
                "horizon": range(1, len(means) + 1),
                "mean": means,
                "lo": None,
                "hi": None,
                "level": None,
                "p_preempt": [0.25] * len(means),
                "created_at": pd.Timestamp(created),
            }
        )

    with open_operational(store_file) as store:
        assert store.replace_forecasts(run("2026-12-01T00:00Z", [1.0, 2.0, 3.0])) == 3
        store.replace_forecasts(run("2026-12-01T01:00Z", [4.0, 5.0]))
        rows = store.query("SELECT mean, lo, created_at FROM forecasts ORDER BY horizon")
    assert rows["mean"].tolist() == [4.0, 5.0]
    assert rows["lo"].isna().all()
    assert (rows["created_at"] == pd.Timestamp("2026-12-01T01:00Z")).all()


def test_placement_scores_go_to_the_operational_store_and_prices_to_the_file(
    backend: str, store_file: Path
) -> None:
    observed = pd.Timestamp("2026-11-30T12:00Z")
    frames = {
        "prices": pd.DataFrame(
            {
                "source": ["aws-api"],
                "provider": ["aws"],
                "region": ["us-east-1"],
                "zone": ["us-east-1a"],
                "instance_type": ["p3.2xlarge"],
                "market": ["spot"],
                "ts": [observed],
                "price": [0.918],
            }
        ),
        "placement_scores": pd.DataFrame(
            {
                "source": ["aws-api"],
                "provider": ["aws"],
                "region": ["us-east-1"],
                "zone": ["us-east-1a"],
                "instance_type": ["p3.2xlarge"],
                "observed": [observed],
                "score": [7],
            }
        ),
    }
    assert upsert_frames(store_file, frames) == {"prices": 1, "placement_scores": 1}
    assert upsert_frames(store_file, frames) == {"prices": 0, "placement_scores": 0}
    with MarketStore.open(store_file, read_only=True) as market:
        in_file = market.records("SELECT count(*) AS n FROM placement_scores")[0]["n"]
        prices = market.records("SELECT count(*) AS n FROM prices")[0]["n"]
    with open_operational(store_file) as store:
        scores = store.records("SELECT score FROM placement_scores")
    assert prices == 1 and scores == [{"score": 7}]
    assert in_file == 0  # the SQLite file beside it, or PostgreSQL


def test_an_unreachable_database_is_one_clear_error_without_the_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"postgresql://spotwise:hunter2@/spotwise?host={tmp_path}/no-server"
    monkeypatch.setenv("SPOTWISE_OPERATIONAL_STORE", url)
    assert operational_url() == url
    with pytest.raises(StoreError) as caught:
        open_operational(tmp_path / "m.duckdb", wait_s=0.2)
    message = str(caught.value)
    assert "cannot reach the operational store" in message
    assert "SPOTWISE_OPERATIONAL_STORE" in message
    assert "hunter2" not in message and "spotwise:***@" in message


def test_a_setting_that_is_not_a_database_url_is_refused_by_name(cli: CliRun) -> None:
    result = cli("jobs", "list", env={"SPOTWISE_OPERATIONAL_STORE": "/var/lib/spotwise.db"})
    assert result.returncode == 2  # a setting, like a bad flag
    assert "SPOTWISE_OPERATIONAL_STORE" in result.stderr
    assert "postgresql://" in result.stderr


def test_a_database_url_given_as_the_store_file_is_refused_with_the_setting_to_use(
    cli: CliRun, tmp_path: Path
) -> None:
    result = cli("data", "summary", "--store", "postgresql://db.internal/spotwise")
    assert result.returncode == 2
    assert "SPOTWISE_OPERATIONAL_STORE=postgresql://" in result.stderr
    assert not Path("postgresql:").exists()

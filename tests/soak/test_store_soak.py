"""Soak: many Spotwise processes on one store for a few minutes, as a team runs it. The
forecast schedule, a large load in a loop, `plan` in a loop, three supervised runs with
preemptions, a fleet of three jobs (one per tier, each under its supervisor in the fleet's
process), one run cancelled from another shell and one whose supervisor is killed (SIGKILL),
`jobs list` in a loop and the dashboard's pages in a loop: no command fails or shows the
driver's own text, each ledger (the runs' and the fleet's jobs') holds every entry its
supervisor wrote, and the store is consistent afterwards. Every store call's wait is logged
and reported (``$SPOTWISE_SOAK_S`` sets how long the loops run, 420 s by default, and
``$SPOTWISE_SOAK_LOAD_EVERY_S`` the pause between large loads)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from spotwise.pricing.operational import open_operational, operational_url
from spotwise.pricing.store import MarketStore
from tests.conftest import DATA

pytestmark = pytest.mark.soak

PRICES = DATA / "prices/aws_spot_price_history_2019-12_2020-01.csv"
TRACES = DATA / "traces/cbl/availability/1-node/aws-02-15-2023"
FAKE_JOB = Path(__file__).resolve().parent.parent / "executor" / "fake_job.py"
LIMIT_S = int(os.environ.get("SPOTWISE_SOAK_S", "420"))
FULL = "SPOTWISE_SOAK_S" in os.environ
"""Run the loops for all of ``LIMIT_S`` (three new supervised jobs each time three end), not
only until each kind of work has been seen."""
LOAD_EVERY_S = float(os.environ.get("SPOTWISE_SOAK_LOAD_EVERY_S", "5"))
"""Pause between two loads of the large price file: each is one transaction of 600 000 rows,
which holds the file for seconds (a team's collector loads far less, far less often)."""
"""Seconds the soak's loop may run; the commands still running then are waited for after it,
so the test's own timeout is longer (the suite's 300 s cut a slow machine's soak short)."""


def large_price_file(folder: Path) -> Path:
    """The bundled AWS price history, each price repeated every 10 minutes until the next
    (about 600 000 rows, 40 MB): the same series and prices, so forecasts cost the same."""
    prices = pd.read_csv(PRICES, parse_dates=["timestamp"])
    parts = []
    for _, series in prices.groupby(["availability_zone", "instance_type"]):
        series = series.sort_values("timestamp").set_index("timestamp")
        dense = series.resample("10min").ffill().dropna().reset_index()
        parts.append(dense)
    dense = pd.concat(parts, ignore_index=True)[list(prices.columns)]
    dense["timestamp"] = dense["timestamp"].dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    target = folder / "aws_spot_price_history_dense.csv"
    dense.to_csv(target, index=False)
    return target


class Commands:
    """Every command the soak runs, with its exit code and the tail of its stderr."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.runs: Counter[str] = Counter()
        self.failures: list[str] = []
        self.driver_text: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "-m", "spotwise", *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=300,
            check=False,
        )
        with self._lock:
            self.runs[" ".join(args[:2])] += 1
            if result.returncode != 0:
                self.failures.append(f"{' '.join(args)}: {result.stderr[-2000:]}")
            self.driver_text += driver_text(result.stderr)
        return result


DRIVER_WORDS = ("IO Error", "Conflicting lock", "duckdb.", "Traceback")
"""What only the database driver (or a crash) says: a user never sees it."""


def driver_text(stderr: str) -> list[str]:
    """The lines of ``stderr`` in the driver's own words."""
    return [line for line in stderr.splitlines() if any(w in line for w in DRIVER_WORDS)]


def fake_run(
    tmp_path: Path, name: str, env: dict[str, str], work_s: float
) -> subprocess.Popen[str]:
    """A supervised replay of the fake job (preempted every 20 s), as ``spotwise run``."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "spotwise",
            "run",
            *("--pools", "us-east-1a_v100_1", "--start-hours", "100", "--scale", "60"),
            *("--compute-hours", "1.5", "--deadline-hours", "6", "--preempt-every", "20s"),
            *("--name", name, "--json", "--"),
            *(sys.executable, str(FAKE_JOB), "--work-s", str(work_s)),
            *("--state", str(tmp_path / f"progress-{name}")),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


class Fleet:
    """``spotwise fleet run`` of three jobs, one per tier, on the replayed market (its output
    in files: a fleet says a lot in minutes)."""

    def __init__(self, tmp_path: Path, name: str, env: dict[str, str], work_s: float) -> None:
        def job(tier: str) -> dict[str, object]:
            state = str(tmp_path / f"progress-{name}-{tier}")
            return {
                "name": f"{name}-{tier}",
                "priority": tier,
                "compute_hours": 1.5,
                "deadline_hours": 6,
                "command": [
                    sys.executable,
                    str(FAKE_JOB),
                    "--work-s",
                    str(work_s),
                    "--state",
                    state,
                ],
            }

        spec = tmp_path / f"{name}.yaml"
        # JSON is YAML; room for one on-demand node and spot for the others
        spec.write_text(
            json.dumps(
                {
                    "name": name,
                    "budget_usd_per_hour": 6.0,
                    "jobs": [job(t) for t in ("high", "normal", "low")],
                }
            )
        )
        self.name = name
        self.out, self.err = tmp_path / f"{name}.json", tmp_path / f"{name}.stderr"
        with self.out.open("w") as out, self.err.open("w") as err:
            self.process = subprocess.Popen(
                [
                    *(sys.executable, "-m", "spotwise", "fleet", "run", str(spec), "--json"),
                    *("--start-hours", "100", "--scale", "60"),
                ],
                stdout=out,
                stderr=err,
                text=True,
                env=env,
            )

    def done(self) -> bool:
        return self.process.poll() is not None

    def supervised(self) -> dict[str, dict[str, Any]]:
        """Each job's own account, by its supervisor (the fleet's JSON), by job id."""
        assert self.process.wait(timeout=600) == 0, self.err.read_text()[-3000:]
        answer = json.loads(self.out.read_text())
        assert [j["status"] for j in answer["jobs"]] == ["completed"] * 3, answer
        return dict(answer["supervised"])


LEDGER_COUNTS = ("entries", "instances", "preemptions", "notices", "migrations", "cost_usd")


def in_store_as_supervised(run: Commands, by_supervisor: dict[str, Any]) -> None:
    """The store's report of a job holds what its supervisor says it wrote, none pending."""
    shown = run("jobs", "show", by_supervisor["job_id"], "--json")
    assert shown.returncode == 0, shown.stderr
    in_store = json.loads(shown.stdout)
    assert in_store["pending_writes"] == 0
    assert by_supervisor["status"] == "completed"
    for key in LEDGER_COUNTS:
        assert in_store[key] == by_supervisor[key], (by_supervisor["job_id"], key)


def job_id_of(process: subprocess.Popen[str], said: list[str]) -> str:
    """The job id a run names in its first line (its other lines kept in ``said``)."""
    assert process.stderr is not None
    for line in process.stderr:
        said.append(line)
        if line.startswith("… job "):
            return line.split()[2].rstrip(":")
    raise AssertionError(f"the run never named its job: {''.join(said)[-2000:]}")


def wait_figures(log: Path) -> dict[str, Any]:
    """The waits every process logged: count, median, 99th percentile and most (seconds),
    over all calls and per command."""

    def figures(waits: list[float]) -> dict[str, float | int]:
        waits = sorted(waits)
        return {
            "calls": len(waits),
            "p50_s": round(waits[len(waits) // 2], 4),
            "p99_s": round(waits[min(len(waits) - 1, int(0.99 * len(waits)))], 4),
            "max_s": round(waits[-1], 4),
        }

    per_command: dict[str, list[float]] = {}
    for line in log.read_text().splitlines():
        _, seconds, command = line.split()
        per_command.setdefault(command, []).append(float(seconds))
    every = [w for waits in per_command.values() for w in waits]
    return {
        "all": figures(every) if every else {"calls": 0},
        **{command: figures(waits) for command, waits in sorted(per_command.items())},
    }


def repeat(until: threading.Event, work: Callable[[], object], pause_s: float) -> threading.Thread:
    def loop() -> None:
        while not until.is_set():
            work()
            until.wait(pause_s)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def dashboard_pages(store: Path, failures: list[str]) -> int:
    """Render the dashboard's pages once (Streamlit's AppTest, in this process)."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    os.environ["SPOTWISE_STORE"] = str(store)
    st.cache_data.clear()
    drawn = 0
    for name in ("market", "risk", "jobs"):
        app = AppTest.from_string(
            f"from dashboard.screens import {name}\n{name}.render()", default_timeout=120
        )
        app.run()
        problems = [e.value for e in app.exception] + [e.value for e in app.error]
        if problems:
            failures.append(f"dashboard {name}: {problems}")
        drawn += 1
    return drawn


@pytest.mark.timeout(LIMIT_S + 480)
def test_a_store_shared_by_every_kind_of_process_loses_nothing_and_fails_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store" / "market.duckdb"
    waits = tmp_path / "waits.log"
    env = {
        **os.environ,
        "SPOTWISE_STORE": str(store),
        "COLUMNS": "200",
        "SPOTWISE_STORE_WAIT_LOG": str(waits),
    }
    monkeypatch.setenv("SPOTWISE_STORE", str(store))
    run = Commands(env)
    assert run("data", "load", str(PRICES), str(TRACES)).returncode == 0, run.failures
    big = large_price_file(tmp_path)
    began = time.monotonic()

    schedule = subprocess.Popen(
        [sys.executable, "-m", "spotwise", "forecast", "schedule", "--every", "1m"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    jobs = [fake_run(tmp_path, f"job-{i}", env, work_s=90) for i in range(3)]
    fleets = [Fleet(tmp_path, "fleet-0", env, work_s=90)]
    cancelled, killed = (fake_run(tmp_path, name, env, work_s=3600) for name in ("c", "k"))
    cancelled_said: list[str] = []
    cancelled_id = job_id_of(cancelled, cancelled_said)
    killed_id = job_id_of(killed, [])
    done = threading.Event()
    plan = ("plan", "--instance-type", "p3.2xlarge", "--gpu-hours", "10", "--deadline-hours", "20")
    loops = [
        repeat(done, lambda: run("data", "load", str(big)), LOAD_EVERY_S),
        repeat(done, lambda: run("jobs", "list", "--json"), 2.0),
        repeat(done, lambda: run("data", "summary", "--json"), 3.0),
        repeat(done, lambda: run(*plan), 5.0),
    ]
    schedule_lines: list[str] = []

    def read_schedule() -> None:
        assert schedule.stderr is not None
        schedule_lines.extend(schedule.stderr)

    reader = threading.Thread(target=read_schedule, daemon=True)
    reader.start()
    pages = 0
    ended: dict[str, subprocess.CompletedProcess[str]] = {}
    outputs: list[tuple[str, str]] = []
    try:
        while time.monotonic() - began < LIMIT_S:
            pages += dashboard_pages(store, run.failures)
            ok_runs = sum("ok:" in line for line in schedule_lines)
            if "cancel" not in ended and time.monotonic() - began > 30:
                ended["cancel"] = run("jobs", "cancel", cancelled_id)
            if killed.poll() is None and time.monotonic() - began > 45:
                killed.kill()  # SIGKILL: a writer dies between (or in) its writes
            finished = all(j.poll() is not None for j in jobs)
            loads = run.runs["data load"] >= min(3, LIMIT_S / LOAD_EVERY_S)
            if FULL and finished:
                outputs += [j.communicate(timeout=60) for j in jobs[len(outputs) :]]
                jobs += [fake_run(tmp_path, f"job-{len(jobs) + i}", env, 90) for i in range(3)]
            if FULL and fleets[-1].done():
                fleets.append(Fleet(tmp_path, f"fleet-{len(fleets)}", env, work_s=90))
            fleets_done = all(f.done() for f in fleets)
            if (
                not FULL
                and finished
                and fleets_done
                and ok_runs >= 2
                and loads
                and "cancel" in ended
            ):
                break
            time.sleep(1.0)
    finally:
        done.set()
        for thread in loops:
            thread.join(timeout=300)
        schedule.send_signal(signal.SIGTERM)
        schedule.wait(timeout=120)
        reader.join(timeout=10)
        # the last ones started may still be training: let them finish
        for job in (*jobs, *(f.process for f in fleets)):
            with contextlib.suppress(subprocess.TimeoutExpired):
                job.wait(timeout=300)
        for process in (*jobs, *(f.process for f in fleets), cancelled, killed):
            if process.poll() is None:
                process.kill()
    # a job whose supervisor died is still cancelled from another shell: its command too
    ended["cancel the orphan"] = run("jobs", "cancel", killed_id)
    outputs += [j.communicate(timeout=60) for j in jobs[len(outputs) :]]
    cancelled_out, cancelled_err = cancelled.communicate(timeout=60)
    killed.communicate(timeout=60)
    soaked_s = time.monotonic() - began

    for job, (_, job_err) in zip(jobs, outputs, strict=True):
        assert job.returncode == 0, job_err[-3000:]
    assert run.failures == []
    for cancel in ended.values():
        assert cancel.returncode == 0, cancel.stderr
    assert cancelled.returncode != 0 and json.loads(cancelled_out)["status"] == "cancelled"
    schedule_text = "".join(schedule_lines)
    assert "failed" not in schedule_text, schedule_text[-3000:]
    assert sum("ok:" in line for line in schedule_lines) >= 2, schedule_text[-3000:]
    assert schedule.returncode == 0

    # Each ledger holds every entry its supervisor wrote: its own account against the store's.
    kept_pending = 0
    for job_out, job_err in outputs:
        by_supervisor = json.loads(job_out)
        in_store_as_supervised(run, by_supervisor)
        assert by_supervisor["preemptions"] >= 2
        assert job_err.count("launching on") == by_supervisor["instances"]
        kept_pending += job_err.count("keeps writes in")
    # The fleet's jobs too: each supervisor's own account (the fleet's JSON) against the store.
    fleet_jobs: Counter[str] = Counter()
    for fleet in fleets:
        for by_supervisor in fleet.supervised().values():
            in_store_as_supervised(run, by_supervisor)
            fleet_jobs["jobs"] += 1
            fleet_jobs["instances"] += by_supervisor["instances"]
            fleet_jobs["preemptions"] += by_supervisor["preemptions"]
            fleet_jobs["migrations"] += by_supervisor["migrations"]
        kept_pending += fleet.err.read_text().count("keeps writes in")
    seen = [line for _, err in outputs for line in driver_text(err)]
    seen += [line for fleet in fleets for line in driver_text(fleet.err.read_text())]
    seen += driver_text(cancelled_err + "".join(cancelled_said)) + run.driver_text
    assert seen == []

    # The store is consistent: the summary's counts are the tables', every forecast whole.
    summary = run("data", "summary", "--json")
    assert summary.returncode == 0, summary.stderr
    tables = json.loads(summary.stdout)["tables"]
    with MarketStore.open(store, read_only=True) as market:
        for table, rows in tables.items():
            assert market.records(f"SELECT count(*) AS n FROM {table}")[0]["n"] == rows
    with open_operational(store, read_only=True) as operational:  # the file, or PostgreSQL
        runs_per_forecast = operational.records(
            "SELECT max(n) AS most FROM (SELECT unique_id, model, count(DISTINCT created_at) "
            "AS n FROM forecasts GROUP BY unique_id, model) AS runs"
        )[0]["most"]
        naive = operational.records(
            "SELECT count(*) AS n, (SELECT count(*) FROM (SELECT DISTINCT unique_id, horizon "
            "FROM forecasts WHERE model = 'Naive') AS d) AS distinct_rows "
            "FROM forecasts WHERE model = 'Naive'"
        )[0]
    assert runs_per_forecast == 1 and naive["n"] == naive["distinct_rows"] > 0
    print(
        json.dumps(
            {
                "soak_s": round(soaked_s, 1),
                "commands": dict(run.runs),
                "failed_commands": len(run.failures),
                "forecast_runs_ok": sum("ok:" in line for line in schedule_lines),
                "dashboard_pages": pages,
                "supervised_jobs": len(jobs),
                "fleets": len(fleets),
                "fleet_jobs": dict(fleet_jobs),
                "ledger_writes_kept_pending": kept_pending,
                "store_waits": wait_figures(waits),
                "operational_store": "postgresql" if operational_url() else "file",
            }
        )
    )

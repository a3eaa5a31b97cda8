"""Sweeps end to end: real Optuna storage files, real worker processes, real SIGKILLs.

Pools are replayed from the bundled traces at hour 200 (the demo's four V100 pools), prices are
given on the command line, so no data load is needed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest

from spotwise.executor.demo import DEMO_POOLS
from spotwise.executor.ledger.ledger import JobLine, list_jobs
from spotwise.executor.sweeps.sweep import original_number
from spotwise.pricing.operational import open_operational
from tests.conftest import CliRun

pytestmark = pytest.mark.slow

TASK = str(Path(__file__).parents[1] / "sweep_task.py")
MARKET = (
    "--pools",
    ",".join(DEMO_POOLS),
    "--start-hours",
    "200",
    "--spot-price",
    "0.9",
    "--on-demand-price",
    "3.0",
)


def spec(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(f'name = "{name}"\n{body}')
    return path


def jobs_of(store: Path, sweep: str) -> list[JobLine]:
    with open_operational(store, read_only=True) as market:
        return [j for j in list_jobs(market) if j.sweep == sweep]


@pytest.mark.e2e  # 18-27 s of a worker: in make test-e2e (CI), to keep make test under 10 min
def test_a_pruned_trial_stops_at_once_and_the_ledger_says_pruned(
    cli: CliRun, tmp_path: Path, store_file: Path
) -> None:
    path = spec(
        tmp_path,
        "prune",
        f"""command = ["{sys.executable}", "{TASK}", "--x", "{{x}}", "--steps", "8",
           "--sleep", "0.4"]
[sampler]
type = "grid"
[pruner]
type = "median"
n_startup_trials = 2
[params]
x = {{ type = "categorical", choices = [1, 2, 10] }}
""",
    )
    result = cli(
        "sweep", "run", str(path), *MARKET, "--scale", "100", "--heartbeat-s", "1", "--json"
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    states = {t["params"]["x"]: t["state"] for t in report["trials"]}
    assert states == {1: "complete", 2: "complete", 10: "pruned"}
    assert report["best"] == {"trial": 0, "params": {"x": 1}, "value": 1.0}
    hours = {t["params"]["x"]: sum(t["hours"].values()) for t in report["trials"]}
    # stopped at its first report (0.4 s in), not run to its end (3.2 s)
    assert hours[10] < hours[1] / 2
    statuses = {j.trial: j.status for j in jobs_of(store_file, "prune")}
    assert statuses == {0: "completed", 1: "completed", 2: "pruned"}
    assert report["simulated"] and any("given with --spot-price" in p for p in report["prices"])

    shown = cli("sweep", "show", "prune")
    assert shown.returncode == 0, shown.stderr
    assert "2 completed, 1 pruned, 0 failed" in shown.stdout
    assert "(simulated)" in shown.stdout


def test_a_sweep_whose_trials_ran_on_demand_says_the_policys_reason(
    cli: CliRun, tmp_path: Path
) -> None:
    path = spec(
        tmp_path,
        "tight",
        f"""compute_hours = 0.5
command = ["{sys.executable}", "{TASK}", "--x", "{{x}}", "--steps", "2", "--sleep", "0.1"]
[sampler]
type = "grid"
[params]
x = {{ type = "categorical", choices = [1] }}
""",
    )
    # half an hour for half an hour of work: no slack to wait for spot
    result = cli("sweep", "run", str(path), *MARKET, "--scale", "100", "--deadline-hours", "0.5")
    assert result.returncode == 0, result.stderr
    assert "(0.0% saved)" in result.stdout
    assert "trial 0 ran on demand: the policy: safety net: " in result.stdout
    shown = json.loads(cli("sweep", "show", "tight", "--json").stdout)
    (why,) = shown["trials"][0]["on_demand_why"]
    assert why.startswith("the policy: safety net: ") and why.endswith("on-demand to the end")


def test_a_queue_shard_killed_twice_completes_once_and_writes_once(
    cli: CliRun, tmp_path: Path, store_file: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    result = cli(
        "sweep", "run", "--grid", "shard=0..2", "--name", "shards", *MARKET, "--scale", "100",
        "--workers", "2", "--heartbeat-s", "1", "--json", "--",
        sys.executable, TASK, "--shard", "{shard}", "--out", str(out), "--die-shard", "1",
        "--die-times", "2", "--sleep", "0.3",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["queue"] and report["best"] is None
    assert [t["state"] for t in report["trials"]] == ["complete"] * 3
    assert sorted((out / "writes.log").read_text().split()) == ["0", "1", "2"]
    assert (out / "runs-1").read_text() == "3"  # killed twice, then done
    assert {p.name for p in out.glob("shard-*.txt")} == {f"shard-{i}.txt" for i in range(3)}
    by_trial = {t["trial"]: t for t in report["trials"]}
    # the supervisor relaunched it once, gave up on the second kill; the sweep retried it
    assert by_trial[1]["attempts"] == 2
    statuses = sorted((j.trial, j.status) for j in jobs_of(store_file, "shards"))
    assert statuses == [(0, "completed"), (1, "completed"), (1, "failed"), (2, "completed")]


@pytest.mark.e2e
def test_a_worker_killed_mid_trial_is_retried_elsewhere_and_resumes_bit_exactly(
    cli: CliRun, tmp_path: Path, store_file: Path
) -> None:
    train = [
        sys.executable, "-m", "spotwise.executor.examples.train_mlp", "--epochs", "2",
        "--samples", "1024", "--step-sleep-s", "0.05", "--interval-s", "0.5",
    ]  # fmt: skip
    command = ", ".join(f'"{a}"' for a in [*train, "--hidden", "{hidden}", "--ckpt", "{ckpt}"])
    path = spec(
        tmp_path,
        "kill",
        f"""command = [{command}]
[sampler]
type = "grid"
[params]
hidden = {{ type = "categorical", choices = [32] }}
""",
    )
    env = {**os.environ, "SPOTWISE_STORE": str(store_file)}
    sweep = subprocess.Popen(
        [sys.executable, "-m", "spotwise", "sweep", "run", str(path), *MARKET,
         "--scale", "10", "--workers", "2", "--heartbeat-s", "1", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    trial_dir = store_file.parent / "sweeps" / "kill" / "trial-00000" / "ckpt"
    deadline = time.monotonic() + 120
    victim = None
    while time.monotonic() < deadline and victim is None:
        time.sleep(0.2)
        if not any(trial_dir.glob("step-*")):
            continue  # kill it once it has a checkpoint to lose work past
        running = [j for j in jobs_of(store_file, "kill") if j.trial == 0]
        if running and running[0].status == "running":
            with open_operational(store_file, read_only=True) as market:
                row = market.query(
                    "SELECT supervisor_pid FROM jobs WHERE job_id = ?", [running[0].job_id]
                )
            victim = int(row["supervisor_pid"][0])
    assert victim is not None, "trial 0 never checkpointed"
    os.kill(victim, signal.SIGKILL)
    stdout, stderr = sweep.communicate(timeout=240)
    # the killed worker's exit code is reported; the sweep itself finished
    assert "workers exited with" in stderr and "-9" in stderr, stderr
    report = json.loads(stdout)
    assert [t["state"] for t in report["trials"]] == ["complete"]
    first = report["trials"][0]
    assert first["attempts"] == 2
    study = optuna.load_study(
        study_name="kill", storage=f"sqlite:///{store_file.parent / 'sweeps/kill/study.db'}"
    )
    retry = [t for t in study.trials if original_number(t) == 0][-1]
    assert retry.user_attrs["started_at_step"] > 0  # resumed, not restarted
    statuses = sorted(j.status for j in jobs_of(store_file, "kill") if j.trial == 0)
    assert statuses == ["cancelled", "completed"]  # the orphan was stopped, not left running
    plain = reference_run_with(tmp_path / "plain", [*train[3:], "--hidden", "32"])
    assert retry.user_attrs["digest"] == plain["digest"]
    assert retry.value == plain["value"]


def reference_run_with(ckpt: Path, args: list[str]) -> dict:
    from spotwise.executor.supervise.replay import run_under_replay

    run = run_under_replay(
        [sys.executable, "-m", "spotwise.executor.examples.train_mlp", *args, "--ckpt", str(ckpt)],
        [],
        lead_s=2,
        grace_s=5,
    )
    done = run.launches[-1].event("done")
    assert done is not None
    return done


@pytest.mark.e2e
def test_the_sweep_demo_reports_its_trials_and_reruns_the_best_bit_for_bit(
    store_file: Path,
) -> None:
    """The demo's machinery on one of its trials, where the replay preempts it (its full run,
    8 trials, is `spotwise sweep demo --json`)."""
    from spotwise.core import settings
    from spotwise.executor.sweeps.demo import run_sweep_demo
    from spotwise.pricing.store import MarketStore

    MarketStore.open(store_file).close()
    result = run_sweep_demo(
        store_file,
        settings.bundled_traces(),
        lambda _: None,
        lrs=(0.003,),
        widths=(32,),
        start_hours=204.8,
        spot_price=0.918,
        on_demand_price=3.06,
    ).to_dict()
    assert result["trials"] == result["completed"] == 1
    assert result["preempted_trials"] == 1 and result["preemptions"] >= 2
    assert result["steps_lost"] == 0
    assert result["best_rerun_identical"] is True
    assert result["best"]["params"]["lr"] == 0.003
    assert result["simulated"] is True
    assert 0 < result["cost_usd"] < result["on_demand_cost_usd"]


def test_no_trial_starts_once_the_ledger_says_the_budget_is_spent(
    cli: CliRun, tmp_path: Path, store_file: Path
) -> None:
    path = spec(
        tmp_path,
        "budget",
        f"""trials = 4
command = ["{sys.executable}", "{TASK}", "--x", "{{x}}", "--steps", "2", "--sleep", "0.5"]
[sampler]
type = "random"
seed = 0
[params]
x = {{ type = "float", low = 0.0, high = 1.0 }}
""",
    )
    # a trial is about 1 s of wall time, 1000 cloud s at 1000×: $0.25 at $0.9/h
    result = cli("sweep", "run", str(path), *MARKET, "--scale", "1000", "--budget", "0.1", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert len(report["trials"]) == 1 and report["completed"] == 1
    assert report["cost_usd"] > 0.1
    assert "budget reached" in result.stderr


def test_a_sweep_deadline_is_shared_among_the_trials_left(tmp_path: Path, store_file: Path) -> None:
    """Early trials get slack to wait for spot; once the sweep's time is nearly spent, a trial's
    deadline leaves no room but on-demand."""
    from spotwise.executor.sweeps.sweep import ReplayMarket, SweepConfig, SweepSource, SweepWorker

    path = spec(
        tmp_path,
        "slack",
        f"""trials = 4
compute_hours = 1.0
command = ["{sys.executable}", "{TASK}", "--x", "{{x}}"]
[sampler]
type = "random"
[params]
x = {{ type = "float", low = 0.0, high = 1.0 }}
""",
    )
    config = SweepConfig(
        source=SweepSource(spec_file=str(path)),
        store=str(store_file),
        storage=f"sqlite:///{tmp_path / 'study.db'}",
        root=str(tmp_path / "slack"),
        market=ReplayMarket(traces="unused"),
        workers=2,
        deadline_hours=12.0,
    )
    worker = SweepWorker(config, lambda _: None)
    assert worker.trial_deadline_hours() == pytest.approx(12.0 / 2)  # 4 trials, 2 workers
    worker.clock.hours = 9.0
    assert worker.trial_deadline_hours() == pytest.approx(3.0 / 2)
    worker.clock.hours = 11.5  # less than one trial's work left: on-demand at once
    assert worker.trial_deadline_hours() == pytest.approx((1.0 + 0.2) * 1.001)
    worker.clock.hours = 12.0
    assert worker._next_trial() is None and "deadline reached" in str(worker.stop_reason)


def test_workers_share_a_study_in_postgresql_as_machines_would(
    cli: CliRun, tmp_path: Path, store_file: Path, postgres_server
) -> None:
    """The storage URL for many machines: two `sweep run`s (as on two machines) join one study
    in a PostgreSQL database and run its queue between them, each point once."""
    url = postgres_server.fresh_database()
    out = tmp_path / "out"
    out.mkdir()
    args = (
        "sweep", "run", "--grid", "shard=0..3", "--name", "shared", "--storage", url, *MARKET,
        "--scale", "100", "--json", "--", sys.executable, TASK, "--shard", "{shard}", "--out",
        str(out), "--sleep", "0.5",
    )  # fmt: skip
    env = {**os.environ, "SPOTWISE_STORE": str(store_file)}
    command = [sys.executable, "-m", "spotwise", *args]
    machines = [
        subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        for _ in range(2)
    ]
    ended = [m.communicate(timeout=180) for m in machines]
    assert all(m.returncode == 0 for m in machines), [e[1][-2000:] for e in ended]
    assert sorted((out / "writes.log").read_text().split()) == ["0", "1", "2", "3"]
    shown = cli("sweep", "show", "shared", "--storage", url, "--json")
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert [t["state"] for t in report["trials"]] == ["complete"] * 4
    assert url.split("@")[0] not in shown.stderr  # no password in what it prints


def queue_args(out: Path, *extra: str) -> tuple[str, ...]:
    return (
        "sweep", "run", "--grid", "shard=0..1", *extra, *MARKET, "--json", "--",
        sys.executable, TASK, "--shard", "{shard}", "--out", str(out), "--sleep", "0",
    )  # fmt: skip


@pytest.mark.e2e  # 18-27 s of a worker: in make test-e2e (CI), to keep make test under 10 min
def test_different_unnamed_queues_never_meet_and_the_same_one_resumes(
    cli: CliRun, tmp_path: Path
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    ran = cli(*queue_args(first))
    assert ran.returncode == 0, ran.stderr
    name = json.loads(ran.stdout)["sweep"]
    assert name.startswith("queue-") and f"work queue {name} (named from its" in ran.stderr
    other = cli(*queue_args(second))  # another command: another queue, its own tasks run
    assert other.returncode == 0, other.stderr
    report = json.loads(other.stdout)
    assert report["sweep"] != name
    assert [t["state"] for t in report["trials"]] == ["complete"] * 2
    assert sorted((second / "writes.log").read_text().split()) == ["0", "1"]
    again = cli(*queue_args(first))  # the same queue again: resumed, nothing run twice
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["sweep"] == name
    assert sorted((first / "writes.log").read_text().split()) == ["0", "1"]


@pytest.mark.e2e  # 18-27 s of a worker: in make test-e2e (CI), to keep make test under 10 min
def test_a_named_queue_of_another_definition_is_refused_until_started_over(
    cli: CliRun, tmp_path: Path
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    assert cli(*queue_args(first, "--name", "nightly")).returncode == 0
    refused = cli(*queue_args(second, "--name", "nightly"))
    assert refused.returncode == 1
    line = refused.stderr.strip().splitlines()[-1]
    assert "work queue 'nightly'" in line and "was made from another definition (command" in line
    assert "give it another --name, or add --start-over" in line
    assert not (second / "writes.log").exists()
    over = cli(*queue_args(second, "--name", "nightly", "--start-over"))
    assert over.returncode == 0, over.stderr
    assert "nightly: the stored one deleted, starting over" in over.stderr
    report = json.loads(over.stdout)
    assert [t["state"] for t in report["trials"]] == ["complete"] * 2
    assert sorted((second / "writes.log").read_text().split()) == ["0", "1"]
    aws = cli(*queue_args(second, "--name", "nightly", "--start-over", "--launcher", "aws"))
    assert aws.returncode == 1 and "on aws they are in the bucket" in aws.stderr


@pytest.mark.parametrize("kind", ["queue", "sweep"])
def test_a_queue_or_sweep_whose_every_task_failed_exits_1(
    cli: CliRun, tmp_path: Path, kind: str
) -> None:
    fails = [sys.executable, "-c", "import sys; sys.exit(3)"]
    if kind == "queue":
        args: tuple[str, ...] = ("--grid", "x=1,2", "--", *fails, "{x}")
    else:
        command = ", ".join(json.dumps(a) for a in [*fails, "{x}"])
        path = spec(
            tmp_path,
            "failing",
            f"""command = [{command}]
[sampler]
type = "grid"
[params]
x = {{ type = "categorical", choices = [1, 2] }}
""",
        )
        args = (str(path),)
    result = cli("sweep", "run", *MARKET, "--max-retry", "0", "--json", *args)
    assert result.returncode == 1
    report = json.loads(result.stdout)  # the report is still printed
    assert [t["state"] for t in report["trials"]] == ["fail"] * 2
    assert "exit code 3" in report["trials"][0]["why"]
    what = "task" if kind == "queue" else "trial"
    line = result.stderr.strip().splitlines()[-1]
    assert f"every {what} failed (2); {what} 0: {sys.executable}: exit code 3" in line, line
    assert f"spotwise sweep show {report['sweep']}" in line

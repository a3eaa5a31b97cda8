"""How a supervised job ends when it is not by finishing: SIGTERM or Ctrl-C to ``spotwise run``,
``spotwise jobs cancel``, a hung command, a command that cannot start. Real processes, real
signals, a real store; no job is left ``running`` and no process is left behind."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from spotwise.executor.errors import Cancelled
from spotwise.pricing.errors import StoreError
from spotwise.pricing.operational import open_operational
from tests.conftest import CliRun
from tests.executor.supervise.test_supervisor import market, supervise

# Each writes its pid whole (a temporary file renamed), so a reader never sees it half-written.
WRITE_PID = (
    "import os, sys, time; part = sys.argv[1] + '.part'; open(part, 'w').write(str(os.getpid()))"
    "; os.replace(part, sys.argv[1])\n"
)
QUIET = WRITE_PID + "time.sleep(1e5)"
CHATTY = WRITE_PID + "while True: print('loss 0.1 ' * 20, flush=True)"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie has ended: only its parent has not read its exit status yet
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(") ")[-1][0] != "Z"


def wait_for(condition, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def pid_in(pid_file: Path) -> int | None:
    """The pid the child wrote to ``pid_file`` (None before it has)."""
    try:
        return int(pid_file.read_text())
    except (OSError, ValueError):
        return None


def child_pid(pid_file: Path, seconds: float = 60.0) -> int:
    """The child's pid, once it has written it."""
    wait_for(lambda: pid_in(pid_file) is not None, seconds)
    pid = pid_in(pid_file)
    assert pid is not None
    return pid


@contextlib.contextmanager
def running(
    store: Path, pid_file: Path, *command: str, options: tuple[str, ...] = ()
) -> Iterator[subprocess.Popen]:
    """``spotwise run`` (see :func:`start_run`), stopped with its command afterwards whatever
    the test's outcome: the command runs in a session of its own, named by its pid file."""
    run = start_run(store, *command, options=options)
    try:
        yield run
    finally:
        if run.poll() is None:
            run.kill()
        run.communicate(timeout=60)
        child = pid_in(pid_file)
        if child is not None and alive(child):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child, signal.SIGKILL)


def jobs(store: Path) -> list[dict]:
    with open_operational(store, read_only=True) as market_store:
        frame = market_store.query("SELECT job_id, status, ended FROM jobs")
    return frame.to_dict("records")


def recorded_group(store: Path) -> int | None:
    """The process group the ledger says the job's command runs in (None before launch)."""
    try:
        with open_operational(store, read_only=True) as market_store:
            rows = market_store.records("SELECT worker_pgid FROM jobs")
    except StoreError:
        return None  # the supervisor is writing
    return rows[0]["worker_pgid"] if rows else None


def start_run(store: Path, *command: str, options: tuple[str, ...] = ()) -> subprocess.Popen:
    env = {**os.environ, "SPOTWISE_STORE": str(store)}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "spotwise",
            "run",
            "--pools",
            "us-east-1a_v100_1",
            "--start-hours",
            "100",
            *options,
            "--",
            *command,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "child"), [(signal.SIGTERM, QUIET), (signal.SIGINT, CHATTY)])
def test_a_signal_to_spotwise_run_stops_the_job_and_records_it_cancelled(
    store_file: Path, tmp_path: Path, signum: int, child: str
) -> None:
    pid_file = tmp_path / "child.pid"
    command = (sys.executable, "-c", child, str(pid_file))
    with running(store_file, pid_file, *command, options=("--cancel-grace", "5")) as run:
        pid = child_pid(pid_file)
        run.send_signal(signum)
        _, stderr = run.communicate(timeout=60)
        assert run.returncode == 128 + signum, stderr
        assert "cancelled by" in stderr and "Traceback" not in stderr
        wait_for(lambda: not alive(pid), 10)
    [job] = jobs(store_file)
    assert job["status"] == "cancelled" and job["ended"] is not None


@pytest.mark.slow
def test_a_cancelled_job_gets_its_notice_and_checkpoints_first(tmp_path: Path) -> None:
    supervisor, command, store, _ = supervise(tmp_path, market("1" * 120), work_s=30.0)

    def stepping() -> bool:
        instance = supervisor._instance
        return instance is not None and any(e["event"] == "first_step" for e in instance.events)

    def cancel_once_stepping() -> None:
        wait_for(stepping)
        time.sleep(1.0)
        supervisor.cancel()

    threading.Thread(target=cancel_once_stepping, daemon=True).start()
    with pytest.raises(Cancelled, match="cancelled by SIGTERM"):
        supervisor.run(command)
    # the fake job writes its state only when it stops: a file with some work in it means it
    # saved on the notice (how much depends on how loaded the machine is)
    saved = float((tmp_path / "progress").read_text())
    assert 0.0 < saved < 30.0
    assert [j["status"] for j in jobs(store)] == ["cancelled"]
    assert supervisor.report.lost_hours == 0.0


# A stranger's guarded script that trains until stopped, printing no event of its own;
# argv: its checkpoint folder.
TRAINS_ON = """\
import sys, time
import torch
from torch.utils.data import DataLoader, TensorDataset
from spotwise.executor import guard

model = torch.nn.Linear(2, 1)
loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)
with guard([sys.argv[1]], model=model, loader=loader, epochs=100_000) as g:
    for (x,) in g.batches():
        time.sleep(0.02)
        g.step()
"""


@pytest.mark.slow
def test_a_cancel_that_checkpointed_loses_no_work_and_its_checkpoints_are_sized(
    tmp_path: Path,
) -> None:
    from spotwise.executor.checkpoint.places import LocalFolder
    from spotwise.executor.ledger.ledger import job_report

    ckpt = tmp_path / "ckpt"
    supervisor, _, store, ledger = supervise(
        tmp_path, market("1" * 120), work_s=30.0, checkpoints=(LocalFolder(ckpt),)
    )

    def cancel_once_stepping() -> None:
        wait_for(lambda: (i := supervisor._instance) is not None and i.steps_taken() > 0)
        supervisor.cancel()

    threading.Thread(target=cancel_once_stepping, daemon=True).start()
    script = tmp_path / "train.py"
    script.write_text(TRAINS_ON)
    with pytest.raises(Cancelled):
        supervisor.run([sys.executable, str(script), str(ckpt)])
    with open_operational(store) as market_store:
        report = job_report(market_store, ledger.job_id)
    assert report.status == "cancelled"
    assert report.lost_work_hours == 0.0  # it checkpointed on the cancel's notice
    assert report.checkpoints_sized
    assert report.checkpoint_bytes == sum(f.stat().st_size for f in ckpt.rglob("*") if f.is_file())
    assert report.checkpoint_bytes > 0


@pytest.mark.slow
def test_a_job_that_stops_stepping_is_killed_and_resumes_from_its_checkpoint(
    tmp_path: Path,
) -> None:
    supervisor, command, store, _ = supervise(
        tmp_path, market("1" * 120), work_s=1.5, stall_timeout_s=2.0, max_failures=2
    )
    report = supervisor.run([*command, "--hang-after-s", "1.0"])
    assert report.completed and report.failures == 1 and report.instances == 2
    with open_operational(store, read_only=True) as market_store:
        details = market_store.query("SELECT detail FROM ledger WHERE kind = 'failure'")
    assert "no step heartbeat" in details.detail[0]


@pytest.mark.slow
def test_a_stepping_job_is_never_taken_for_hung(tmp_path: Path) -> None:
    supervisor, command, _, _ = supervise(
        tmp_path, market("1" * 120), work_s=4.0, stall_timeout_s=2.0
    )
    report = supervisor.run(command)
    assert report.completed and report.failures == 0 and report.instances == 1


@pytest.mark.slow
def test_a_quiet_command_is_stopped_by_the_stall_timeout(cli: CliRun, tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    result = cli(
        "run",
        "--stall-timeout",
        "2",
        "--max-failures",
        "1",
        "--",
        sys.executable,
        "-c",
        QUIET,
        str(pid_file),
    )
    assert result.returncode == 1
    assert "no step heartbeat for 2 s" in result.stderr and "Traceback" not in result.stderr
    assert not alive(child_pid(pid_file, 0))


@pytest.mark.slow
def test_a_command_that_does_not_exist_gives_one_line_and_a_failed_job(
    cli: CliRun, store_file: Path
) -> None:
    result = cli("run", "--", "/nonexistent")
    assert result.returncode == 1
    assert "cannot start '/nonexistent'" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) <= 3
    assert [j["status"] for j in jobs(store_file)] == ["failed"]


@pytest.mark.slow
def test_jobs_cancel_stops_a_running_job_and_everything_it_runs(
    cli: CliRun, store_file: Path, tmp_path: Path
) -> None:
    pid_file = tmp_path / "child.pid"
    with running(store_file, pid_file, sys.executable, "-c", QUIET, str(pid_file)) as run:
        pid = child_pid(pid_file)
        [job] = jobs(store_file)
        result = cli("jobs", "cancel", job["job_id"])
        assert result.returncode == 0, result.stderr
        assert "cancelled" in result.stdout
        run.communicate(timeout=60)
        assert not alive(pid)
    assert jobs(store_file)[0]["status"] == "cancelled"
    again = cli("jobs", "cancel", job["job_id"])
    assert again.returncode == 1 and "nothing to cancel" in again.stderr


@pytest.mark.slow
def test_jobs_cancel_closes_the_row_of_a_supervisor_that_was_killed(
    cli: CliRun, store_file: Path, tmp_path: Path
) -> None:
    pid_file = tmp_path / "child.pid"
    with running(store_file, pid_file, sys.executable, "-c", QUIET, str(pid_file)) as run:
        wait_for(lambda: pid_in(pid_file) is not None and recorded_group(store_file) is not None)
        run.kill()  # kill -9: no chance to record anything, nor to stop its command
        run.wait(timeout=30)
        child = child_pid(pid_file)
        assert alive(child)
        [job] = jobs(store_file)
        assert job["status"] == "running"
        result = cli("jobs", "cancel", job["job_id"])
        assert result.returncode == 0 and "already gone" in result.stdout
        assert "its command was stopped" in result.stdout
        wait_for(lambda: not alive(child), 10)
    assert jobs(store_file)[0]["status"] == "cancelled"
    assert json.loads(cli("jobs", "list", "--json").stdout)[0]["status"] == "cancelled"

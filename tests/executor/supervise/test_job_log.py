"""A job's log as a user reads it: each instance opened by a line naming it (a refused launch
left out), a fleet job's live lines named by the job, and `jobs show` counting instances from
their launch."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest

from spotwise.executor.launchers.base import Placement
from spotwise.executor.launchers.local import Replay
from spotwise.executor.ledger.ledger import EntryKind, JobInfo, Ledger, job_report
from spotwise.executor.supervise.job_log import JobLog, instance_logs, log_folder
from spotwise.executor.supervise.supervised import supervise
from spotwise.executor.supervise.supervisor import SupervisorConfig
from spotwise.policy.service.client import in_process_for
from spotwise.policy.service.schemas import JobTerms
from spotwise.policy.traces import Pool, TraceSet
from spotwise.pricing.operational import open_operational
from tests.conftest import CliRun

GAP, SCALE, PAST = 60, 60.0, 240
FAKE_JOB = Path(__file__).parents[1] / "fake_job.py"
INFO = JobInfo(
    name="t",
    command="train.py",
    launcher="aws",
    compute_hours=1,
    deadline_hours=3,
    on_demand_price=3.06,
    simulated=False,
)


def test_each_instance_is_marked_in_the_log_and_a_refused_launch_is_left_out(
    store_file: Path, cli_in_process: CliRun
) -> None:
    store_file.parent.mkdir(parents=True)
    ledger = Ledger(store_file, INFO)
    stream = io.StringIO()
    log = JobLog(log_folder(store_file, ledger.job_id), stream)
    first = log.for_instance(Placement(market="spot", pool="us-east-1a", price=0.9))
    log.launched("i-0first")
    first("epoch 1")
    log.for_instance(Placement(market="spot", pool="us-east-1c", price=0.9))  # refused
    second = log.for_instance(Placement(market="spot", pool="us-east-1b", price=0.9))
    log.launched("i-0second")
    second("epoch 2")
    log.close()
    assert [entry.marker() for entry in instance_logs(log.folder)] == [
        "--- instance 1: spot in us-east-1a (i-0first) ---",
        "--- instance 2: spot in us-east-1b (i-0second) ---",
    ]
    shown = cli_in_process("jobs", "logs", ledger.job_id)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        "--- instance 1: spot in us-east-1a (i-0first) ---",
        "[spot in us-east-1a] epoch 1",
        "--- instance 2: spot in us-east-1b (i-0second) ---",
        "[spot in us-east-1b] epoch 2",
    ]


def test_jobs_show_counts_a_running_instance_from_its_launch(
    store_file: Path, cli_in_process: CliRun
) -> None:
    store_file.parent.mkdir(parents=True)
    ledger = Ledger(store_file, INFO)
    ledger.record(EntryKind.LAUNCH, pool="us-east-1a", market="spot", detail="i-0abc")
    with open_operational(store_file, read_only=True) as market:
        assert job_report(market, ledger.job_id).instances == 1  # was 0 until it ended
    shown = cli_in_process("jobs", "show", ledger.job_id)
    assert "1 instance," in shown.stdout, shown.stderr
    ledger.record(
        EntryKind.INSTANCE, pool="us-east-1a", market="spot", hours=0.5, price=0.9, cost_usd=0.45
    )
    with open_operational(store_file, read_only=True) as market:
        assert job_report(market, ledger.job_id).instances == 1  # not twice
    no_output = cli_in_process("jobs", "logs", ledger.job_id)
    assert no_output.returncode == 0
    assert f"job {ledger.job_id}: no instance has started yet" in no_output.stderr


@pytest.mark.slow  # a replayed job of 5 s, preempted once
def test_a_fleet_jobs_lines_name_it_and_its_relaunch_is_a_second_marked_instance(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], cli_in_process: CliRun, store_file: Path
) -> None:
    past = ("1" * 9 + "0") * (PAST // 10)
    traces = TraceSet(
        pools=(Pool(name="z0"),),
        gap_seconds=GAP,
        available=np.array([[c == "1" for c in past + "1" * 3 + "0" + "1" * 60]]),
    )
    work_s = 5.0
    terms = JobTerms(
        compute_hours=work_s * SCALE / 3600,
        deadline_hours=60 * SCALE / 3600,
        changeover_hours=1 / 60,
        spot_price=1.0,
        on_demand_price=3.0,
    )
    store_file.parent.mkdir(parents=True)
    train = tmp_path / "train.py"  # a line of its own, then the fake job's events
    train.write_text(
        "import runpy, sys\nprint('loss 0.5', flush=True)\n"
        f"sys.argv[0] = {str(FAKE_JOB)!r}\nrunpy.run_path(sys.argv[0], run_name='__main__')\n"
    )
    command = [sys.executable, str(train), "--work-s", str(work_s)]
    command += ["--state", str(tmp_path / "progress")]
    done = supervise(
        command,
        store_path=store_file,
        # paced by the job's steps (1.2 cloud s each): taken back after 3 s of its work, however
        # long a busy machine takes to decide and start it
        launcher=Replay(
            traces=traces, start_hours=PAST * GAP / 3600, scale=SCALE, step_s=1.2
        ).launcher(),
        config=SupervisorConfig(job=terms, lead_s=0.4, grace_s=2.0, move_check_s=None),
        client_for=in_process_for,
        name="eval",
        progress=lambda _: None,
        fleet="lab",
        tier="normal",
    )
    assert done.report.preemptions == 1 and done.report.instances == 2
    err = capfd.readouterr().err
    assert "[eval: spot in z0] loss 0.5" in err  # which of the fleet's jobs printed it
    shown = cli_in_process("jobs", "logs", done.report.job_id)
    markers = [line for line in shown.stdout.splitlines() if line.startswith("--- ")]
    assert markers == ["--- instance 1: spot in z0 ---", "--- instance 2: spot in z0 ---"]

"""The supervisor on the local launcher: real subprocesses and signals, hand-made traces, a
real store for the ledger."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from spotwise.executor.checkpoint.places import LocalFolder
from spotwise.executor.errors import ExecutorError, NoCapacity
from spotwise.executor.launchers.local import Replay
from spotwise.executor.ledger.ledger import JobInfo, JobStatus, Ledger, job_report, list_jobs
from spotwise.executor.ledger.prices import PriceBook
from spotwise.executor.supervise.supervisor import Supervisor, SupervisorConfig
from spotwise.policy.service.client import in_process_for
from spotwise.policy.service.schemas import DecisionRequest, JobTerms
from spotwise.policy.traces import Pool, TraceSet
from spotwise.pricing.operational import open_operational
from spotwise.pricing.quotes import Quote
from tests.conftest import CliRun

GAP, SCALE = 60, 60.0  # one tick per wall second
PAST = 240  # ticks of history before the job starts
FAKE_JOB = Path(__file__).parents[1] / "fake_job.py"


def market(*rows: str) -> TraceSet:
    """Pools from strings of 1/0 (one char per tick), each after the same long past."""
    past = ("1" * 9 + "0") * (PAST // 10)
    available = np.array([[c == "1" for c in past + row] for row in rows])
    pools = tuple(Pool(name=f"z{i}") for i in range(len(rows)))
    return TraceSet(pools=pools, gap_seconds=GAP, available=available)


def job(work_s: float, deadline_s: float = 60.0) -> JobTerms:
    return JobTerms(
        compute_hours=work_s * SCALE / 3600,
        deadline_hours=deadline_s * SCALE / 3600,
        changeover_hours=1 / 60,
        spot_price=1.0,
        on_demand_price=3.0,
    )


def supervise(
    tmp_path: Path,
    traces: TraceSet,
    work_s: float,
    step_s: float | None = None,
    deadline_s: float = 60.0,
    **config: object,
):
    """A supervisor over ``traces`` (replayed at ``SCALE``, or paced at ``step_s`` cloud
    seconds per step of the fake job) and the fake job's command."""
    store = tmp_path / "store.duckdb"
    terms = job(work_s, deadline_s)
    ledger = Ledger(
        store,
        JobInfo(
            name="fake",
            command="fake_job",
            launcher="local",
            compute_hours=terms.compute_hours,
            deadline_hours=terms.deadline_hours,
            on_demand_price=terms.on_demand_price,
            simulated=True,
            prices=PriceBook.flat(traces.names, terms.spot_price, terms.on_demand_price),
        ),
    )
    settings = {"lead_s": 0.4, "grace_s": 2.0, "move_check_s": None, **config}
    supervisor = Supervisor(
        Replay(traces=traces, start_hours=PAST * GAP / 3600, scale=SCALE, step_s=step_s).launcher(),
        in_process_for,
        SupervisorConfig(job=terms, **settings),  # type: ignore[arg-type]
        ledger,
    )
    command = [sys.executable, str(FAKE_JOB), "--work-s", str(work_s)]
    command += ["--state", str(tmp_path / "progress")]
    return supervisor, command, store, ledger


@pytest.mark.slow
def test_a_preempted_job_gets_its_notice_and_is_relaunched_to_completion(tmp_path: Path) -> None:
    traces = market("1" * 3 + "0" + "1" * 60)  # taken back after 3 s of its work
    # (paced by the job's steps: however long a busy machine takes to decide and start it)
    supervisor, command, store, ledger = supervise(tmp_path, traces, work_s=5.0, step_s=1.2)
    report = supervisor.run(command)
    assert report.completed and report.preemptions == 1 and report.instances >= 2
    assert report.lost_hours == 0.0  # the notice came in time to save progress
    with open_operational(store) as market_store:
        ledger_report = job_report(market_store, ledger.job_id)
    assert ledger_report.status == "completed" and ledger_report.simulated
    assert ledger_report.notices == 1 and ledger_report.preemptions == 1
    assert ledger_report.cost_usd < ledger_report.on_demand_cost_usd
    assert ledger_report.markets["spot"].hours > 0


@pytest.mark.slow
def test_after_n_preemptions_it_falls_back_to_on_demand(tmp_path: Path) -> None:
    traces = market("1" * 3 + "0" + "1" * 60)
    # paced by the job's steps: a busy machine that starts the job late meets the same outage
    supervisor, command, store, ledger = supervise(
        tmp_path, traces, work_s=5.0, step_s=1.2, on_demand_after=1
    )
    report = supervisor.run(command)
    assert report.completed and report.preemptions == 1
    assert report.placements[-1] == "on-demand"
    with open_operational(store) as market_store:  # why it went there is kept
        why = job_report(market_store, ledger.job_id).on_demand_why
    assert why == ("1 preemption reached --on-demand-after 1",)


@pytest.mark.slow
def test_on_demand_while_spot_is_gone_and_back_to_spot_when_it_returns(tmp_path: Path) -> None:
    # no spot for the first eight seconds: uniform progress buys on-demand, then spot is back
    traces = market("0" * 8 + "1" * 60)
    supervisor, command, store, ledger = supervise(
        tmp_path, traces, work_s=10.0, deadline_s=20.0, spot_check_s=0.5, policy="uniform_progress"
    )
    report = supervisor.run(command)
    assert report.completed and report.preemptions == 0
    assert report.placements[:2] == ["on-demand", "spot in z0"]
    assert report.migrations == 1 and report.lost_hours == 0.0
    with open_operational(store) as market_store:
        ledger_report = job_report(market_store, ledger.job_id)
        (why,) = ledger_report.on_demand_why  # the policy's reason, as it gave it
        assert why.startswith("the policy: "), why
        # the on-demand instance was released: billed only until the job left it
        (listed,) = [j for j in list_jobs(market_store) if j.job_id == ledger.job_id]
    on_demand = ledger_report.markets["on-demand"]
    assert 0 < on_demand.hours < 10.0 * SCALE / 3600
    assert ledger_report.markets["spot"].hours > 0
    assert ledger_report.migrations == 1
    # `jobs list` and `fleet status` read the same: one move, the hours on on-demand
    assert listed.migrations == 1
    assert listed.on_demand_hours == pytest.approx(on_demand.hours, abs=1e-4)  # (rounded)


@pytest.mark.slow
@pytest.mark.e2e
def test_a_replay_paced_by_steps_takes_the_same_course_on_a_machine_three_times_slower(
    tmp_path: Path,
) -> None:
    """Paced by the job's steps, the replay meets the same trace: the same placements,
    notices and preemptions, whether a step takes 0.02 s or 0.06 s of wall time."""
    traces = market("1" * 3 + "0" + "1" * 60, "1" * 5 + "0" * 3 + "1" * 56)
    reports = []
    for sleep_s in (0.02, 0.06):
        folder = tmp_path / f"sleep-{sleep_s}"
        folder.mkdir()
        supervisor, command, store, ledger = supervise(folder, traces, work_s=5.0, step_s=1.2)
        report = supervisor.run([*command, "--step-sleep-s", str(sleep_s)])
        with open_operational(store) as market_store:
            reports.append((report, job_report(market_store, ledger.job_id)))
    (fast, fast_ledger), (slow, slow_ledger) = reports
    assert fast.completed and slow.completed
    assert fast.preemptions == slow.preemptions == 2  # z0 at its fourth tick, z1 at its sixth
    assert fast.placements == slow.placements
    assert fast_ledger.notices == slow_ledger.notices == 2
    # A notice lands within a step of the same place; 250 steps of 1.2 cloud seconds each.
    assert slow.cost_usd == pytest.approx(fast.cost_usd, rel=0.02)
    assert fast.progress_hours == pytest.approx(250 * 1.2 / 3600, rel=0.02)


def test_a_real_error_is_reported_and_not_relaunched_forever(tmp_path: Path) -> None:
    supervisor, command, store, ledger = supervise(tmp_path, market("1" * 60), work_s=5.0)
    with pytest.raises(ExecutorError, match=r"exit code 3 \(not a preemption\), 2 times"):
        supervisor.run([*command, "--fail-with", "3"])
    assert supervisor.report.instances == 2
    with open_operational(store) as market_store:
        jobs = list_jobs(market_store)
    assert {j.job_id: j.status for j in jobs}[ledger.job_id] == "failed"


def dear_and_cheap_pools(dear_future: str, cheap_down_ticks: int) -> tuple[TraceSet, PriceBook]:
    """z0 at $2.50/h, up as ``dear_future`` says; z1 at $0.50/h, down for the job's first
    ``cheap_down_ticks`` ticks, then up (both came and went alike before the job)."""
    traces = market(dear_future, "0" * cheap_down_ticks + "1" * (60 - cheap_down_ticks))
    book = PriceBook.flat(traces.names, 1.0, 3.0)
    book = replace(
        book,
        spot={
            "z0": Quote(usd_per_hour=2.5, source="the test's dear pool"),
            "z1": Quote(usd_per_hour=0.5, source="the test's cheap pool"),
        },
    )
    return traces, book


@pytest.mark.slow
def test_it_moves_to_a_cheaper_pool_that_came_back_and_the_ledger_says_why(
    tmp_path: Path,
) -> None:
    # Neither pool takes the job away: the move is the decision core's.
    traces, book = dear_and_cheap_pools("1" * 60, cheap_down_ticks=3)
    supervisor, command, store, ledger = supervise(
        tmp_path, traces, work_s=10.0, policy="core", move_check_s=0.2, prices=book
    )
    report = supervisor.run(command)
    assert report.completed and report.preemptions == 0
    assert report.placements[:2] == ["spot in z0", "spot in z1"]
    with open_operational(store) as market_store:
        ledger_report = job_report(market_store, ledger.job_id)
        moves = market_store.query(
            "SELECT detail FROM ledger WHERE job_id = ? AND kind = 'migration'", [ledger.job_id]
        )
    assert ledger_report.migrations == report.migrations == 1
    why = str(moves["detail"].iloc[0])
    assert "moves it to z1" in why and "spot in z1: $" in why and "stay in z0: $" in why


@pytest.mark.slow
def test_with_moves_off_it_stays_until_preempted(tmp_path: Path) -> None:
    traces, book = dear_and_cheap_pools("1" * 60, cheap_down_ticks=3)
    supervisor, command, _, _ = supervise(
        tmp_path, traces, work_s=6.0, policy="core", move_check_s=None, prices=book
    )
    report = supervisor.run(command)
    assert report.completed and (report.migrations, report.preemptions) == (0, 0)
    assert report.placements == ["spot in z0"]


@pytest.mark.slow
def test_a_move_stays_a_move_when_the_pool_is_taken_back_while_it_checkpoints(
    tmp_path: Path,
) -> None:
    # The move starts about 3 s in (z1, the cheaper pool, is back from the fourth tick) and the
    # job takes 10 s to get out after saving: z0's own notice comes meanwhile (its pool goes at
    # 11 s), and the job is out before the kill. It must not get a second SIGTERM, which would
    # now end it uncleanly. (A busy machine may start the move several seconds late and still
    # meet this course.)
    traces, book = dear_and_cheap_pools("1" * 11 + "0" + "1" * 48, cheap_down_ticks=3)
    supervisor, command, store, ledger = supervise(
        tmp_path, traces, work_s=6.0, policy="core", move_check_s=0.2, prices=book, grace_s=10.0
    )
    report = supervisor.run([*command, "--exit-delay-s", "10"])
    assert report.completed
    assert (report.migrations, report.preemptions) == (1, 0)
    assert report.placements[:2] == ["spot in z0", "spot in z1"]
    with open_operational(store) as market_store:
        ledger_report = job_report(market_store, ledger.job_id)
    assert (ledger_report.migrations, ledger_report.preemptions) == (1, 0)
    assert ledger_report.notices == 1  # z0's own, which came while the job checkpointed


@pytest.mark.slow
def test_jobs_list_and_show_read_the_ledger(tmp_path: Path, cli: CliRun, store_file: Path) -> None:
    traces = market("1" * 60, "1" * 60, "1" * 60)
    supervisor, command, store, ledger = supervise(tmp_path, traces, work_s=1.0)
    [used] = {p.removeprefix("spot in ") for p in supervisor.run(command).placements}
    env = {"SPOTWISE_STORE": str(store)}
    listed = cli("jobs", "list", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert [j["job_id"] for j in json.loads(listed.stdout)] == [ledger.job_id]
    shown = cli("jobs", "show", ledger.job_id, "--json", env=env)
    report = json.loads(shown.stdout)
    assert report["status"] == "completed" and report["instances"] == 1
    assert set(report["breakdown"]) == {"compute", "storage", "recovery"}
    text = cli("jobs", "show", ledger.job_id, env=env).stdout
    assert "simulated on a replayed market" in text
    assert "reference p3.2xlarge price (not a quote)" in text  # the prices say what they are
    # the pool it ran in is priced, not the three of its book
    spot_lines = [line.strip() for line in text.splitlines() if line.strip().startswith("spot ")]
    assert [line.split(":")[0] for line in spot_lines] == [f"spot {used}"]
    assert "(simulated)" in cli("jobs", "list", env=env).stdout
    # no --ckpt folder: the checkpoints' size is unknown, said so, never shown as 0 MB and $0
    assert report["checkpoints_sized"] is False
    assert "checkpoints not sized" in text and "storage not counted" in text
    missing = cli("jobs", "show", "nope", env=env)
    assert missing.returncode == 1 and "no job 'nope'" in missing.stderr


@pytest.mark.slow
def test_a_jobs_local_checkpoint_folder_is_sized_into_its_storage_cost(
    tmp_path: Path, cli: CliRun
) -> None:
    folder = tmp_path / "ck"
    (folder / "step-1").mkdir(parents=True)
    (folder / "step-1" / "model.pt").write_bytes(b"0" * 2_500_000)
    traces = market("1" * 60)
    supervisor, command, store, ledger = supervise(
        tmp_path, traces, work_s=0.5, checkpoints=(LocalFolder(folder),)
    )
    supervisor.run(command)
    env = {"SPOTWISE_STORE": str(store)}
    shown = cli("jobs", "show", ledger.job_id, "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert report["checkpoints_sized"] is True and report["checkpoint_bytes"] == 2_500_000
    text = cli("jobs", "show", ledger.job_id, env=env).stdout
    assert "2.5 MB of checkpoints" in text and "storage $" in text


class _Unreadable:
    """A checkpoint place whose store cannot be listed when the job ends."""

    where = "gs://gone/ck"

    def nbytes(self) -> int:
        raise ExecutorError("sizing gs://gone/ck: 403 Forbidden")


@pytest.mark.slow
def test_checkpoints_that_cannot_be_sized_are_said_and_not_counted_as_zero(
    tmp_path: Path,
) -> None:
    said: list[str] = []
    traces = market("1" * 60)
    supervisor, command, store, ledger = supervise(
        tmp_path, traces, work_s=0.5, checkpoints=(_Unreadable(),)
    )
    supervisor.progress = said.append
    supervisor.run(command)
    with open_operational(store) as ops:
        report = job_report(ops, ledger.job_id)
    assert report.status is JobStatus.COMPLETED
    assert report.checkpoints_sized is False and report.checkpoint_bytes == 0
    assert any("gs://gone/ck not sized: sizing gs://gone/ck: 403" in line for line in said)


@pytest.mark.slow
def test_spotwise_run_supervises_a_command_on_replayed_bundled_traces(
    cli: CliRun, tmp_path: Path
) -> None:
    result = cli(
        "run",
        "--pools",
        "us-east-1a_v100_1",
        "--start-hours",
        "100",
        "--scale",
        "60",
        "--compute-hours",
        "0.05",
        "--deadline-hours",
        "1",
        "--json",
        "--",
        sys.executable,
        str(FAKE_JOB),
        "--work-s",
        "2",
        "--state",
        str(tmp_path / "progress"),
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["status"] == "completed" and report["launcher"] == "local"
    assert report["placements"][0] == "spot in us-east-1a_v100_1"
    assert report["simulated"] and report["simulation"] == (
        "replay of real availability traces of 1 pools from hour 100.0, 60× the wall clock"
    )
    assert report["name"] == "fake_job.py"  # named after its script, not the interpreter
    bad = cli("run", "--launcher", "mars", "--", "true")
    assert bad.returncode == 1 and "--launcher must be one of local, aws," in bad.stderr
    assert "torchrun, got 'mars'" in bad.stderr


class BlindReplay:
    """A replay seen as a cloud shows it: every pool looks available until a launch there is
    refused (NoCapacity where the trace is down now), as AWS does."""

    observe = "probe"

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def available(self) -> dict[str, bool]:
        return dict.fromkeys(self.inner.pools, True)

    def launch(self, placement: Any, command: Any, env: Any, log: Any = None) -> Any:
        if placement.pool is not None and not self.inner.available()[placement.pool]:
            raise NoCapacity(f"{placement.pool} is down now")
        return self.inner.launch(placement, command, env, log)


@pytest.mark.slow
def test_a_blind_supervisor_asks_down_the_launch_request_and_remembers_refusals(
    tmp_path: Path,
) -> None:
    supervisor, command, _, _ = supervise(tmp_path, market("0" * 30, "0" * 30, "1" * 30), 2.0)
    supervisor.launcher = BlindReplay(supervisor.launcher)
    requests: list[DecisionRequest] = []
    decide_with = supervisor.client_for

    def recording(*args: Any) -> Any:
        client = decide_with(*args)
        original = client.decide

        def decide(request: DecisionRequest) -> Any:
            requests.append(request)
            return original(request)

        client.decide = decide
        return client

    supervisor.client_for = recording
    report = supervisor.run(command)
    assert report.completed and report.placements == ["spot in z2"]
    first = requests[0]
    assert first.observe == "probe"
    assert all(p.seen_minutes_ago is None for p in first.pools.values())  # nothing seen yet
    assert len(requests) == 1  # z0 and z1 refused: the request's next pools, not a new decision
    assert supervisor._seen["z0"][0] is False and supervisor._seen["z1"][0] is False
    assert supervisor._seen["z2"][0] is True


class HeardOnInstance:
    """A cloud seen from outside, as AWS is: no take-back is known to the supervisor, and the
    first instance's job hears the notice itself (SIGTERM, as its IMDS watcher sends) once it
    is stepping."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.launches = inner, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def preemption(self, instance: Any) -> None:
        return None

    def launch(self, placement: Any, command: Any, env: Any, log: Any = None) -> Any:
        self.launches += 1
        instance = self.inner.launch(placement, command, env, log)
        return _NoticedWhenStepping(instance) if self.launches == 1 else instance


class _NoticedWhenStepping:
    def __init__(self, inner: Any) -> None:
        self.inner, self.sent = inner, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def poll(self) -> int | None:
        stepping = any(e.get("event") == "first_step" for e in self.inner.events)
        if stepping and not self.sent:
            self.sent = True
            self.inner.notice()
        return self.inner.poll()


@pytest.mark.slow
def test_a_notice_the_job_heard_itself_is_counted_once_with_its_preemption(
    tmp_path: Path,
) -> None:
    supervisor, command, store, ledger = supervise(tmp_path, market("1" * 60), work_s=2.0)
    supervisor.launcher = HeardOnInstance(supervisor.launcher)
    report = supervisor.run(command)
    assert report.completed and report.preemptions == 1 and report.instances == 2
    with open_operational(store) as market_store:
        ledger_report = job_report(market_store, ledger.job_id)
    assert ledger_report.preemptions == 1 and ledger_report.notices == 1


@pytest.mark.slow
def test_a_drill_sends_a_real_notice_and_the_job_resumes_where_it_was(tmp_path: Path) -> None:
    traces = market("1" * 60)  # spot never taken back: only the drill preempts
    supervisor, command, store, ledger = supervise(tmp_path, traces, work_s=3.0, drill_after_s=1.0)
    report = supervisor.run(command)
    assert report.completed and report.preemptions == 1 and report.instances == 2
    assert report.lost_hours == 0.0  # the notice went the guard's way: checkpoint, then leave
    with open_operational(store) as market_store:
        notices = market_store.query(
            "SELECT detail FROM ledger WHERE job_id = ? AND kind = 'notice'", [ledger.job_id]
        )
    assert list(notices["detail"]) == ["drill (--preempt-after)"]


# A guarded script with a tail: two steps, then after the guard's block a line appended to a
# file and a sleep (its "upload"); argv: checkpoint folder, the file, the tail's seconds.
WITH_A_TAIL = """\
import sys, time
import torch
from torch.utils.data import DataLoader, TensorDataset
from spotwise.executor import guard

model = torch.nn.Linear(2, 1)
loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)
with guard([sys.argv[1]], model=model, loader=loader) as g:
    for (x,) in g.batches():
        g.step()
with open(sys.argv[2], "a") as tail:
    tail.write("tail\\n")
time.sleep(float(sys.argv[3]))
"""


@pytest.mark.slow
def test_a_drill_never_lands_after_the_training_loop_so_the_scripts_tail_runs_once(
    tmp_path: Path,
) -> None:
    """The drill is due 0.3 s after the first step, while the script's tail (after its two
    steps) sleeps 3 s: it is not sent (the guard said its training ended), and nothing
    relaunches the script to run its tail again."""
    supervisor, _, store, ledger = supervise(
        tmp_path, market("1" * 120), work_s=1.0, drill_after_s=0.3
    )
    said: list[str] = []
    supervisor.progress = said.append
    script, tail = tmp_path / "train.py", tmp_path / "tail.txt"
    script.write_text(WITH_A_TAIL)
    report = supervisor.run([sys.executable, str(script), str(tmp_path / "ck"), str(tail), "3"])
    assert report.completed and report.instances == 1 and report.preemptions == 0
    assert tail.read_text() == "tail\n"
    assert not any(m.startswith("drill: a preemption notice") for m in said)
    assert any(m.startswith("drill: none sent: the training loop ended") for m in said)
    with open_operational(store) as market_store:
        assert job_report(market_store, ledger.job_id).notices == 0


@pytest.mark.slow
def test_drills_never_count_toward_the_fall_back_to_on_demand(tmp_path: Path) -> None:
    """With --on-demand-after 1, a preemption by the cloud would move the job to on-demand
    for good; the drills that preempt every instance leave it on spot."""
    supervisor, command, store, ledger = supervise(
        tmp_path,
        market("1" * 120),
        work_s=1.5,
        drill_after_s=0.3,
        drill_every=True,
        on_demand_after=1,
    )
    report = supervisor.run(command)
    assert report.completed and report.preemptions >= 1
    assert set(report.placements) == {"spot in z0"}
    assert report.drills == report.preemptions
    with open_operational(store) as market_store:
        ledger_report = job_report(market_store, ledger.job_id)
    assert ledger_report.drills == ledger_report.preemptions == report.preemptions


@pytest.mark.slow
def test_a_damaged_checkpoint_the_guard_skipped_is_kept_in_the_ledger_and_said(
    tmp_path: Path, cli: CliRun
) -> None:
    supervisor, _, store, ledger = supervise(tmp_path, market("1" * 60), work_s=1.0)
    said: list[str] = []
    supervisor.progress = said.append
    resumed = {"event": "resumed", "step": 4, "damaged": [{"path": "/ck/step-8", "step": 8}]}
    report = supervisor.run([sys.executable, "-c", f"print({json.dumps(resumed)!r})"])
    assert report.completed
    detail = "/ck/step-8 (step 8), resumed from step 4"
    assert f"warning: a damaged checkpoint was skipped on resume: {detail}" in said
    with open_operational(store) as market_store:
        assert job_report(market_store, ledger.job_id).damaged_checkpoints == (detail,)
    shown = cli("jobs", "show", ledger.job_id, env={"SPOTWISE_STORE": str(store)})
    assert f"damaged checkpoint skipped on resume: {detail}" in shown.stdout


def test_drill_durations_are_checked(cli_in_process: CliRun) -> None:
    both = cli_in_process("run", "--preempt-after", "1m", "--preempt-every", "1m", "--", "true")
    assert both.returncode == 1 and "not both" in both.stderr
    bad = cli_in_process("run", "--preempt-after", "soon", "--", "true")
    assert bad.returncode == 1 and "'soon' is not a duration" in bad.stderr


def test_the_jobs_output_is_its_log_and_json_lines_stay_events(tmp_path: Path) -> None:
    from spotwise.executor.launchers.base import Placement
    from spotwise.executor.launchers.local import LocalInstance

    script = (
        "import sys; print('epoch 1 loss 0.5'); print('warning: slow disk', file=sys.stderr); "
        'print(\'{"event": "done", "step": 3}\')'
    )
    lines: list[str] = []
    instance = LocalInstance(
        Placement(market="spot", pool="z0", price=1.0),
        [sys.executable, "-c", script],
        {},
        cloud_hours=lambda: 0.5,
        log=lines.append,
    )
    while instance.poll() is None:
        time.sleep(0.01)
    assert sorted(line.strip() for line in lines) == ["epoch 1 loss 0.5", "warning: slow disk"]
    assert instance.events == [{"event": "done", "step": 3, "cloud_hours": 0.5}]
    instance.terminate()


@pytest.mark.slow  # CLI subprocesses
def test_a_jobs_output_is_kept_per_instance_where_only_the_user_can_read_it(
    cli: CliRun, store_file: Path
) -> None:
    script = "import sys; print('loss 0.25'); print('careful', file=sys.stderr)"
    args = ["--pools", "us-east-1a_v100_1", "--start-hours", "100", "--scale", "60"]
    result = cli("run", *args, "--json", "--", sys.executable, "-c", script)
    assert result.returncode == 0, result.stderr
    assert "[spot in us-east-1a_v100_1] loss 0.25" in result.stderr  # live, on stderr
    job_id = json.loads(result.stdout)["job_id"]
    # the job's first line names it and how to follow it, before it launches anything
    first = next(line for line in result.stderr.splitlines() if line.startswith("… "))
    assert first == f"… job {job_id}: `spotwise jobs logs {job_id} --follow` follows it"
    folder = store_file.parent / "logs" / job_id
    assert folder.stat().st_mode & 0o077 == 0 and folder.parent.stat().st_mode & 0o077 == 0
    assert sorted(p.name for p in folder.iterdir()) == ["1.launched", "1.log"]
    logs = cli("jobs", "logs", job_id)
    assert logs.returncode == 0, logs.stderr
    marker, *lines = logs.stdout.splitlines()
    assert marker == "--- instance 1: spot in us-east-1a_v100_1 ---"
    assert sorted(lines) == [
        "[spot in us-east-1a_v100_1] careful",
        "[spot in us-east-1a_v100_1] loss 0.25",
    ]
    assert cli("jobs", "logs", "nope").returncode == 1


@pytest.mark.slow
def test_checkpoint_minutes_reach_the_jobs_guard(cli: CliRun) -> None:
    script = "from spotwise.core.settings import current; print('every', current().checkpoint_s)"
    args = ["--pools", "us-east-1a_v100_1", "--start-hours", "100", "--scale", "60"]
    result = cli("run", *args, "--checkpoint-minutes", "7.5", "--", sys.executable, "-c", script)
    assert result.returncode == 0, result.stderr
    assert "[spot in us-east-1a_v100_1] every 450.0" in result.stderr


UNGUARDED = "the command has not started a guard"
ENDED_UNGUARDED = "the command ended without starting a guard"


@pytest.mark.slow
@pytest.mark.e2e
def test_a_strangers_own_guarded_script_is_drilled_and_resumes_to_the_same_weights(
    cli: CliRun, tmp_path: Path
) -> None:
    """The README's guard snippet around a script of the user's own (not the bundled
    example), run with --preempt-every: the drills act on it, each relaunch resumes, and the
    final weights are those of an uninterrupted run."""
    from tests.executor.training.test_guard import STRANGER

    script = tmp_path / "train.py"
    script.write_text(STRANGER)
    plain = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "plain"), str(tmp_path / "plain.sha"), "0"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert plain.returncode == 0, plain.stderr
    args = ["--pools", "us-east-1a_v100_1", "--start-hours", "100", "--preempt-every", "1s"]
    command = [sys.executable, str(script), str(tmp_path / "ckpt"), str(tmp_path / "run.sha")]
    result = cli("run", *args, "--json", "--", *command, "0.1")  # 32 steps, 3.2 s or more
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["status"] == "completed"
    # (a drill may also reach the last instance as it finishes: a notice, no preemption)
    assert report["preemptions"] >= 2 and report["notices"] >= report["preemptions"]
    assert report["instances"] == report["preemptions"] + 1
    assert report["steps_lost"] == 0  # every relaunch resumed where the drill stopped it
    assert result.stderr.count("drill: a preemption notice to the job now") >= 2
    assert UNGUARDED not in result.stderr and ENDED_UNGUARDED not in result.stderr
    assert (tmp_path / "run.sha").read_text() == (tmp_path / "plain.sha").read_text()


@pytest.mark.slow  # CLI subprocesses
def test_a_command_without_a_guard_is_told_once_that_drills_cannot_act_on_it(
    cli: CliRun,
) -> None:
    script = "import time; print('epoch 1', flush=True); time.sleep(1.5)"
    args = ["--pools", "us-east-1a_v100_1", "--start-hours", "100", "--preempt-every", "1s"]
    result = cli("run", *args, "--", sys.executable, "-c", script)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("a guard (spotwise.executor.guard)") == 1
    assert (
        f"{ENDED_UNGUARDED} (spotwise.executor.guard): drills, replayed preemptions and "
        "migration could not act on it"
    ) in result.stderr
    assert "drill:" not in result.stderr


@pytest.mark.slow
def test_a_running_command_without_a_guard_gets_one_warning_across_its_relaunches(
    tmp_path: Path,
) -> None:
    """Past guard_wait_s with no guard announced, the job is told once, not per instance."""
    supervisor, _, _, _ = supervise(
        tmp_path, market("1" * 120), work_s=1.0, guard_wait_s=0.2, drill_after_s=0.1
    )
    said: list[str] = []
    supervisor.progress = said.append
    tries = tmp_path / "tries"
    script = (  # exits 75 twice (as if preempted), then 0, each after a second
        "import sys, time; from pathlib import Path; p = Path(sys.argv[1]); "
        "n = int(p.read_text()) if p.exists() else 0; p.write_text(str(n + 1)); "
        "time.sleep(1); sys.exit(75 if n < 2 else 0)"
    )
    report = supervisor.run([sys.executable, "-c", script, str(tries)])
    assert report.completed and report.instances == 3
    warnings = [m for m in said if "guard" in m]
    assert warnings == [
        f"{UNGUARDED} (spotwise.executor.guard) in its first 0.2 s: drills, replayed "
        "preemptions and migration cannot act on it"
    ]
    assert not any(m.startswith("drill:") for m in said)

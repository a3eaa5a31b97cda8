"""The executor benchmarks and the replay driver, at small sizes."""

from __future__ import annotations

import json
import sys

import pytest

from spotwise.executor.bench import steps_run_of
from spotwise.executor.errors import ExecutorError
from spotwise.executor.supervise.replay import Launch, run_under_replay
from tests.conftest import CliRun


@pytest.mark.slow
def test_bench_checkpoint_prints_every_figure(cli: CliRun) -> None:
    result = cli("bench", "checkpoint", "--size-mb", "48", "--json")
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    for key in (
        "torch_save_s",
        "stall_s",
        "notice_to_durable_s",
        "restore_s",
        "incremental_bytes_ratio",
    ):
        assert figures[key] > 0, key
    assert figures["stall_s"] < figures["notice_to_durable_s"]
    assert figures["incremental_bytes_ratio"] < 0.8


@pytest.mark.e2e
@pytest.mark.slow
def test_bench_resume_is_bitwise_identical_under_a_replayed_trace(cli: CliRun) -> None:
    result = cli("bench", "resume", "--epochs", "1", "--step-sleep-s", "0.03", "--json")
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["bitwise_identical"] is True
    # the trace's take-backs until four hit the job: all four when the replayed run is as fast
    # as the reference one; fewer when a busy machine slowed the reference and not the replay
    # (the cap alone: test_replay_leaves_out_the_take_backs_past_its_limit)
    assert 1 <= figures["preemptions"] <= 4
    assert figures["lost_steps"] == 0
    assert figures["restart_to_first_step_s"] > 0


def test_a_launch_killed_before_it_reported_counts_up_to_where_the_next_resumed() -> None:
    """On a busy machine a launch may outlive its grace and be killed before it says how many
    steps it ran: the checkpoint the next launch resumes from shows how far it got."""
    launches = [
        Launch(started=0, events=[{"event": "fresh", "step": 0}, *ends("preempted", 10)]),
        Launch(started=1, events=[{"event": "resumed", "step": 10}], killed=True),
        Launch(started=2, events=[{"event": "resumed", "step": 14}, *ends("done", 50)]),
    ]
    assert steps_run_of(launches) == (10 + 4 + 50, 1)
    launches[1].events.clear()  # killed before it even resumed: nothing to count
    assert steps_run_of(launches) == (10 + 50, 1)


def ends(kind: str, steps_here: int) -> list[dict[str, object]]:
    return [{"event": kind, "steps_here": steps_here}]


def test_replay_does_not_relaunch_a_real_failure_forever() -> None:
    command = [sys.executable, "-c", 'import sys; print(\'{"event": "fresh"}\'); sys.exit(3)']
    with pytest.raises(ExecutorError, match="exit code 3 \\(not a preemption\\)"):
        run_under_replay(command, [100.0], lead_s=1, grace_s=1)


def test_replay_runs_a_clean_command_once() -> None:
    run = run_under_replay(
        [sys.executable, "-c", 'print(\'{"event": "done"}\')'], [], lead_s=1, grace_s=1
    )
    assert len(run.launches) == 1 and run.preemptions == 0
    assert run.launches[0].event("done") is not None


@pytest.mark.slow
def test_replay_leaves_out_the_take_backs_past_its_limit() -> None:
    script = (
        "import json, signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *_: sys.exit(75))\n"
        "print(json.dumps({'event': 'fresh'}), flush=True)\n"
        "time.sleep(1.5)\n"
    )
    schedule = [0.2 * i for i in range(1, 60)]  # a take-back every 0.2 s for 12 s
    run = run_under_replay(
        [sys.executable, "-c", script], schedule, lead_s=0, grace_s=5, max_preemptions=2
    )
    assert run.preemptions == 2 and len(run.launches) == 3
    assert run.launches[-1].returncode == 0

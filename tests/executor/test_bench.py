"""The executor benchmarks, at small sizes."""

from __future__ import annotations

import json

import pytest

from spotwise.executor.bench import steps_run_of
from spotwise.executor.supervise.replay import Launch
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

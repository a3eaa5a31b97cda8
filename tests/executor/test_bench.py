"""The executor benchmarks, at small sizes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from spotwise.executor.bench import cpu_hogs, parse_list, peak_rss_of_saves, steps_run_of
from spotwise.executor.supervise.replay import Launch
from tests.conftest import CliRun


@pytest.mark.slow
def test_bench_checkpoint_prints_every_figure_per_size_and_load(cli: CliRun) -> None:
    result = cli("bench", "checkpoint", "--sizes", "0.05", "--load", "0,1", "--json")
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["cpus"] >= 1
    assert [(c["size_gb"], c["load"]) for c in figures["cases"]] == [(0.05, 0), (0.05, 1)]
    for case in figures["cases"]:
        for key in (
            "torch_save_s",
            "dcp_save_s",
            "dcp_async_stall_s",
            "dcp_async_durable_s",
            "stall_s",
            "durable_s",
            "notice_to_durable_s",
            "restore_s",
            "incremental_bytes_ratio",
            "train_step_s",
            "unguarded_stall_s",
            "stall_vs_dcp_async",
            "durable_vs_dcp_save",
        ):
            assert case[key] > 0, key
        assert case["stall_path"] == "guarded"  # the save guard() makes by default
        assert case["stall_s"] < case["durable_s"]
        assert case["peak_rss_vs_state"] > 1  # it holds the state
        assert case["dcp_async_stall_s"] < case["dcp_async_durable_s"]
        assert case["incremental_bytes_ratio"] < 0.8


def test_bench_checkpoint_refuses_a_bad_list_in_one_line(cli_in_process: CliRun) -> None:
    result = cli_in_process("bench", "checkpoint", "--sizes", "1,,4", "--json")
    assert result.returncode == 2 and "--sizes: '' is not a number" in result.stderr
    result = cli_in_process("bench", "checkpoint", "--load", "-1", "--json")
    assert result.returncode == 2 and "--load: -1 is out of range" in result.stderr


def test_parse_list_reads_numbers_and_refuses_the_rest() -> None:
    assert parse_list("1, 4,10", "--sizes", float) == [1.0, 4.0, 10.0]
    assert parse_list("0,2", "--load", int) == [0, 2]
    for bad in ("0", "nan", "inf", "-1"):
        with pytest.raises(ValueError, match="--sizes"):
            parse_list(bad, "--sizes", float)
    with pytest.raises(ValueError, match=r"'1\.5' is not a number"):
        parse_list("1.5", "--load", int)


def test_cpu_hogs_are_killed_even_when_the_bench_fails() -> None:
    with pytest.raises(RuntimeError), cpu_hogs(2):
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit() and _is_hog(int(p))]
        raise RuntimeError("the bench failed")
    assert len(pids) >= 2
    assert not [pid for pid in pids if _is_hog(pid)]


def _is_hog(pid: int) -> bool:
    """Whether ``pid`` is a live CPU hog this process started."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            command = cmdline.read()
    except OSError:
        return False
    return fields[0] != "Z" and int(fields[1]) == os.getpid() and b"while True" in command


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


def test_the_peak_rss_of_saves_holds_the_state_and_its_staging_copy_no_more(
    tmp_path: Path,
) -> None:
    rss = peak_rss_of_saves(0.1, tmp_path)  # a fresh process: its peak is the saves'
    state = 0.1e9
    assert rss.interpreter < rss.with_state < rss.peak
    assert rss.with_state - rss.interpreter > 0.9 * state
    # an async save's staging copy (1×), and not a second copy of the state in the write path
    # (that would be 2×): the margin is threads and allocator arenas, not a copy
    assert 0.9 * state < rss.peak - rss.with_state < 1.5 * state
    assert list(tmp_path.iterdir())  # it saved there

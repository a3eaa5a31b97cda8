"""The replay driver: a trace's take-backs replayed on a real command, at small sizes."""

from __future__ import annotations

import sys

import pytest

from spotwise.executor.errors import ExecutorError
from spotwise.executor.supervise.replay import run_under_replay


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


def test_a_replayed_run_says_its_step_as_it_goes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo's reference run is not silent: its step, share and time left, every so often."""
    import spotwise.executor.supervise.replay as replay

    monkeypatch.setattr(replay, "STEP_REPORT_S", 0.2)
    script = (
        "import json, time\n"
        "print(json.dumps({'event': 'fresh', 'step': 0, 'total_steps': 40}), flush=True)\n"
        "for step in range(1, 41):\n"
        "    time.sleep(0.05)\n"
        "    print(json.dumps({'event': 'report', 'step': step}), flush=True)\n"
        "print(json.dumps({'event': 'done', 'step': 40}), flush=True)\n"
    )
    said: list[str] = []
    run = run_under_replay(
        [sys.executable, "-c", script], [], lead_s=1, grace_s=1, progress=said.append
    )
    assert run.launches[0].event("done") is not None
    assert said, "no step was said while it ran"
    assert all(line.startswith("step ") and " of 40 (" in line for line in said), said

"""The preemption drill on a stranger's own script (the README's guard snippet, no extra
line): every instance gets its notice, the script checkpoints and resumes, and its final
weights are those of a run never interrupted."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.journeys.conftest import Stranger


@pytest.mark.slow
def test_the_drill_preempts_and_resumes_a_strangers_own_script_bit_exactly(
    stranger: Stranger,
) -> None:
    home = stranger.home
    plain = subprocess.run(
        [sys.executable, str(stranger.script), str(home / "ck-plain"), str(home / "plain.txt")],
        cwd=home, env=stranger.env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr[-2000:]
    run = stranger.spotwise(
        "run", "--json", "--preempt-every", "4s", "--ckpt", str(home / "ck"), "--",
        sys.executable, str(stranger.script), str(home / "ck"), str(home / "drilled.txt"), "0.05",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "my training is done" in run.stderr  # the script's own output, live
    assert "has not started a guard" not in run.stderr
    drills = run.stderr.count("drill")
    assert drills >= 1, run.stderr[-3000:]
    assert (home / "drilled.txt").read_text() == (home / "plain.txt").read_text()
    report = json.loads(run.stdout)
    # the supervisor counted the script's work though it prints no event of its own
    assert report["progress_hours"] > 0 and report["steps_lost"] == 0
    assert report["preemptions"] >= 1

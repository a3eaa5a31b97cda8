"""A stranger's replay where the cheap pool comes back: their own traces and prices loaded into
their store, their own script under `spotwise run`; the job starts on the dear pool, moves to
the cheap one once it is back, resumes bit-exactly, and `jobs show` says why it moved, with the
expected costs the decision compared, and what it bid."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.journeys.conftest import Stranger

GAP_S = 60
PAST = "1" * 59 + "0"  # both pools came and went alike before the job: hour-long runs


def trace(ticks: str) -> str:
    return json.dumps(
        {"metadata": {"gap_seconds": GAP_S}, "data": [0 if c == "1" else 1 for c in ticks]}
    )


@pytest.mark.slow
def test_a_job_moves_to_a_cheaper_pool_that_came_back_and_its_ledger_says_why(
    stranger: Stranger,
) -> None:
    home = stranger.home
    traces = home / "traces"
    traces.mkdir()
    past = PAST * 4  # four hours of history at a minute a tick
    (traces / "us-east-1c_v100_1.json").write_text(trace(past + "1" * 600))
    (traces / "us-east-2b_v100_1.json").write_text(trace(past + "0" * 3 + "1" * 597))
    (home / "prices.csv").write_text(
        "timestamp,availability_zone,instance_type,product_description,spot_price\n"
        "2026-12-01T00:00:00Z,us-east-1c,p3.2xlarge,Linux/UNIX,2.00\n"
        "2026-12-01T00:00:00Z,us-east-2b,p3.2xlarge,Linux/UNIX,0.30\n"
    )
    loaded = stranger.spotwise("data", "load", "prices.csv")
    assert loaded.returncode == 0, loaded.stderr
    plain = subprocess.run(
        [sys.executable, str(stranger.script), str(home / "ck-plain"), str(home / "plain.txt")],
        cwd=home, env=stranger.env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr[-2000:]
    run = stranger.spotwise(
        "run", "--json", "--traces", "traces", "--start-hours", "4", "--scale", "60",
        "--compute-hours", "0.5", "--deadline-hours", "3", "--ckpt", str(home / "ck"), "--",
        sys.executable, str(stranger.script), str(home / "ck"), str(home / "moved.txt"), "0.2",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout)
    assert report["placements"][:2] == ["spot in us-east-1c_v100_1", "spot in us-east-2b_v100_1"]
    assert report["migrations"] >= 1 and report["preemptions"] == 0
    assert "checkpointing to move: the policy moves it to us-east-2b_v100_1" in run.stderr
    assert (home / "moved.txt").read_text() == (home / "plain.txt").read_text()
    shown = stranger.spotwise("jobs", "show", report["job_id"])
    assert shown.returncode == 0, shown.stderr
    assert "moved: the policy moves it to us-east-2b_v100_1" in shown.stdout
    assert "spot in us-east-2b_v100_1: $" in shown.stdout  # the expected costs it compared
    assert "stay in us-east-1c_v100_1: $" in shown.stdout
    assert "bids (the price above which a move pays): us-east-1c_v100_1 $" in shown.stdout

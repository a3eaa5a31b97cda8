"""Two data-parallel workers under torchrun (gloo): DCP checkpoints and a bit-exact resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

TORCHRUN = [
    sys.executable,
    "-m",
    "torch.distributed.run",
    "--standalone",
    "--nproc-per-node",
    "2",
    "-m",
    "spotwise.executor.examples.train_mlp",
    "--epochs",
    "2",
]


def run(ckpt: Path, *extra: str, stop_after_s: float | None = None) -> list[dict]:
    process = subprocess.Popen(
        [*TORCHRUN, "--ckpt", str(ckpt), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=os.environ.copy(),
    )
    events: list[dict] = []
    assert process.stdout is not None
    began = None
    for line in process.stdout:
        if line.startswith("{"):
            for chunk in line.replace("}{", "}\n{").splitlines():
                events.append(json.loads(chunk))
        if (
            stop_after_s is not None
            and began is None
            and any(e["event"] == "first_step" for e in events)
        ):
            began = time.monotonic()
            time.sleep(stop_after_s)
            process.send_signal(signal.SIGTERM)  # torchrun forwards it to both workers
    process.wait(timeout=120)
    return events


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.xdist_group("torch-distributed")  # gloo jobs, one at a time
def test_two_workers_resume_bitwise_identically_from_a_dcp_checkpoint(tmp_path: Path) -> None:
    plain = [e for e in run(tmp_path / "plain") if e["event"] == "done"]
    assert {e["rank"] for e in plain} == {0, 1}
    interrupted = run(tmp_path / "ckpt", "--step-sleep-s", "0.05", stop_after_s=1.0)
    preempted = [e for e in interrupted if e["event"] == "preempted"]
    assert {e["rank"] for e in preempted} == {0, 1}
    stopped_at = preempted[0]["step"]
    assert 0 < stopped_at < plain[0]["step"]
    assert all(e["step"] == stopped_at for e in preempted)  # the ranks agreed on the step
    step_folder = tmp_path / "ckpt" / f"step-{stopped_at}"
    assert (step_folder / ".metadata").exists() and (step_folder / "rank1.json").exists()
    # DCP's files too are this user's only
    assert step_folder.stat().st_mode & 0o777 == 0o700
    assert {p.stat().st_mode & 0o777 for p in step_folder.iterdir()} == {0o600}
    resumed = run(tmp_path / "ckpt")
    assert {e["step"] for e in resumed if e["event"] == "resumed"} == {stopped_at}
    done = [e for e in resumed if e["event"] == "done"]
    assert {e["digest"] for e in done} == {plain[0]["digest"]}
    assert all(e["steps_here"] == plain[0]["step"] - stopped_at for e in done)

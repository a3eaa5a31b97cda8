"""The notice window is the guard's deadline: each cloud's window is defined once (on its
notice source), and a real job whose measured save does not fit its window says so in one line
of its log; one whose save fits says nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from spotwise.executor.clouds.aws.notice import AwsImds
from spotwise.executor.clouds.azure.notice import AzureScheduledEvents
from spotwise.executor.clouds.gcp.notice import GcpMetadata
from spotwise.executor.notices import (
    SigtermSource,
    notice_window_s,
)
from spotwise.executor.training.guard import last_save_fits, notice_margin_s

JOB = """
import sys, torch
from torch.utils.data import DataLoader, TensorDataset
from spotwise.executor.notices import SigtermSource
from spotwise.executor.training.guard import guard

window_s, mib = float(sys.argv[2]), int(sys.argv[3])
torch.manual_seed(0)
model = torch.nn.Linear(2, 1)
model.register_buffer("big", torch.randn(mib * 2**18))  # mib MiB of float32 to save
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(12, 2)), batch_size=4)
with guard([sys.argv[1]], model=model, optimizer=optimizer, loader=loader, interval_s=0.0,
           notices=[SigtermSource(grace_s=window_s)]) as g:
    for (x,) in g.batches():
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
        model.big.add_(1.0)  # every save writes it whole
        g.step()
"""


def run_job(tmp_path: Path, window_s: float, mib: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", JOB, str(tmp_path / "ckpt"), str(window_s), str(mib)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_each_clouds_window_is_defined_once_on_its_notice_source() -> None:
    assert (AwsImds.notice_s, GcpMetadata.notice_s, AzureScheduledEvents.notice_s) == (
        120.0,
        30.0,
        30.0,
    )
    assert notice_window_s([AwsImds(), SigtermSource(grace_s=45.0)]) == 45.0
    assert notice_window_s([]) is None


def test_the_margin_is_kept_back_from_the_last_save() -> None:
    assert notice_margin_s(30.0) == pytest.approx(3.0)
    assert last_save_fits(26.9, 30.0) and not last_save_fits(27.1, 30.0)
    assert last_save_fits(100.0, 120.0) and not last_save_fits(110.0, 120.0)


@pytest.mark.slow
def test_a_save_slower_than_the_notice_window_is_one_line_in_the_jobs_log(tmp_path: Path) -> None:
    # 64 MiB written and hashed at every step cannot fit in a 10 ms notice
    slow = run_job(tmp_path / "slow", window_s=0.01, mib=64)
    assert slow.returncode == 0, slow.stderr
    lines = [line for line in slow.stderr.splitlines() if "notice window" in line]
    assert len(lines) == 1, slow.stderr
    assert lines[0].startswith("spotwise guard: a save takes ")
    assert "more than the 0.01 s notice window less its 0.0 s margin" in lines[0]
    assert "a preemption loses the work since the last checkpoint" in lines[0]
    # the guard says its checkpoint interval where its supervisor reads it
    [announced] = [json.loads(line) for line in slow.stdout.splitlines() if '"fresh"' in line]
    assert announced["interval_s"] == 0.0


@pytest.mark.slow
def test_a_save_that_fits_the_notice_window_says_nothing(tmp_path: Path) -> None:
    fits = run_job(tmp_path / "fits", window_s=120.0, mib=1)
    assert fits.returncode == 0, fits.stderr
    assert "notice window" not in fits.stderr

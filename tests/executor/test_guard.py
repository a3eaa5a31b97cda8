"""The guard around the example training: notices, graceful exit, bit-exact resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from spotwise.executor.data import ResumableBatches, rank_share
from spotwise.executor.errors import PREEMPTED_EXIT_CODE
from spotwise.executor.interval import checkpoint_interval_s
from spotwise.executor.training_guard import guard
from spotwise.pricing.forecast.run import RISK_MODEL
from tests.conftest import ManualClock
from tests.executor.fake_metadata import FakeMetadata

TRAIN = [sys.executable, "-m", "spotwise.executor.examples.train_mlp", "--epochs", "2"]


def launch(ckpt: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [*TRAIN, "--ckpt", str(ckpt), *extra],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def events(process: subprocess.Popen) -> list[dict]:
    assert process.stdout is not None
    return [json.loads(line) for line in process.stdout if line.startswith("{")]


def wait_for(process: subprocess.Popen, event: str) -> list[dict]:
    seen = []
    assert process.stdout is not None
    for line in process.stdout:
        seen.append(json.loads(line))
        if seen[-1]["event"] == event:
            return seen
    raise AssertionError(f"the process ended before {event!r}: {seen}")


@pytest.mark.slow
def test_resume_after_sigterm_is_bitwise_identical_to_an_uninterrupted_run(tmp_path: Path) -> None:
    plain = launch(tmp_path / "plain")
    reference = events(plain)[-1]
    assert plain.wait() == 0 and reference["event"] == "done"
    interrupted_steps = []
    for _ in range(3):
        run = launch(tmp_path / "ckpt", "--step-sleep-s", "0.005")
        wait_for(run, "first_step")
        time.sleep(0.2)
        run.send_signal(signal.SIGTERM)
        run.communicate()
        assert run.returncode == PREEMPTED_EXIT_CODE
        with open(tmp_path / "ckpt" / "latest") as handle:
            interrupted_steps.append(int(handle.read()))
    assert interrupted_steps == sorted(set(interrupted_steps))  # progress each time
    final = launch(tmp_path / "ckpt")
    done = events(final)
    assert final.wait() == 0
    assert done[1]["event"] == "resumed" and done[1]["step"] == interrupted_steps[-1]
    assert done[-1]["digest"] == reference["digest"]
    assert done[-1]["step"] == reference["step"]
    assert done[-1]["steps_here"] == reference["step"] - interrupted_steps[-1]  # none lost


@pytest.mark.slow
def test_finished_run_does_nothing_when_launched_again(tmp_path: Path) -> None:
    first = launch(tmp_path / "ckpt")
    digest = events(first)[-1]["digest"]
    again = launch(tmp_path / "ckpt")
    done = events(again)[-1]
    assert again.wait() == 0 and done["steps_here"] == 0 and done["digest"] == digest


def launch_on_aws(ckpt: Path, metadata: FakeMetadata, *extra: str) -> subprocess.Popen:
    """The example training watching the fake IMDS, after its first step."""
    run = launch(
        ckpt,
        "--step-sleep-s",
        "0.01",
        *extra,
        env={"SPOTWISE_NOTICES": "aws", "SPOTWISE_AWS_IMDS_URL": metadata.url},
    )
    wait_for(run, "first_step")
    return run


@pytest.mark.slow
def test_rebalance_recommendation_checkpoints_without_stopping(
    tmp_path: Path, metadata: FakeMetadata
) -> None:
    run = launch_on_aws(tmp_path / "ckpt", metadata, "--interval-s", "3600")
    metadata.aws_rebalance = {"noticeTime": "2026-11-29T09:50:00Z"}
    done = events(run)[-1]
    assert run.wait() == 0
    assert done["event"] == "done" and done["checkpoints"] == 2  # the rebalance and the end


@pytest.mark.slow
def test_aws_instance_action_stops_the_run_with_the_preempted_code(
    tmp_path: Path, metadata: FakeMetadata
) -> None:
    run = launch_on_aws(tmp_path / "ckpt", metadata)
    metadata.aws_action = {"action": "terminate", "time": "2026-11-29T10:00:00Z"}
    run.communicate(timeout=60)
    assert run.returncode == PREEMPTED_EXIT_CODE
    assert int((tmp_path / "ckpt" / "latest").read_text()) > 0


def test_data_order_resumes_mid_epoch() -> None:
    data = TensorDataset(torch.arange(20))
    torch.manual_seed(1)
    plain = ResumableBatches(DataLoader(data, batch_size=3, shuffle=True))
    full = [b[0].tolist() for b in plain.iterate(2)]
    torch.manual_seed(1)
    first = ResumableBatches(DataLoader(data, batch_size=3, shuffle=True))
    iterator = first.iterate(2)
    head = [next(iterator)[0].tolist() for _ in range(9)]
    saved = first.state_dict()
    rng = torch.get_rng_state()
    second = ResumableBatches(DataLoader(data, batch_size=3, shuffle=True))
    second.load_state_dict(saved)
    tail = [b[0].tolist() for b in second.iterate(2, after_start=lambda: torch.set_rng_state(rng))]
    assert head + tail == full


def test_a_global_batch_is_shared_whole_at_any_world_size() -> None:
    """The global batches two ranks drew, resumed by one, two or three ranks: every sample
    once, in its batch; two ranks get back exactly what they drew."""
    rank0, rank1 = [[5, 1, 7], [0, 9, 2]], [[3, 8, 6], [4, 11, 10]]
    global_batches = [a + b for a, b in zip(rank0, rank1, strict=True)]
    assert [rank_share(global_batches, r, 2) for r in (0, 1)] == [rank0, rank1]
    assert rank_share(global_batches, 0, 1) == global_batches
    for world in (1, 2, 3, 4):
        shares = [rank_share(global_batches, r, world) for r in range(world)]
        for b, batch in enumerate(global_batches):
            assert [i for share in shares for i in share[b]] == batch


def test_interval_is_daly_from_the_measured_stall_and_never_below_a_persist() -> None:
    assert checkpoint_interval_s(stall_s=None, persist_s=None, mtbf_s=None) == 60.0
    short = checkpoint_interval_s(stall_s=0.5, persist_s=0.1, mtbf_s=3600)
    assert short == pytest.approx(60.0, rel=0.05)  # sqrt(2 · 0.5 · 3600) = 60
    assert checkpoint_interval_s(stall_s=0.001, persist_s=9.0, mtbf_s=3600) == 9.0


def test_mtbf_comes_from_the_pools_risk_forecast(tmp_path: Path) -> None:
    import pandas as pd

    from spotwise.executor.interval import forecast_mtbf_s
    from spotwise.pricing.operational import open_operational

    store = tmp_path / "market.duckdb"
    assert forecast_mtbf_s(str(store), "aws:us-east-1a:p3.2xlarge:spot") is None
    with open_operational(store) as market:
        market.replace_forecasts(
            pd.DataFrame(
                [
                    {
                        "unique_id": "aws:us-east-1a:p3.2xlarge:spot",
                        "ds": pd.Timestamp.now(tz="UTC"),
                        "model": RISK_MODEL,
                        "horizon": 60,
                        "mean": 2.5,
                        "lo": None,
                        "hi": None,
                        "level": None,
                        "p_preempt": 0.33,
                        "created_at": pd.Timestamp.now(tz="UTC"),
                    }
                ]
            )
        )
    assert forecast_mtbf_s(str(store), "aws:us-east-1a:p3.2xlarge:spot") == 2.5 * 3600
    assert forecast_mtbf_s(str(store), "aws:us-east-1b:p3.2xlarge:spot") is None


def test_the_guard_checkpoints_when_its_clock_says_the_interval_is_up(tmp_path: Path) -> None:
    clock = ManualClock()
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(40, 2)), batch_size=4)
    with guard(
        [str(tmp_path)],
        model=model,
        optimizer=optimizer,
        loader=loader,
        interval_s=60,
        notices=[],
        clock=clock,
    ) as g:
        for i, (x,) in enumerate(g.batches()):
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
            if i == 3:
                clock.sleep(61)  # a minute passes on this clock, none on the wall
            g.step()
        assert g.checkpoints == 1 and g.step_count == 10  # at step 4, when the minute was up
    assert g.checkpoints == 2  # and the final one


def test_the_interval_set_with_spotwise_run_is_the_guards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPOTWISE_CHECKPOINT_S", "45")
    model = torch.nn.Linear(2, 1)
    loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)
    with guard([str(tmp_path)], model=model, loader=loader, notices=[]) as g:
        assert g.interval_s == 45.0
    monkeypatch.delenv("SPOTWISE_CHECKPOINT_S")
    with guard([str(tmp_path / "other")], model=model, loader=loader, notices=[]) as g:
        assert g.interval_s == 60.0  # Young/Daly's starting value before a stall is measured

"""The guard's saves stage the optimizer's tensors in the background by default: the optimizer's
next step waits for the copy, the checkpoint holds the state at the save, and a run killed after
such saves resumes bit for bit."""

from __future__ import annotations

import ctypes
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from spotwise.executor.checkpoint.manager import CheckpointManager
from spotwise.executor.training.guard import guard

COPY_DELAY_S = 0.01


@pytest.fixture
def slow_copies(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[threading.Thread]]:
    """The background staging's copies (``ctypes.memmove``), each held back COPY_DELAY_S: a step
    that did not wait for them would change the tensors before they are copied. Yields the
    threads that made them, one per copy."""
    copy = ctypes.memmove
    threads: list[threading.Thread] = []

    def slow(dst: int, src: int, count: int) -> int:
        threads.append(threading.current_thread())
        time.sleep(COPY_DELAY_S)
        return copy(dst, src, count)

    monkeypatch.setattr(ctypes, "memmove", slow)
    yield threads


def adamw_on_an_mlp() -> tuple[torch.nn.Module, torch.optim.Optimizer, DataLoader]:
    torch.manual_seed(0)
    x = torch.randn(64, 16)
    loader = DataLoader(TensorDataset(x, torch.tanh(x @ torch.randn(16, 2))), batch_size=8)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2), torch.nn.BatchNorm1d(2)
    )
    return model, torch.optim.AdamW(model.parameters(), lr=0.05), loader


def train(model: torch.nn.Module, optimizer: torch.optim.Optimizer, batch: list) -> None:
    x, y = batch
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()


def snapshot(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, torch.Tensor]:
    """Every tensor of the model and the optimizer's state, copied."""
    tensors = {f"model.{k}": t.clone() for k, t in model.state_dict().items()}
    for i, state in optimizer.state_dict()["state"].items():
        tensors |= {f"opt.{i}.{k}": t.clone() for k, t in state.items()}
    return tensors


def saved(folder: Path, step: int) -> dict[str, torch.Tensor]:
    """The same tensors as the checkpoint of ``step`` holds them."""
    manager = CheckpointManager([str(folder)])
    checkpoint = manager.load(step)
    manager.close()
    assert checkpoint is not None
    state = checkpoint.state
    tensors = {f"model.{k}": t for k, t in state["model"].items()}
    for i, per_param in state["optimizer"]["state"].items():
        tensors |= {f"opt.{i}.{k}": t for k, t in per_param.items()}
    return tensors


def test_a_guard_given_the_optimizer_stages_it_in_the_background_and_saves_the_state_at_the_save(
    tmp_path: Path, slow_copies: list[threading.Thread]
) -> None:
    model, optimizer, loader = adamw_on_an_mlp()
    with guard(
        [str(tmp_path)], model=model, optimizer=optimizer, loader=loader, interval_s=1e9, notices=[]
    ) as g:
        batches = iter(g.batches())
        for _ in range(3):
            train(model, optimizer, next(batches))
            g.step()
        at_save = snapshot(model, optimizer)
        began = time.perf_counter()
        g.checkpoint()
        returned = time.perf_counter() - began
        train(model, optimizer, next(batches))  # its step waits for the copies, then changes all
        waited = g.manager.staging_waited_s  # type: ignore[attr-defined]
        g.step()
        stall = g.stalls_s[-1]
        after = snapshot(model, optimizer)
    # every parameter and AdamW's moments and step count, copied by the save's own thread
    assert len(slow_copies) == 4 * len(list(model.parameters()))
    assert all(t.name == "checkpoint-3" for t in slow_copies)
    assert 0 < waited < stall <= returned + waited  # the step's wait is in the save's stall
    checkpoint = saved(tmp_path, 3)
    assert checkpoint.keys() == at_save.keys()
    for key, tensor in at_save.items():
        assert torch.equal(checkpoint[key], tensor), key
    assert not torch.equal(after["model.0.weight"], at_save["model.0.weight"])


def test_a_guard_told_not_to_stage_in_the_background_copies_before_save_returns(
    tmp_path: Path, slow_copies: list[threading.Thread]
) -> None:
    model, optimizer, loader = adamw_on_an_mlp()
    with guard(
        [str(tmp_path)],
        model=model,
        optimizer=optimizer,
        loader=loader,
        interval_s=1e9,
        notices=[],
        stage_in_background=False,
    ) as g:
        batches = iter(g.batches())
        train(model, optimizer, next(batches))
        g.step()
        at_save = snapshot(model, optimizer)
        g.checkpoint()
        train(model, optimizer, next(batches))
        g.step()
        assert g.manager.staging_waited_s == 0  # type: ignore[attr-defined]
        g.checkpoint(block=True)  # (a save on notice: never deferred either)
    assert slow_copies == []
    checkpoint = saved(tmp_path, 1)
    assert all(torch.equal(checkpoint[k], t) for k, t in at_save.items())


# A training script under the guard, checkpointing after every step with its optimizer's
# tensors staged in the background (the default), each background copy held back so that the
# next step waits for it. argv: the checkpoint folder, where to torch.save the final model and
# optimizer state.
SCRIPT = f"""\
import ctypes
import json
import sys
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from spotwise.executor import guard

copy = ctypes.memmove
copies = 0


def slow(dst, src, count):
    global copies
    copies += 1
    time.sleep({COPY_DELAY_S})
    return copy(dst, src, count)


ctypes.memmove = slow
torch.manual_seed(0)
x = torch.randn(256, 16)
y = torch.tanh(x @ torch.randn(16, 2))
loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 2))
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.8)
with guard(
    [sys.argv[1]],
    model=model,
    optimizer=opt,
    scheduler=sched,
    loader=loader,
    epochs=2,
    interval_s=0.0,
    notices=[],
) as g:
    for xb, yb in g.batches():
        loss = nn.functional.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        g.step()
        print(json.dumps({{"event": "stepped", "step": g.step_count}}), flush=True)
torch.save({{"model": model.state_dict(), "optimizer": opt.state_dict()}}, sys.argv[2])
print(json.dumps({{"event": "copies", "n": copies}}), flush=True)
"""


def start(script: Path, ckpt: Path, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(script), str(ckpt), str(out)], stdout=subprocess.PIPE, text=True
    )


def finish(run: subprocess.Popen[str]) -> list[dict]:
    out, _ = run.communicate(timeout=300)
    assert run.returncode == 0
    return [json.loads(line) for line in out.splitlines()]


def tensors_of(path: Path) -> dict[str, torch.Tensor]:
    state = torch.load(path)
    tensors = {f"model.{k}": t for k, t in state["model"].items()}
    for i, per_param in state["optimizer"]["state"].items():
        tensors |= {f"opt.{i}.{k}": t for k, t in per_param.items()}
    return tensors


@pytest.mark.slow
def test_a_run_killed_after_guarded_saves_resumes_to_the_uninterrupted_runs_tensors_exactly(
    tmp_path: Path,
) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    uninterrupted = start(script, tmp_path / "plain", tmp_path / "plain.pt")
    run = start(script, tmp_path / "ckpt", tmp_path / "killed.pt")  # (side by side)
    assert run.stdout is not None
    for line in run.stdout:
        event = json.loads(line)
        if event["event"] == "stepped" and event["step"] == 10:
            break
    run.send_signal(signal.SIGKILL)  # mid-training, a save (or its write) in flight
    run.communicate(timeout=60)
    assert run.returncode == -signal.SIGKILL
    committed = int((tmp_path / "ckpt" / "latest").read_text())
    assert 0 < committed < 16  # (2 epochs of 8 batches)
    plain = finish(uninterrupted)
    assert plain[-1]["event"] == "copies" and plain[-1]["n"] > 0  # the guarded path ran

    resumed = finish(start(script, tmp_path / "ckpt", tmp_path / "resumed.pt"))
    assert resumed[0] == {**resumed[0], "event": "resumed", "step": committed}
    assert resumed[-1]["event"] == "copies" and resumed[-1]["n"] > 0
    expected, got = tensors_of(tmp_path / "plain.pt"), tensors_of(tmp_path / "resumed.pt")
    assert got.keys() == expected.keys() and len(got) == 4 + 3 * 4  # weights; AdamW's 3 each
    for key, tensor in expected.items():
        assert torch.equal(got[key], tensor), key

"""kill -9 at random points of a load and of a checkpoint save: what survives is always a
committed state (the store before the load or after it; the last committed checkpoint)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from spotwise.executor.checkpoint.manager import CheckpointManager
from spotwise.pricing.store import MarketStore
from tests.conftest import DATA
from tests.executor.checkpoint.test_manager import forkserver


def summary_of(store: Path) -> dict[str, int]:
    with MarketStore.open(store, read_only=True) as market:
        return dict(market.summary().tables)


@pytest.mark.slow
def test_kill_9_during_a_load_leaves_the_store_before_or_after_it(tmp_path: Path) -> None:
    rng = random.Random(11)
    paths = [str(DATA / "prices"), str(DATA / "traces/cbl/availability")]
    reference = tmp_path / "reference.duckdb"
    env = {**os.environ, "SPOTWISE_STORE": str(reference)}
    began = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "spotwise", "data", "load", *paths],
        env=env,
        check=True,
        capture_output=True,
    )
    full_s = time.monotonic() - began
    after = summary_of(reference)
    store = tmp_path / "market.duckdb"
    MarketStore.open(store).close()
    before = summary_of(store)
    outcomes: list[str] = []
    # When to kill: a random share of how long a load takes. The reference load may have run
    # slower than these (a busy machine): a kill that finds the load done halves the estimate
    # (twice at most).
    estimate_s = full_s
    while len(outcomes) < 4 or ("before" not in outcomes and len(outcomes) < 8):
        # a fresh store: the file and the write-ahead log a kill may have left beside it
        for leftover in (store, store.with_name(store.name + ".wal")):
            leftover.unlink(missing_ok=True)
        MarketStore.open(store).close()
        load = subprocess.Popen(
            [sys.executable, "-m", "spotwise", "data", "load", *paths],
            env={**os.environ, "SPOTWISE_STORE": str(store)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.3, 1.0) * estimate_s)
        load.send_signal(signal.SIGKILL)
        load.wait()
        now = summary_of(store)
        assert now in (before, after), now
        outcomes.append("after" if now == after else "before")
        if outcomes[-1] == "after":
            estimate_s = max(estimate_s / 2, full_s / 4)
    assert "before" in outcomes  # some kills landed while the load was still working


def _write_forever(folder: str, pipe: object) -> None:
    manager = CheckpointManager([folder], keep_latest_k=2, async_save=False)
    last = manager.load()
    first = last.step + 1 if last else 1
    pipe.send(("ready", first - 1))  # type: ignore[attr-defined]
    for step in range(first, first + 10_000):
        pipe.send(("started", step))  # type: ignore[attr-defined]
        manager.save(step, {"w": torch.full((400_000,), float(step)), "step": step})
        pipe.send(("committed", step))  # type: ignore[attr-defined]


@pytest.mark.slow
def test_kill_9_during_writes_never_loses_the_last_committed_checkpoint(tmp_path: Path) -> None:
    context = forkserver()
    rng = random.Random(7)
    folder = str(tmp_path / "ckpt")
    committed = started = mid_write = 0
    for _ in range(16):
        parent, child_end = context.Pipe()
        child = context.Process(target=_write_forever, args=(folder, child_end))
        child.start()
        while not parent.poll(10):
            pass
        time.sleep(rng.uniform(0.0, 0.3))
        os.kill(child.pid, signal.SIGKILL)  # type: ignore[arg-type]
        child.join()
        reported = committed
        while parent.poll():
            event, step = parent.recv()
            if event == "ready":
                assert step == committed  # the child resumes from the same commit we loaded
            elif event == "committed":
                committed = max(committed, step)
            started = max(started, step)
        mid_write += started > committed >= reported
        manager = CheckpointManager([folder])
        loaded = manager.load()
        manager.close()
        assert loaded is not None or committed == 0
        if loaded is not None:
            # The loaded step is the last commit (or a later one that committed before the
            # child could say so), and its content is that step's content.
            assert committed <= loaded.step <= max(started, committed)
            assert loaded.state["step"] == loaded.step
            assert torch.equal(loaded.state["w"], torch.full((400_000,), float(loaded.step)))
            committed = loaded.step
    assert mid_write >= 8  # most kills landed while a checkpoint was being written

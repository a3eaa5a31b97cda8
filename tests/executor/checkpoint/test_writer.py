"""The parallel writer's failure paths, on real files and real processes: a replica that cannot
be written, a disk that fills mid-file, a writer killed with SIGKILL mid-write."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
import torch
import xxhash

from spotwise.executor.checkpoint.manager import CheckpointManager, unseal
from spotwise.executor.checkpoint.storage import LocalReplica
from spotwise.executor.checkpoint.writer import StepFile, write_step
from spotwise.executor.errors import CheckpointError
from tests.executor.checkpoint.test_manager import assert_same, state

REPO = Path(__file__).resolve().parents[3]


class FillingReplica(LocalReplica):
    """A local replica whose disk fills halfway through the file named ``fills_at``: what
    fits is written, then the write raises ENOSPC."""

    fills_at: str | None = None

    def write(self, relative: str, chunks: Iterable[bytes | memoryview]) -> None:
        """Write, running out of space in ``fills_at``."""
        if self.fills_at is None or not relative.endswith(f"/{self.fills_at}"):
            super().write(relative, chunks)
            return

        def until_full() -> Iterator[memoryview]:
            for chunk in chunks:
                view = memoryview(chunk)
                yield view[: view.nbytes // 2]
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        super().write(relative, until_full())


def assert_every_manifest_holds(folder: Path) -> None:
    """Each committed step's manifest names only whole files, whose digests match."""
    for manifest_file in folder.glob("step-*/manifest.json"):
        manifest = unseal(manifest_file.read_bytes(), str(manifest_file))
        for name, entry in manifest["files"].items():
            data = (folder / name).read_bytes()
            assert len(data) == entry["bytes"], name
            assert xxhash.xxh3_128(data).hexdigest() == entry["digest"], name


def test_a_replica_that_cannot_be_written_fails_alone_and_the_others_commit(
    tmp_path: Path,
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    manager = CheckpointManager([str(a), str(b)], say=lambda _: None)
    manager.save(1, state(1), block=True)
    shutil.rmtree(a)
    a.write_text("no longer a folder")  # (root may write anywhere: a file blocks it too)
    with pytest.raises(CheckpointError) as failed:
        manager.save(2, state(2), block=True)
    message = str(failed.value)
    assert "failed on 1 of 2 replica(s)" in message
    assert f"{a}: Not a directory" in message and f"committed on {b}" in message
    assert (b / "latest").read_text() == "2" and manager.replicas[1].steps() == [2, 1]
    assert_every_manifest_holds(b)
    loaded = manager.load()
    manager.close()
    assert loaded is not None and loaded.step == 2 and loaded.url == str(b)
    assert_same(state(2), loaded.state)


def test_a_disk_that_fills_mid_file_leaves_no_manifest_pointing_at_a_half_file(
    tmp_path: Path,
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    manager = CheckpointManager([str(a), str(b)], say=lambda _: None)
    filling = FillingReplica(str(a), str(a))
    manager.replicas[0] = filling
    manager.save(1, state(1), block=True)
    filling.fills_at = "t1.bin"  # the second large tensor, halfway
    with pytest.raises(CheckpointError) as failed:
        manager.save(2, state(2), block=True)
    message = str(failed.value)
    assert f"{a}: No space left on device" in message and f"committed on {b}" in message
    assert sorted(p.name for p in a.iterdir()) == ["latest", "step-1"]  # the half file is gone
    assert (a / "latest").read_text() == "1"
    assert_every_manifest_holds(a)
    assert_every_manifest_holds(b)
    manager.close()
    only_a = CheckpointManager([str(a)])
    loaded = only_a.load()
    only_a.close()
    assert loaded is not None and loaded.step == 1
    assert_same(state(1), loaded.state)


def test_write_step_reports_each_failed_replica_and_commits_the_rest(tmp_path: Path) -> None:
    replicas = [FillingReplica(str(tmp_path / n), str(tmp_path / n)) for n in "abc"]
    replicas[0].fills_at = replicas[2].fills_at = "x.bin"
    data = memoryview(bytes(range(256)) * 64)
    manifests: list[dict[str, str]] = []

    def manifest_of(digests: dict[str, str]) -> bytes:
        manifests.append(digests)
        return b"{}"

    outcome = write_step(replicas, 5, [StepFile("x.bin", [data])], manifest_of, threads=2)
    assert outcome.committed == [str(tmp_path / "b")]
    assert [f.split(":")[0] for f in outcome.failures] == [str(tmp_path / n) for n in "ac"]
    assert manifests == [{"x.bin": xxhash.xxh3_128(data).hexdigest()}]
    assert (tmp_path / "b/step-5/x.bin").read_bytes() == data
    assert [sorted(os.listdir(tmp_path / n)) for n in "ac"] == [[], []]
    with pytest.raises(ValueError, match="threads must be at least 1"):
        write_step(replicas, 6, [], manifest_of, threads=0)


def big_state(step: int) -> dict:
    """24 MiB that a step's number decides, bit for bit."""
    generator = torch.Generator().manual_seed(step)
    return {
        "w": torch.full((4 << 20,), float(step)),
        "r": torch.randn(2 << 20, generator=generator),
        "b": torch.arange(10) * step,
        "step": step,
    }


CHILD = """
import sys
from spotwise.executor.checkpoint.manager import CheckpointManager
from tests.executor.checkpoint.test_writer import big_state
manager = CheckpointManager(sys.argv[1:3], keep_latest_k=2)
step = int(sys.argv[3])
while True:
    print(step, flush=True)
    manager.save(step, big_state(step), block=True)
    step += 1
"""


@pytest.mark.slow
def test_a_writer_killed_mid_write_leaves_its_last_committed_step_loading_bit_exactly(
    tmp_path: Path,
) -> None:
    """SIGKILL at a different moment of a save each time: whatever was half written, the newest
    committed step on either replica loads, bit for bit."""
    urls = [str(tmp_path / "a"), str(tmp_path / "b")]
    first = 1
    for delay_s in (0.0, 0.05, 0.15, 0.3):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, *urls, str(first)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        try:
            assert child.stdout is not None
            started = [int(child.stdout.readline()) for _ in range(3)]  # two saves committed
            time.sleep(delay_s)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
        assert started[-1] >= first + 2
        manager = CheckpointManager(urls)
        newest = max(s for r in manager.replicas for s in r.steps())
        assert newest >= started[-2]
        loaded = manager.load()
        manager.close()
        assert loaded is not None and loaded.step == newest and not loaded.skipped
        assert_same(big_state(newest), loaded.state)
        first = newest + 1

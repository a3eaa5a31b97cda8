"""CheckpointManager: atomic commits, async saves, incremental saves, replicas, verification."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import resource
import signal
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest
import torch
import xxhash

from spotwise.executor.checkpoint.manager import (
    CheckpointManager,
    NoIntactCheckpoint,
    seal,
    unseal,
)
from spotwise.executor.checkpoint.storage import FsspecReplica, LocalReplica, Replica
from spotwise.executor.errors import CheckpointError


def state(step: int, big: int = 300_000) -> dict:
    generator = torch.Generator().manual_seed(step)
    return {
        "model": {"w": torch.full((big,), float(step)), "b": torch.arange(5) * step},
        "frozen": torch.randn(big, generator=torch.Generator().manual_seed(0)),
        "opt": {
            "state": {0: {"step": torch.tensor(step), "m": torch.randn(7, generator=generator)}},
            "param_groups": [{"lr": 0.1, "params": [0]}],
        },
        "rng": (3, tuple(range(5)), None),
        "np": np.arange(6, dtype=np.float64).reshape(2, 3) * step,
        "half": torch.ones(4, dtype=torch.bfloat16) * step,
        "empty": torch.empty(0, 3),
        "step": step,
    }


def assert_same(a: object, b: object) -> None:
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and np.array_equal(a, b)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b)
        for key in a:
            assert_same(a[key], b[key])
    elif isinstance(a, list | tuple):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
    else:
        assert a == b


def test_load_returns_none_when_no_checkpoint_folder(tmp_path: Path) -> None:
    manager = CheckpointManager([str(tmp_path / "none")])
    assert manager.load() is None
    manager.close()


def test_save_commits_step_folders_with_a_manifest_and_latest(tmp_path: Path) -> None:
    manager = CheckpointManager([str(tmp_path)])
    manager.save(7, state(7), block=True)
    manager.close()
    assert sorted(os.listdir(tmp_path)) == ["latest", "step-7"]
    assert (tmp_path / "latest").read_text() == "7"
    manifest = unseal((tmp_path / "step-7/manifest.json").read_bytes(), "step-7")
    assert manifest["step"] == 7 and manifest["kind"] == "full"
    assert manifest["format"] == 3 and manifest["checksum"] == "xxh3-128"
    for name, entry in manifest["files"].items():
        assert (tmp_path / name).stat().st_size == entry["bytes"]
        assert entry["digest"] == xxhash.xxh3_128((tmp_path / name).read_bytes()).hexdigest()


def test_roundtrip_keeps_every_type_and_structure(tmp_path: Path) -> None:
    manager = CheckpointManager([str(tmp_path)])
    manager.save(3, state(3))
    loaded = manager.load()
    manager.close()
    assert loaded is not None and loaded.step == 3
    assert_same(state(3), loaded.state)


def test_async_save_returns_before_it_is_durable_and_a_second_save_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The disk's commit is held until the test lets it go, so no timing decides the order.
    gate = threading.Event()
    commit = LocalReplica.commit

    def held(self: LocalReplica, staging: str, step: int, manifest: bytes) -> None:
        assert gate.wait(60), "the test never let the commit go"
        commit(self, staging, step, manifest)

    monkeypatch.setattr(LocalReplica, "commit", held)
    manager = CheckpointManager([str(tmp_path)])
    big = {"w": torch.randn(1_000_000)}
    assert manager.save(1, big) is None  # returned while step 1 is not durable
    assert manager.steps() == []
    second = threading.Thread(target=manager.save, args=(2, big))
    second.start()
    second.join(0.3)
    assert second.is_alive()  # it waits for step 1 to persist
    gate.set()
    second.join(60)
    manager.wait()
    assert manager.steps() == [2, 1]
    assert manager.last_save is not None and manager.last_save.step == 2
    manager.close()


def test_incremental_save_writes_only_changed_tensors(tmp_path: Path) -> None:
    manager = CheckpointManager([str(tmp_path)], full_every=3, keep_latest_k=1)
    manager.save(1, state(1), block=True)
    full = manager.last_save
    manager.save(2, state(2), block=True)
    incremental = manager.last_save
    assert full is not None and incremental is not None
    assert full.full and not incremental.full
    assert incremental.bytes_written < 0.6 * full.bytes_written  # "frozen" is not rewritten
    # keep_latest_k=1 still keeps the full step the incremental one builds on.
    assert manager.steps() == [2, 1]
    loaded = manager.load()
    manager.close()
    assert loaded is not None and loaded.step == 2
    assert_same(state(2), loaded.state)


def test_keep_latest_k_prunes_old_steps(tmp_path: Path) -> None:
    manager = CheckpointManager([str(tmp_path)], keep_latest_k=2)
    for step in range(1, 6):
        manager.save(step, state(step, big=10))
    manager.wait()
    assert manager.steps() == [5, 4]
    manager.close()


def test_corrupt_newest_falls_back_to_the_previous_step(tmp_path: Path) -> None:
    manager = CheckpointManager([str(tmp_path)])
    manager.save(1, state(1), block=True)
    manager.save(2, state(2), block=True)
    victim = next((tmp_path / "step-2").glob("t*.bin"))
    data = bytearray(victim.read_bytes())
    data[100] ^= 0xFF
    victim.write_bytes(bytes(data))
    loaded = manager.load()
    manager.close()
    assert loaded is not None and loaded.step == 1
    [skipped] = loaded.skipped  # named, for the guard to say loudly
    assert skipped.path == f"{tmp_path}/step-2" and skipped.step == 2
    assert skipped.problem == f"{victim}: checksum mismatch"


def test_corrupt_file_in_one_replica_falls_back_to_another(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    manager = CheckpointManager([str(a), str(b)])
    manager.save(4, state(4), block=True)
    (a / "step-4/small.bin").write_bytes(b"garbage")
    loaded = manager.load()
    manager.close()
    assert loaded is not None and loaded.step == 4 and loaded.url == str(b)
    assert_same(state(4), loaded.state)
    assert [(c.path, c.step) for c in loaded.skipped] == [(f"{a}/step-4", 4)]


def test_local_checkpoints_are_this_users_only_whatever_the_umask(tmp_path: Path) -> None:
    """Folders 0700 and files 0600 even under umask 000 (the store is 0600: a checkpoint
    holds as much)."""
    folder = tmp_path / "new" / "ckpt"
    before = os.umask(0)
    try:
        manager = CheckpointManager([str(folder)])
        manager.save(1, state(1), block=True)
        manager.save(2, state(2, big=10), block=True)
        manager.close()
    finally:
        os.umask(before)
    modes = {p.relative_to(folder).as_posix(): p.stat().st_mode & 0o777 for p in folder.rglob("*")}
    assert folder.stat().st_mode & 0o777 == 0o700
    assert modes["step-2"] == modes["step-1"] == 0o700
    assert modes["latest"] == modes["step-2/manifest.json"] == modes["step-1/t0.bin"] == 0o600
    assert set(modes.values()) == {0o700, 0o600}


def test_checkpoints_that_exist_but_are_all_damaged_are_an_error_not_a_fresh_start(
    tmp_path: Path,
) -> None:
    """One bit flipped in the only step's manifest on one replica, a torn file on the other:
    there is nothing to resume from, and the error says where and what was wrong."""
    a, b = tmp_path / "a", tmp_path / "b"
    manager = CheckpointManager([str(a), str(b)])
    manager.save(4, state(4), block=True)
    manifest = a / "step-4/manifest.json"
    damaged = bytearray(manifest.read_bytes())
    damaged[len(damaged) // 2] ^= 1
    manifest.write_bytes(bytes(damaged))
    (b / "step-4/small.bin").write_bytes(b"torn")
    with pytest.raises(NoIntactCheckpoint) as refused:
        manager.load()
    manager.close()
    assert refused.value.urls == [str(a), str(b)]
    assert str(refused.value) == (
        f"{a}, {b}: 2 committed checkpoint copies, none intact ({a}/step-4: manifest "
        f"checksum mismatch (damaged or not sealed); {b}/step-4/small.bin: checksum mismatch)"
    )
    assert isinstance(refused.value, CheckpointError)


def forkserver() -> multiprocessing.context.ForkServerContext:
    """Children forked from a clean server that already imported torch (fork from a threaded
    pytest process can deadlock in torch's thread pools)."""
    context = multiprocessing.get_context("forkserver")
    assert isinstance(context, multiprocessing.context.ForkServerContext)
    context.set_forkserver_preload(["torch", "spotwise.executor.checkpoint.manager"])
    return context


def _save_with_tiny_file_limit(folder: str, queue: multiprocessing.Queue) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    manager = CheckpointManager([folder])
    manager.save(1, state(1, big=10), block=True)
    resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))  # a disk that is full
    try:
        manager.save(2, state(2), block=True)
        queue.put("saved")
    except CheckpointError as exc:
        queue.put(f"error: {exc}")


@pytest.mark.slow
def test_full_disk_fails_the_save_loudly_and_leaves_latest_untouched(tmp_path: Path) -> None:
    context = forkserver()
    queue = context.Queue()
    child = context.Process(target=_save_with_tiny_file_limit, args=(str(tmp_path), queue))
    child.start()
    child.join(60)
    message = queue.get(timeout=5)
    assert message.startswith("error:") and "failed on 1 of 1 replica" in message
    assert "latest still names the last committed step" in message
    assert (tmp_path / "latest").read_text() == "1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest", "step-1"]
    manager = CheckpointManager([str(tmp_path)])
    loaded = manager.load()
    manager.close()
    assert loaded is not None and loaded.step == 1


def test_a_file_url_that_is_not_a_folder_fails_loudly(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(CheckpointError, match="cannot open checkpoint replica"):
        CheckpointManager([str(blocker / "sub")])


def latest_of(replica: Replica) -> int | None:
    """The step the replica's ``latest`` object names (None if there is none)."""
    assert isinstance(replica, FsspecReplica)
    try:
        return int(replica.fs.cat_file(replica.path("latest")))
    except FileNotFoundError:
        return None


def test_unwritable_url_fails_loudly_and_leaves_latest_untouched(
    tmp_path: Path, moto_server: str
) -> None:
    bad = "s3://no-such-bucket/run"
    options = {
        bad: {
            "key": "testing",
            "secret": "testing",
            "client_kwargs": {"endpoint_url": moto_server, "region_name": "us-east-1"},
        }
    }
    alone = CheckpointManager([bad], storage_options=options)
    with pytest.raises(CheckpointError, match="no-such-bucket"):
        alone.save(1, state(1, big=10), block=True)
    assert alone.load() is None
    alone.close()
    both = CheckpointManager([str(tmp_path), bad], storage_options=options)
    with pytest.raises(CheckpointError, match="failed on 1 of 2 replica"):
        both.save(1, state(1, big=10), block=True)
    assert latest_of(both.replicas[1]) is None and both.replicas[1].steps() == []
    both.close()


def test_s3_replica_on_moto_commits_and_serves_when_local_is_corrupt(
    tmp_path: Path, s3_url: tuple[str, dict]
) -> None:
    url, options = s3_url
    manager = CheckpointManager([str(tmp_path), url], storage_options={url: options}, full_every=2)
    manager.save(1, state(1), block=True)
    manager.save(2, state(2), block=True)
    assert manager.replicas[1].steps() == [2, 1] and latest_of(manager.replicas[1]) == 2
    for blob in (tmp_path / "step-2").glob("*.bin"):
        blob.write_bytes(b"torn")
    loaded = manager.load()
    manager.close()
    assert loaded is not None and loaded.step == 2 and loaded.url == url
    assert_same(state(2), loaded.state)


def write_format_2(folder: Path, step: int, tensors: dict[str, torch.Tensor]) -> None:
    """A checkpoint as format 2 wrote it: sha256 digests under ``"sha256"``, no checksum
    named, large tensors a file each, the rest in ``small.bin``."""
    (folder / f"step-{step}").mkdir(parents=True)
    entries, files, small = {}, {}, b""
    for i, (key, tensor) in enumerate(tensors.items()):
        data = tensor.numpy().tobytes()
        meta = {"dtype": str(tensor.dtype), "shape": list(tensor.shape), "nbytes": len(data)}
        if len(data) < 1 << 20:
            entries[key] = {**meta, "file": f"step-{step}/small.bin", "offset": len(small)}
            small += data
            continue
        digest = hashlib.sha256(data).hexdigest()
        entries[key] = {**meta, "sha256": digest, "file": f"step-{step}/t{i}.bin", "offset": 0}
        files[f"step-{step}/t{i}.bin"] = {"sha256": digest, "bytes": len(data)}
        (folder / f"step-{step}/t{i}.bin").write_bytes(data)
    files[f"step-{step}/small.bin"] = {
        "sha256": hashlib.sha256(small).hexdigest(),
        "bytes": len(small),
    }
    (folder / f"step-{step}/small.bin").write_bytes(small)
    skeleton = {key.lstrip("/"): {"__tensor__": key} for key in tensors}
    manifest = {
        "format": 2,
        "step": step,
        "kind": "full",
        "base_step": None,
        "created": 0.0,
        "skeleton": skeleton,
        "tensors": entries,
        "files": files,
    }
    (folder / f"step-{step}/manifest.json").write_bytes(seal(manifest))
    (folder / "latest").write_text(str(step))


def test_format_2_checkpoints_still_verify_and_load(tmp_path: Path) -> None:
    tensors = {"/w": torch.arange(300_000, dtype=torch.float32), "/b": torch.arange(5)}
    write_format_2(tmp_path / "a", 4, tensors)
    write_format_2(tmp_path / "b", 4, tensors)
    (tmp_path / "a/step-4/t0.bin").write_bytes(b"\0" * 1_200_000)  # same size, other bytes
    manager = CheckpointManager([str(tmp_path / "a"), str(tmp_path / "b")])
    loaded = manager.load()
    assert loaded is not None and loaded.step == 4 and loaded.url == str(tmp_path / "b")
    assert_same({"w": tensors["/w"], "b": tensors["/b"]}, loaded.state)
    assert [c.problem for c in loaded.skipped] == [f"{tmp_path}/a/step-4/t0.bin: checksum mismatch"]
    manager.save(5, loaded.state, block=True)  # and later saves are format 3 beside it
    manager.close()
    assert unseal((tmp_path / "a/step-5/manifest.json").read_bytes(), "")["format"] == 3


def test_format_3_checkpoints_with_sha256_digests_still_verify_and_load(tmp_path: Path) -> None:
    """As this version wrote them before xxh3: ``"checksum": "sha256"``; a damaged file is still
    caught, and the intact replica loads."""
    manager = CheckpointManager([str(tmp_path / "a"), str(tmp_path / "b")])
    manager.save(2, state(2, big=300_000), block=True)
    manager.close()
    for replica in "ab":
        path = tmp_path / replica / "step-2/manifest.json"
        manifest = unseal(path.read_bytes(), "")
        for name, entry in manifest["files"].items():
            entry["digest"] = hashlib.sha256((tmp_path / replica / name).read_bytes()).hexdigest()
        for entry in manifest["tensors"].values():
            if "digest" in entry:
                entry["digest"] = manifest["files"][entry["file"]]["digest"]
        path.write_bytes(seal({**manifest, "checksum": "sha256"}))
    victim = next((tmp_path / "a/step-2").glob("t*.bin"))
    victim.write_bytes(b"\0" * victim.stat().st_size)
    manager = CheckpointManager([str(tmp_path / "a"), str(tmp_path / "b")])
    loaded = manager.load()
    manager.close()
    assert loaded is not None and loaded.url == str(tmp_path / "b")
    assert_same(state(2, big=300_000), loaded.state)
    assert [c.problem for c in loaded.skipped] == [f"{victim}: checksum mismatch"]


def test_a_manifest_naming_an_unknown_checksum_is_a_clear_error(tmp_path: Path) -> None:
    manager = CheckpointManager([str(tmp_path)])
    manager.save(1, state(1, big=10), block=True)
    path = tmp_path / "step-1/manifest.json"
    manifest = unseal(path.read_bytes(), "")
    path.write_bytes(seal({**manifest, "checksum": "md4"}))
    with pytest.raises(NoIntactCheckpoint, match="unknown checksum 'md4' in the manifest"):
        manager.load()
    manager.close()


class HeldReplica(LocalReplica):
    """A local replica whose writes wait until ``go`` is set: a slow disk, on cue."""

    go = threading.Event()

    def write(self, relative: str, chunks: Iterable[bytes | memoryview]) -> None:
        """Write once ``go`` is set."""
        assert self.go.wait(30)
        super().write(relative, chunks)


def test_a_save_that_must_wait_for_the_previous_one_says_what_it_waits_for(
    tmp_path: Path,
) -> None:
    lines: list[str] = []
    manager = CheckpointManager([str(tmp_path / "a"), str(tmp_path / "b")], say=lines.append)
    held = HeldReplica(str(tmp_path / "a"), str(tmp_path / "a"))
    manager.replicas[0] = held
    threads = torch.get_num_threads()
    manager.save(1, state(1))
    threading.Timer(0.3, held.go.set).start()
    manager.save(2, state(2))
    manager.close()
    assert torch.get_num_threads() == threads  # staging ran on one thread, then gave them back
    [line] = lines
    assert line.startswith("checkpoint step 2 waits for step 1 to be durable on 2 replica(s)")
    assert manager.steps() == [2, 1]


def test_the_checkpoint_is_the_state_when_save_returned_whatever_changes_after(
    tmp_path: Path,
) -> None:
    manager = CheckpointManager([str(tmp_path)])
    saved = state(1, big=2_000_000)
    expected = state(1, big=2_000_000)
    manager.save(1, saved)
    saved["model"]["w"].add_(1.0)  # in place, at once: the staged copy must not see it
    saved["frozen"].zero_()
    saved["opt"]["state"][0]["m"].mul_(3)
    loaded = manager.load()
    manager.close()
    assert loaded is not None
    assert_same(expected, loaded.state)


def linear_and_sgd(seed: int) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.BatchNorm1d(512))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    model(torch.randn(16, 512)).square().mean().backward()
    optimizer.step()  # (momentum buffers exist)
    return model, optimizer


def test_a_guarded_save_holds_the_state_at_the_save_though_the_next_step_changes_it(
    tmp_path: Path,
) -> None:
    model, optimizer = linear_and_sgd(0)
    expected = {k: t.clone() for k, t in model.state_dict().items()}
    momenta = [optimizer.state[p]["momentum_buffer"].clone() for p in model.parameters()]
    manager = CheckpointManager([str(tmp_path)])
    manager.save(1, {"model": model.state_dict(), "opt": optimizer.state_dict()}, guard=optimizer)
    model(torch.randn(16, 512)).square().mean().backward()  # changes BatchNorm's stats
    optimizer.step()  # waits for the staging, then changes every parameter and momentum
    loaded = manager.load()
    manager.close()
    assert loaded is not None
    for key, tensor in expected.items():
        assert torch.equal(loaded.state["model"][key], tensor), key
        assert not torch.equal(model.state_dict()[key], tensor), key
    saved_momenta = [s["momentum_buffer"] for s in loaded.state["opt"]["state"].values()]
    assert all(torch.equal(a, b) for a, b in zip(saved_momenta, momenta, strict=True))


def test_a_guarded_step_waits_for_the_staging_and_close_unhooks_it(tmp_path: Path) -> None:
    model, optimizer = linear_and_sgd(1)
    manager = CheckpointManager([str(tmp_path)])
    manager.save(1, model.state_dict(), guard=optimizer)
    manager.wait()
    manager._staged.clear()  # as if the staging in flight were slow
    threading.Timer(0.3, manager._staged.set).start()
    began = time.perf_counter()
    optimizer.step()
    assert time.perf_counter() - began >= 0.25
    manager.close()
    manager._staged.clear()  # closed: its hook is gone, the step does not wait
    began = time.perf_counter()
    optimizer.step()
    assert time.perf_counter() - began < 0.25


def test_a_guarded_save_whose_thread_cannot_start_does_not_hang_the_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, optimizer = linear_and_sgd(2)
    manager = CheckpointManager([str(tmp_path)])

    def refuse(_thread: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    with pytest.raises(RuntimeError):
        manager.save(1, model.state_dict(), guard=optimizer)
    monkeypatch.undo()
    began = time.perf_counter()
    optimizer.step()
    assert time.perf_counter() - began < 0.25
    manager.close()


def test_a_blocking_save_writes_cpu_tensors_from_where_they_are(tmp_path: Path) -> None:
    """Training waits for a blocking save (on notice) anyway: its plain CPU tensors are written
    without a staging copy; a non-contiguous one is still staged. Both load bit for bit."""
    weight = torch.nn.Parameter(torch.randn(600, 600))  # (requires grad)
    transposed = torch.randn(700, 500).t()
    tensors = {"w": weight, "t": transposed, "half": torch.randn(9).bfloat16()}
    manager = CheckpointManager([str(tmp_path)])
    manager.save(1, tensors, block=True)
    assert list(manager._buffers) == ["/t"]  # staged: only the non-contiguous one
    loaded = manager.load()
    manager.close()
    assert loaded is not None
    assert all(torch.equal(loaded.state[k], t.detach()) for k, t in tensors.items())

"""The checkpoint contracts.

- Replica (``open_replica``: a local folder, fsspec's memory file system, S3 on moto's
  server): a step is listed only once committed, newest first; what was written reads back;
  an aborted or removed step is gone.
- Checkpointer (``CheckpointManager`` on one or two replicas, and ``DistributedCheckpointer``
  in a one-rank gloo group, on a folder and on S3 on moto's server): nothing to load at first;
  a blocking save is durable; the newest step loads bit for bit, an older one on request; an
  async save is durable after ``wait``; only the newest ``keep_latest_k`` steps are kept.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from spotwise.executor.checkpoint.distributed import DistributedCheckpointer
from spotwise.executor.checkpoint.manager import Checkpointer, CheckpointManager
from spotwise.executor.checkpoint.storage import Replica, open_replica

REPLICAS = ["local", "memory", "s3"]


@pytest.fixture
def replica_url(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict]:
    kind = request.param
    if kind == "local":
        return str(tmp_path / "replica"), {}
    if kind == "memory":
        return f"memory://spotwise-{uuid.uuid4().hex}", {}
    return request.getfixturevalue("s3_url")


@pytest.mark.parametrize("replica_url", REPLICAS, indirect=True)
def test_a_replica_lists_a_step_only_once_committed_and_reads_it_back(
    replica_url: tuple[str, dict],
) -> None:
    replica: Replica = open_replica(*replica_url)
    assert replica.steps() == []
    for step in (3, 7):
        staging = replica.begin(step)
        replica.write(f"{staging}/data.bin", [b"ab", memoryview(b"cd")])
        assert step not in replica.steps()  # not before the commit
        replica.commit(staging, step, b'{"manifest": true}')
    assert replica.steps() == [7, 3]
    assert bytes(replica.read("step-7/data.bin")) == b"abcd"
    assert bytes(replica.read("step-7/manifest.json")) == b'{"manifest": true}'
    aborted = replica.begin(9)
    replica.write(f"{aborted}/data.bin", [b"x"])
    replica.abort(aborted)
    replica.remove_stale()
    replica.remove_step(3)
    assert replica.steps() == [7]


@pytest.fixture
def one_rank_group(tmp_path: Path) -> Iterator[None]:
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1
    )
    try:
        yield
    finally:
        dist.destroy_process_group()


CHECKPOINTERS = ["manager-local", "manager-two-replicas", "distributed", "distributed-s3"]


@pytest.fixture
def checkpointer(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[int], Checkpointer]]:
    kind = request.param
    built: list[Checkpointer] = []

    def build(keep_latest_k: int = 3) -> Checkpointer:
        made: Checkpointer
        if kind == "manager-local":
            made = CheckpointManager([str(tmp_path / "a")], keep_latest_k=keep_latest_k)
        elif kind == "manager-two-replicas":
            urls = [str(tmp_path / "a"), f"memory://spotwise-{uuid.uuid4().hex}"]
            made = CheckpointManager(urls, keep_latest_k=keep_latest_k)
        elif kind == "distributed":
            request.getfixturevalue("one_rank_group")
            made = DistributedCheckpointer(str(tmp_path / "dcp"), keep_latest_k=keep_latest_k)
        else:
            request.getfixturevalue("one_rank_group")
            url, options = request.getfixturevalue("s3_url")
            made = DistributedCheckpointer(
                f"{url}/dcp", keep_latest_k=keep_latest_k, storage_options=options
            )
        built.append(made)
        return made

    yield build
    for made in built:
        made.close()


def state(step: int) -> dict[str, object]:
    generator = torch.Generator().manual_seed(step)
    return {"w": torch.randn(8, 4, generator=generator), "b": torch.arange(4.0) * step}


def template() -> dict[str, object]:
    return {"w": torch.zeros(8, 4), "b": torch.zeros(4)}


def same(loaded: object, expected: dict[str, object]) -> bool:
    assert isinstance(loaded, dict)
    return all(torch.equal(loaded[k], v) for k, v in expected.items())  # type: ignore[arg-type]


@pytest.mark.parametrize("checkpointer", CHECKPOINTERS, indirect=True)
def test_a_checkpointer_saves_durably_and_loads_bit_for_bit(
    checkpointer: Callable[[int], Checkpointer],
) -> None:
    saver = checkpointer(3)
    assert saver.load(template=template) is None and saver.steps() == []
    saver.save(1, state(1), block=True)
    assert saver.steps() == [1] and saver.last_save is not None
    saver.save(2, state(2))
    saver.wait()
    assert saver.steps() == [2, 1]
    newest = saver.load(template=template)
    assert newest is not None and newest.step == 2 and same(newest.state, state(2))
    older = saver.load(1, template=template)
    assert older is not None and older.step == 1 and same(older.state, state(1))


@pytest.mark.slow
@pytest.mark.parametrize("checkpointer", CHECKPOINTERS, indirect=True)
def test_a_checkpointer_keeps_the_newest_k_steps(
    checkpointer: Callable[[int], Checkpointer],
) -> None:
    saver = checkpointer(2)
    for step in range(1, 6):
        saver.save(step, state(step), block=True)
    assert saver.steps() == [5, 4]
    loaded = saver.load(template=template)
    assert loaded is not None and loaded.step == 5 and same(loaded.state, state(5))

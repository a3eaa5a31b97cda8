"""Two work queues typed one after the other, each a different command: each runs its own
tasks; a queue whose every task fails says so and exits non-zero."""

from __future__ import annotations

import json

import pytest

from tests.journeys.conftest import Stranger

TASK = (
    "import os, sys; name, shard, out = sys.argv[1:4]; tmp = out + '.tmp'; "
    "open(tmp, 'w').write('%s %s' % (name, shard)); os.replace(tmp, out); "
    "sys.exit(3 if name == 'broken' else 0)"
)


@pytest.mark.slow
def test_two_different_unnamed_queues_each_run_their_own_tasks(stranger: Stranger) -> None:
    def queue(name: str):
        return stranger.spotwise(
            "sweep", "run", "--grid", "shard=0..1", "--",
            "python", "-c", TASK, name, "{shard}", str(stranger.home / f"{name}-{{shard}}.txt"),
        )  # fmt: skip

    first = queue("first")
    assert first.returncode == 0, first.stderr[-2000:]
    second = queue("second")
    assert second.returncode == 0, second.stderr[-2000:]
    for name in ("first", "second"):
        for shard in (0, 1):
            assert (stranger.home / f"{name}-{shard}.txt").read_text() == f"{name} {shard}"
    listed = stranger.spotwise("sweep", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    names = [row["sweep"] for row in json.loads(listed.stdout)]
    assert len(set(names)) == 2 and all(n.startswith("queue-") for n in names)
    broken = queue("broken")
    assert broken.returncode == 1
    assert "every task failed" in broken.stderr and "exit code 3" in broken.stderr

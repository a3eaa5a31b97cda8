"""A local instance: a process on this machine standing in for a cloud's."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from spotwise.executor.launchers.base import Placement
from spotwise.executor.launchers.local import LocalInstance


def test_an_instances_temporary_files_live_on_its_own_disk_and_go_with_it() -> None:
    # torchrun's elastic agent and a user's script write to the temp folder: as on a cloud's
    # instance, what they leave is gone when the instance is (not left in this machine's /tmp)
    script = (
        "import tempfile, pathlib; folder = pathlib.Path(tempfile.mkdtemp(prefix='left-'));"
        "(folder / 'scratch').write_text('x'); print(folder, flush=True)"
    )
    lines: list[str] = []
    instance = LocalInstance(
        Placement(market="spot", pool="z0", price=1.0),
        [sys.executable, "-c", script],
        {},
        cloud_hours=lambda: 0.0,
        log=lines.append,
    )
    deadline = time.monotonic() + 60
    while instance.poll() is None:
        assert time.monotonic() < deadline, "the script never ended"
        time.sleep(0.01)
    instance.terminate()
    (left,) = (Path(line.strip()) for line in lines)
    assert left.name.startswith("left-") and left.parent.name == "tmp"
    assert left.parent.parent.name.startswith("spotwise-instance-")
    assert not left.parent.parent.exists()

"""The step heartbeat: the guard's step count in a 20-byte file, and how long it has been quiet."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from spotwise.executor.training.heartbeat import Heartbeat, last_step, seconds_quiet


def test_each_beat_overwrites_the_step_in_a_private_file_of_twenty_bytes(tmp_path: Path) -> None:
    path = tmp_path / "heartbeat"
    heart = Heartbeat(str(path))
    assert last_step(path) is None  # no beat yet: no file
    heart.beat(12345)
    heart.beat(7)  # a shorter number: the old digits must not show through
    heart.close()
    assert path.read_bytes() == b"7".rjust(20)
    assert last_step(path) == 7
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_heartbeat_whose_folder_is_gone_stops_beating_without_failing_the_training(
    tmp_path: Path,
) -> None:
    heart = Heartbeat(str(tmp_path / "gone" / "heartbeat"))
    heart.beat(1)
    heart.beat(2)
    assert heart.path is None
    assert not (tmp_path / "gone").exists()


def test_an_empty_or_garbled_heartbeat_has_no_step(tmp_path: Path) -> None:
    path = tmp_path / "heartbeat"
    path.write_bytes(b"")
    assert last_step(path) is None
    path.write_bytes(b"twelve".rjust(20))
    assert last_step(path) is None


def test_quiet_time_counts_from_the_last_beat_or_the_launch_whichever_is_later(
    tmp_path: Path,
) -> None:
    path = tmp_path / "heartbeat"
    path.write_bytes(b"3".rjust(20))
    os.utime(path, (1000.0, 1000.0))  # beat at wall time 1000
    assert seconds_quiet(path, since_wall=900.0, now_wall=1010.0) == 10.0  # 1010 - 1000
    assert seconds_quiet(path, since_wall=1005.0, now_wall=1010.0) == 5.0  # relaunched at 1005
    assert seconds_quiet(tmp_path / "none", since_wall=900.0, now_wall=1010.0) == 110.0

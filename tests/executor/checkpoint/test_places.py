"""A checkpoint folder on this machine, as the ledger sizes it."""

from __future__ import annotations

from pathlib import Path

from spotwise.executor.checkpoint.places import LocalFolder


def test_a_local_folder_holds_the_bytes_of_every_file_below_it(tmp_path: Path) -> None:
    (tmp_path / "step-1").mkdir()
    (tmp_path / "step-2" / "shards").mkdir(parents=True)
    (tmp_path / "latest").write_bytes(b"2\n")  # 2 bytes
    (tmp_path / "step-1" / "model.bin").write_bytes(bytes(1000))  # 1000
    (tmp_path / "step-2" / "shards" / "0.bin").write_bytes(bytes(300))  # 300
    (tmp_path / "empty").mkdir()  # a folder counts nothing itself
    folder = LocalFolder(tmp_path)
    assert folder.nbytes() == 2 + 1000 + 300
    assert folder.where == str(tmp_path)


def test_a_folder_never_made_holds_nothing(tmp_path: Path) -> None:
    assert LocalFolder(tmp_path / "never-made").nbytes() == 0

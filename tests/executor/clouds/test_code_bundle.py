"""Shipping code: which workdir files go (the .gitignore rules), reproducible content-addressed
tarballs, the size guard and wheels, without the local clouds' fakes (each cloud's uploads are
tested in its folder)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from spotwise.executor.clouds.code_bundle import (
    build_wheel,
    given_wheel,
    pack_workdir,
    workdir_files,
)
from spotwise.executor.clouds.registry import CLOUDS
from spotwise.executor.errors import ExecutorError


def make_tree(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_gitignore_files_apply_below_their_folder_and_the_deepest_decides(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path / "w",
        {
            ".gitignore": "*.ckpt\ndata/\n",
            "train.py": "",
            "model.ckpt": "",
            "data/big.bin": "",
            "src/.gitignore": "!keep.ckpt\nscratch/\n",
            "src/keep.ckpt": "",
            "src/drop.ckpt": "",
            "src/scratch/tmp.txt": "",
            "src/model.py": "",
            ".git/HEAD": "ref: refs/heads/main\n",
        },
    )
    (root / "link.py").symlink_to(root / "train.py")
    assert list(workdir_files(root)) == [
        ".gitignore",
        "src/.gitignore",
        "src/keep.ckpt",
        "src/model.py",
        "train.py",
    ]


def test_an_explicit_ignore_file_replaces_the_gitignore_files(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path / "w", {".gitignore": "*.py\n", "train.py": "", "notes.md": "", "a/b.md": ""}
    )
    rules = make_tree(tmp_path, {"ship.ignore": "*.md\n"}) / "ship.ignore"
    assert list(workdir_files(root, rules)) == [".gitignore", "train.py"]
    with pytest.raises(ExecutorError, match=r"--ignore-file .*missing\.ignore: cannot read it"):
        pack_workdir(root, tmp_path, ignore_file=tmp_path / "missing.ignore")


def test_the_tarball_is_reproducible_and_its_key_follows_its_content(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "w", {"train.py": "print(1)\n", "run.sh": "#!/bin/sh\n"})
    os.chmod(root / "run.sh", 0o755)
    first = pack_workdir(root, make_tree(tmp_path / "a", {}))
    os.utime(root / "train.py", (1, 1))  # a touch alone changes nothing
    again = pack_workdir(root, make_tree(tmp_path / "b", {}))
    assert first.key == again.key and first.files == 2
    (root / "train.py").write_text("print(2)\n")
    changed = pack_workdir(root, make_tree(tmp_path / "c", {}))
    assert changed.key != first.key
    with tarfile.open(changed.path) as tar:
        modes = {m.name: (m.mode, m.mtime, m.uid) for m in tar.getmembers()}
    assert modes == {"run.sh": (0o755, 0, 0), "train.py": (0o644, 0, 0)}


def test_a_workdir_over_the_size_limit_names_its_largest_files(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "w", {"train.py": "x"})
    (root / "weights.bin").write_bytes(b"\0" * 3_000_000)
    with pytest.raises(ExecutorError, match=r"weights\.bin \(3 MB\).*\.gitignore"):
        pack_workdir(root, tmp_path, max_mb=1)
    with pytest.raises(ExecutorError, match="not a folder"):
        pack_workdir(tmp_path / "missing", tmp_path)


def test_a_wheel_must_be_named_as_pip_names_spotwise_wheels(tmp_path: Path) -> None:
    for name in ("other-1.0-py3-none-any.whl", "spotwise-$(id).whl", "spotwise.tar.gz"):
        (tmp_path / name).write_bytes(b"PK")
        with pytest.raises(ExecutorError, match="--wheel"):
            given_wheel(tmp_path / name)
    good = tmp_path / "spotwise-0.1.0-py3-none-any.whl"
    good.write_bytes(b"PK")
    assert given_wheel(good).key.endswith("/spotwise-0.1.0-py3-none-any.whl")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_wheel_shipped_to_instances_leaves_the_local_clouds_fakes_out(tmp_path: Path) -> None:
    """The API fakes that play a cloud here (``spotwise try``, the tests) are in the source
    tree and the package, never on an instance; what an instance runs still imports without
    them."""
    root = Path(__file__).resolve().parents[3]
    fakes = sorted(p for p in (root / "executor" / "clouds").glob("*/fake") if p.is_dir())
    assert [p.parent.name for p in fakes] == ["azure", "gcp", "huawei", "kubernetes"]
    wheel = build_wheel(tmp_path / "built").path
    with zipfile.ZipFile(wheel) as shipped:
        names = shipped.namelist()
        shipped.extractall(tmp_path / "site")
    assert not [n for n in names if "/fake/" in n], [n for n in names if "/fake/" in n]
    assert "spotwise/executor/clouds/azure/on_instance.py" in names  # the rest ships
    assert "spotwise/executor/clouds/gcp/on_instance.py" in names
    assert "spotwise/executor/clouds/huawei/on_instance.py" in names
    # every registered cloud's seam, agent, notice source and local launcher, and the
    # registry, import from the shipped wheel
    modules = [
        f"spotwise.executor.clouds.{cloud}.{name}"
        for cloud in sorted(CLOUDS)
        for name in ("cloud", "on_instance", "notice", "local")
        if (root / "executor" / "clouds" / cloud / f"{name}.py").is_file()
    ]
    assert {m.split(".")[3] for m in modules} == set(CLOUDS)
    check = (
        f"import importlib, spotwise; assert spotwise.__file__.startswith({str(tmp_path)!r})\n"
        f"for name in {[*modules, 'spotwise.executor.clouds.registry']!r}:\n"
        "    importlib.import_module(name)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    ran = subprocess.run(
        [sys.executable, "-c", check],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]

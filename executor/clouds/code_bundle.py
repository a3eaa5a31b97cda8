"""What a job ships to its instances: the workdir as a tarball and a wheel of the installed
Spotwise, each stored by its cloud once per content under ``spotwise/code/SHA256/`` of its bucket
(each cloud's folder uploads them), so an unchanged workdir is not uploaded twice and nothing is
fetched from a public index by name.

The workdir honours its ``.gitignore`` files (nested ones too, as git reads them) or one explicit
ignore file; ``.git`` never ships. The tarball is reproducible (sorted, zeroed times and owners),
so its hash is its content's.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath

import pathspec

from spotwise.executor.errors import ExecutorError

CODE_PREFIX = "spotwise/code"
WORKDIR_NAME = "workdir.tar.gz"
DEFAULT_MAX_MB = 512.0
PIP_WHEEL = (sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation")
WHEEL_NAME = re.compile(r"^spotwise-[A-Za-z0-9_.+-]+\.whl$")
"""A wheel's file name as pip writes it (the boot script uses it as is)."""
REPRODUCIBLE_EPOCH = "315532800"
"""1980-01-01, the earliest time a zip (a wheel) can hold: builds at it hash alike."""
LOCAL_ONLY = ("executor/clouds/*/fake",)
"""Folders of the source tree that only play a cloud on this machine (the API fakes of
``spotwise try`` and the tests, with their vendored API descriptions): an instance never runs
them, so the wheel shipped to it leaves them out. The package built from pyproject (PyPI's)
keeps them: ``spotwise try gcp|azure`` serves them from an installed Spotwise."""


@dataclass(frozen=True, slots=True)
class Bundle:
    """One file to ship: where it is here and its content-addressed key in the bucket."""

    path: Path
    key: str
    size: int
    files: int = 1

    def describe(self) -> str:
        """Its file count and size, for humans."""
        return f"{self.files} file{'s' * (self.files != 1)}, {self.size / 1e6:.2f} MB"


def _content_key(path: Path, name: str) -> str:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return f"{CODE_PREFIX}/{digest}/{name}"


def _spec(lines: list[str]) -> pathspec.PathSpec:
    return pathspec.GitIgnoreSpec.from_lines(lines)


def workdir_files(root: Path, ignore_file: Path | None = None) -> Iterator[str]:
    """The workdir's files to ship, as sorted relative POSIX paths.

    With ``ignore_file`` its patterns (gitignore syntax) apply from ``root`` and ``.gitignore``
    files are not read; otherwise each folder's ``.gitignore`` applies below it, the deepest
    deciding. Symbolic links are not followed and do not ship.
    """
    if ignore_file is not None:
        try:
            rules = ignore_file.read_text().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise ExecutorError(
                f"--ignore-file {ignore_file}: cannot read it ({exc}); pass a text file of "
                "gitignore rules"
            ) from exc
        explicit: list[tuple[str, pathspec.PathSpec]] = [("", _spec(rules))]

    def ignored(rel: str, specs: list[tuple[str, pathspec.PathSpec]]) -> bool:
        verdict = False
        for base, spec in specs:
            result = spec.check_file(rel[len(base) :])
            if result.include is not None:
                verdict = result.include
        return verdict

    def walk(folder: Path, rel: str, specs: list[tuple[str, pathspec.PathSpec]]) -> Iterator[str]:
        if ignore_file is None and (folder / ".gitignore").is_file():
            specs = [*specs, (rel, _spec((folder / ".gitignore").read_text().splitlines()))]
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            path = rel + entry.name
            if entry.is_symlink() or entry.name == ".git":
                continue
            if entry.is_dir():
                if not ignored(path + "/", specs):
                    yield from walk(Path(entry.path), path + "/", specs)
            elif entry.is_file() and not ignored(path, specs):
                yield path

    yield from walk(root, "", explicit if ignore_file is not None else [])


def pack_workdir(
    root: Path,
    into: Path,
    *,
    ignore_file: Path | None = None,
    max_mb: float = DEFAULT_MAX_MB,
) -> Bundle:
    """The workdir as a reproducible tarball in folder ``into``.

    Raises:
        ExecutorError: when the workdir is not a folder, or its files pass ``max_mb`` (the
            message names the largest, to ignore them).
    """
    if not root.is_dir():
        raise ExecutorError(f"--workdir {root}: not a folder; pass the folder your script is in")
    files = list(workdir_files(root, ignore_file))
    sizes = {name: (root / name).stat().st_size for name in files}
    total = sum(sizes.values())
    if total > max_mb * 1e6:
        largest = ", ".join(
            f"{name} ({size / 1e6:.0f} MB)"
            for name, size in sorted(sizes.items(), key=lambda kv: -kv[1])[:3]
        )
        raise ExecutorError(
            f"--workdir {root}: {total / 1e6:.0f} MB to ship, over {max_mb:g} MB; the largest "
            f"are {largest}: list data and outputs in .gitignore (or --ignore-file), and read "
            "data from S3 instead"
        )
    path = into / WORKDIR_NAME
    with (
        open(path, "wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as packed,
        tarfile.open(fileobj=packed, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for name in files:
            source = root / name
            info = tarfile.TarInfo(name)
            info.size = sizes[name]
            info.mode = 0o755 if os.access(source, os.X_OK) else 0o644
            with open(source, "rb") as data:
                tar.addfile(info, data)
    return Bundle(path, _content_key(path, WORKDIR_NAME), path.stat().st_size, len(files))


def source_tree() -> Path | None:
    """The folder the installed Spotwise was built from (an editable or local-folder
    install, as pip records it), or None when it came from a wheel."""
    for distribution in metadata.distributions(name="spotwise"):
        url = json.loads(distribution.read_text("direct_url.json") or "{}").get("url", "")
        root = Path(url.removeprefix("file://"))
        if url.startswith("file://") and (root / "pyproject.toml").is_file():
            return root
    return None


def _left_out(root: Path) -> Callable[[str, list[str]], set[str]]:
    """``shutil.copytree``'s ignore for the shipped wheel's copy of ``root``: caches, and the
    folders of :data:`LOCAL_ONLY`."""
    caches = shutil.ignore_patterns("__pycache__", "*.pyc")

    def ignore(folder: str, names: list[str]) -> set[str]:
        here = PurePosixPath(Path(folder).relative_to(root).as_posix())
        local = {n for n in names if any((here / n).match(p) for p in LOCAL_ONLY)}
        return set(caches(folder, names)) | local

    return ignore


def build_wheel(into: Path) -> Bundle:
    """A wheel of the installed Spotwise for its instances, built (reproducibly) from a copy of
    its source tree, so the tree itself gains no build folders; the local clouds' fakes
    (:data:`LOCAL_ONLY`) are left out of the copy.

    Raises:
        ExecutorError: when it was not installed from a source tree, or the build fails (both
            say to pass ``--wheel``).
    """
    root = source_tree()
    if root is None:
        raise ExecutorError(
            "this Spotwise was installed from a wheel, not a source folder: pass that wheel "
            "with --wheel PATH"
        )
    project = tomllib.loads((root / "pyproject.toml").read_text())
    folders = set(project["tool"]["setuptools"]["package-dir"].values())
    with tempfile.TemporaryDirectory(prefix="spotwise-wheel-") as scratch:
        copy = Path(scratch) / "src"
        copy.mkdir()
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            shutil.copy2(root / name, copy / name)
        for folder in sorted(folders):
            shutil.copytree(root / folder, copy / folder, symlinks=True, ignore=_left_out(root))
        built = subprocess.run(
            [*PIP_WHEEL, "-w", str(into), str(copy)],
            capture_output=True,
            text=True,
            env={**os.environ, "SOURCE_DATE_EPOCH": REPRODUCIBLE_EPOCH},
        )
    if built.returncode != 0:
        tail = built.stderr.strip().splitlines()[-3:]
        raise ExecutorError(
            f"cannot build a wheel of Spotwise from {root}: {' / '.join(tail)}; build one "
            "(pip wheel --no-deps) and pass it with --wheel PATH"
        )
    (wheel,) = into.glob("spotwise-*.whl")
    return given_wheel(wheel)


def given_wheel(path: Path) -> Bundle:
    """A wheel the user built.

    Raises:
        ExecutorError: when it is not a Spotwise wheel.
    """
    if not path.is_file() or not WHEEL_NAME.match(path.name):
        raise ExecutorError(f"--wheel {path}: not a spotwise-*.whl file as pip names them")
    return Bundle(path, _content_key(path, path.name), path.stat().st_size)


@dataclass(frozen=True, slots=True)
class ShippedCode:
    """The keys an instance fetches: the workdir tarball and the wheel."""

    workdir_key: str
    wheel_key: str

    @property
    def wheel_name(self) -> str:
        """The wheel's file name (the last part of its key)."""
        return self.wheel_key.rsplit("/", 1)[1]


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeInImage:
    """Code a cloud's instances find in their image, where nothing is shipped (Kubernetes: the
    user's image carries their code and Spotwise, ``pip install spotwise[instance]`` in its
    Dockerfile)."""

    image: str
    workdir: str | None
    """The folder inside the image the command runs in (None: the image's own)."""


Code = ShippedCode | CodeInImage
"""What a cloud's :meth:`~executor.clouds.base.Cloud.ship_code` gives its launcher."""


def shipped(code: Code, cloud: str) -> ShippedCode:
    """``code`` as shipped to a bucket, for a cloud whose instances fetch it from there.

    Raises:
        ExecutorError: for code in an image (another cloud's).
    """
    if not isinstance(code, ShippedCode):
        raise ExecutorError(f"the {cloud} cloud fetches its code from its bucket, not an image")
    return code


def ship(
    upload: Callable[[Bundle], bool],
    url: str,
    workdir: Path,
    *,
    ignore_file: Path | None = None,
    wheel: Path | None = None,
    max_mb: float = DEFAULT_MAX_MB,
    say: Callable[[str], None] = lambda _: None,
) -> ShippedCode:
    """Pack the workdir, build (or take) the wheel, and ``upload`` each (a cloud's put, True
    when it was not there yet) to the store at ``url``; say what went where."""
    with tempfile.TemporaryDirectory(prefix="spotwise-ship-") as scratch:
        folder = Path(scratch)
        say(f"workdir: packing {workdir}")
        packed = pack_workdir(workdir, folder, ignore_file=ignore_file, max_mb=max_mb)
        if wheel is None:
            say("wheel: building Spotwise's wheel (up to a minute)")
        bundles = {
            "workdir": packed,
            "wheel": given_wheel(wheel) if wheel is not None else build_wheel(folder),
        }
        for what, bundle in bundles.items():
            say(f"{what}: putting {bundle.describe()} at {url}/{bundle.key} unless it is there")
            state = "uploaded" if upload(bundle) else "already there"
            say(f"{what}: {bundle.describe()} → {url}/{bundle.key} ({state})")
    return ShippedCode(bundles["workdir"].key, bundles["wheel"].key)

"""Spec files (sweep specs, fleet files) are a stranger's: an alias bomb, a file nested
100,000 deep, a binary or a huge file is refused in one line naming the file, at once, without
reading gigabytes."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from spotwise.executor.errors import ExecutorError
from spotwise.executor.fleets.fleet import load_fleet_spec
from spotwise.executor.spec_file import MAX_BYTES, read_spec_file
from spotwise.executor.sweeps.spec import load_spec
from tests.conftest import CliRun

LOADERS: dict[str, Callable[[Path], Any]] = {"sweep": load_spec, "fleet": load_fleet_spec}


def alias_bomb() -> str:
    """A 'billion laughs' YAML file: its name expands to 9**10 strings."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 11)]
    return "\n".join([*lines, "name: *a10", ""])


@pytest.mark.parametrize("kind", LOADERS)
def test_a_yaml_alias_bomb_is_refused_at_once_without_expanding(tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"{kind}.yaml"
    path.write_text(alias_bomb())
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(ExecutorError, match="anchor or alias") as caught:
            LOADERS[kind](path)
        took = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert took < 5  # (it is milliseconds; 47-100 s and 3.5 GB before)
    assert peak < 20 * 2**20
    message = str(caught.value)
    assert message.startswith(f"{path}, line 1") and "write each value out" in message
    assert "\n" not in message


def test_an_anchor_alone_is_refused_too(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text("name: &n nightly\nbudget_usd_per_hour: 1\njobs: []\n")
    with pytest.raises(ExecutorError, match=r"line 1, column 7: a YAML anchor or alias"):
        load_fleet_spec(path)


@pytest.mark.parametrize(
    ("suffix", "text"),
    [
        (".yaml", "name: " + "[" * 100_000 + "]" * 100_000 + "\n"),
        (".toml", "name = " + "[" * 100_000 + "]" * 100_000 + "\n"),
        (".toml", "a" + ".a" * 100 + " = 1\n"),  # dotted keys: deep tables, no recursion
        (".yaml", "name:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 60)) + "\n"),
    ],
    ids=["yaml-flow", "toml-array", "toml-dotted", "yaml-block"],
)
@pytest.mark.parametrize("kind", LOADERS)
def test_deep_nesting_is_refused_in_one_line(
    tmp_path: Path, kind: str, suffix: str, text: str
) -> None:
    path = tmp_path / f"{kind}{suffix}"
    path.write_text(text)
    with pytest.raises(ExecutorError, match="deep") as caught:
        LOADERS[kind](path)
    assert str(caught.value).startswith(str(path)) and "a few levels" in str(caught.value)


@pytest.mark.parametrize(
    "data", [bytes(range(256)) * 4, b"\x89PNG\r\n\x1a\n\xff\xfe", b"a = 1\x00"]
)
@pytest.mark.parametrize("kind", LOADERS)
def test_a_binary_file_is_named_with_what_to_give_instead(
    tmp_path: Path, kind: str, data: bytes
) -> None:
    path = tmp_path / f"{kind}.toml"
    path.write_bytes(data)
    with pytest.raises(ExecutorError) as caught:
        LOADERS[kind](path)
    assert str(caught.value).startswith(f"{path}: not UTF-8 text")
    assert "TOML text file: give that file, saved as UTF-8" in str(caught.value)


def test_a_file_over_a_mebibyte_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text("# padding\n" * (MAX_BYTES // 10 + 1))
    with pytest.raises(ExecutorError, match="at most 1 MiB of YAML text"):
        load_spec(path)


def test_yaml_errors_are_one_line_with_where(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yml"
    path.write_text("name: x\njobs: [a\n")
    with pytest.raises(ExecutorError) as caught:
        read_spec_file(path, "fleet file")
    message = str(caught.value)
    assert message.startswith(f"{path}: not valid YAML: line 3, column 1:")
    assert "\n" not in message


def test_plain_specs_still_read(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text("name: n\nlist: [1, {a: [2, 3]}]\n")
    assert read_spec_file(path, "fleet file") == {"name": "n", "list": [1, {"a": [2, 3]}]}


@pytest.mark.parametrize("command", [("fleet", "run"), ("sweep", "run")])
def test_the_commands_refuse_a_bomb_in_one_line(
    cli: CliRun, tmp_path: Path, command: tuple[str, str]
) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb())
    result = cli(*command, str(path))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"{path}, line 1, column 5: a YAML anchor or alias" in result.stderr
    assert not (tmp_path / "store").exists()  # refused before anything was made

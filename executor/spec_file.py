"""Reading a stranger's spec file (a sweep spec, a fleet file) safely: TOML or YAML text of at
most :data:`MAX_BYTES`, nested at most :data:`MAX_DEPTH` deep, with no YAML anchors or aliases.

A spec is a handful of fields. Nothing in one needs an alias (``*name``), which is what a
"billion laughs" file uses to make gigabytes from a few lines, nor a thousand levels of
nesting, which overflows the parsers' recursion. Each refusal is one line naming the file and
what to write instead.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import yaml
from yaml.error import Mark
from yaml.events import AliasEvent, CollectionStartEvent, ScalarEvent
from yaml.nodes import Node

from spotwise.executor.errors import ExecutorError

MAX_BYTES = 1 << 20
"""A spec file's largest size (1 MiB): a spec is a few kilobytes."""
MAX_DEPTH = 32
"""Its deepest nesting of tables and lists (a spec's is four or five)."""


class _Refused(Exception):
    """What the loader will not read (``alias`` or ``depth``), and where."""

    def __init__(self, problem: str, mark: Mark) -> None:
        super().__init__(problem)
        self.problem, self.mark = problem, mark


class _SpecLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing anchors and aliases and nesting past :data:`MAX_DEPTH`
    as it composes (before an alias could be expanded)."""

    _depth = 0

    def compose_node(self, parent: Node | None, index: object) -> Node | None:
        """The next node, refused at an anchor, an alias or past :data:`MAX_DEPTH`."""
        event = self.peek_event()
        if isinstance(event, AliasEvent) or (
            isinstance(event, ScalarEvent | CollectionStartEvent) and event.anchor is not None
        ):
            raise _Refused("alias", event.start_mark)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused("depth", event.start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def read_spec_file(path: Path, what: str) -> Any:
    """The parsed contents of ``path``: TOML for ``.toml``, YAML otherwise.

    Args:
        path: the file.
        what: what the file is, for messages ("sweep spec", "fleet file").

    Raises:
        ExecutorError: one line naming the file: it cannot be read, is too big, is not UTF-8
            text, is not valid TOML/YAML, uses YAML aliases, or is nested too deep.
    """
    kind = "TOML" if path.suffix == ".toml" else "YAML"
    text = _utf8_text(_read_at_most(path, what, kind), path, what, kind)
    raw = _parse(text, path, what, kind)
    if _depth(raw) > MAX_DEPTH:
        raise ExecutorError(
            f"{path}: nested more than {MAX_DEPTH} deep; a {what} needs a few levels"
        )
    return raw


def _read_at_most(path: Path, what: str, kind: str) -> bytes:
    """The file's bytes, refusing one that cannot be read or is over :data:`MAX_BYTES`."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ExecutorError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from exc
    if len(data) > MAX_BYTES:
        raise ExecutorError(
            f"{path}: a {what} is at most {MAX_BYTES >> 20} MiB of {kind} text; this file is "
            "bigger: give the spec itself, not a data file"
        )
    return data


def _utf8_text(data: bytes, path: Path, what: str, kind: str) -> str:
    """``data`` as text, refusing a NUL byte or bytes that are not UTF-8."""
    text, binary = "", data.find(b"\x00")
    if binary < 0:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            binary = exc.start
    if binary >= 0:
        raise ExecutorError(
            f"{path}: not UTF-8 text (a binary byte at offset {binary}); a {what} is a "
            f"{kind} text file: give that file, saved as UTF-8"
        )
    return text


def _parse(text: str, path: Path, what: str, kind: str) -> Any:
    """``text`` parsed as ``kind``, each parser's error turned into one line naming the file."""
    try:
        return tomllib.loads(text) if kind == "TOML" else _load_yaml(text)
    except tomllib.TOMLDecodeError as exc:
        raise ExecutorError(f"{path}: not valid TOML: {exc}") from None
    except _Refused as exc:
        raise ExecutorError(_refusal(exc, path, what)) from None
    except yaml.MarkedYAMLError as exc:
        raise ExecutorError(f"{path}: not valid YAML: {_marked_problem(exc)}") from None
    except yaml.YAMLError as exc:
        raise ExecutorError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise ExecutorError(
            f"{path}: nested too deep to read as {kind}; a {what} needs a few levels"
        ) from None


def _refusal(exc: _Refused, path: Path, what: str) -> str:
    """The line for an alias or a nesting the loader refused, with its line and column."""
    at = f"{path}, line {exc.mark.line + 1}, column {exc.mark.column + 1}"
    if exc.problem == "alias":
        return (
            f"{at}: a YAML anchor or alias (&name, *name), which a {what} may not use: "
            "write each value out"
        )
    return f"{at}: nested more than {MAX_DEPTH} deep; a {what} needs a few levels"


def _marked_problem(exc: yaml.MarkedYAMLError) -> str:
    """A YAML error's line and column (when it has them) and its problem on one line."""
    mark = exc.problem_mark or exc.context_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    problem = " ".join(str(exc.problem or exc.context or "malformed").split())
    return f"{where}{problem}"


def _load_yaml(text: str) -> Any:
    loader = _SpecLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _depth(value: object) -> int:
    """How deep ``value``'s tables and lists nest (without recursion)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            return deepest
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest

"""Every command and option explains itself, and its help reads whole at 80 columns."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer

from spotwise.cli import app
from tests.conftest import CliRun


def commands(command: Any = None, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    """Every leaf command of the CLI with its name, e.g. ``bench policy``."""
    command = command or typer.main.get_command(app)
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():
            yield from commands(sub, (*path, name))
    else:
        yield " ".join(path), command


def test_every_option_of_every_command_has_help() -> None:
    silent = [
        f"{name} {param.opts[0]}"
        for name, command in commands()
        for param in command.params
        if param.param_type_name == "option" and not param.hidden and not (param.help or "").strip()
    ]
    assert len(list(commands())) > 20 and silent == []


def test_long_option_names_are_printed_whole_at_80_columns(cli_in_process: CliRun) -> None:
    result = cli_in_process("bench", "policy", "--help", env={"COLUMNS": "80"})
    assert result.returncode == 0
    assert "--checkpoint-stall-seconds" in result.stdout and "…" not in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 80


def test_runs_cloud_options_name_every_cloud_not_one() -> None:
    from spotwise.executor.clouds.registry import CLOUDS

    run = dict(commands())["run"]
    helps = {p.opts[0]: p.help or "" for p in run.params if p.param_type_name == "option"}
    assert all(f"on {cloud}" in " ".join(helps["--pools"].split()) for cloud in CLOUDS)
    assert "trace names" in helps["--pools"]
    for flag in ("--nodes", "--rdzv-endpoint"):
        assert "a cloud" in helps[flag] and "aws" not in helps[flag]

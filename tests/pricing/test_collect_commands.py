"""The ``collect`` lines that messages about a missing or stale price print: each names its
cloud's command and only flags that command takes."""

from __future__ import annotations

from typing import Any

import pytest
import typer

from spotwise.cli import app
from spotwise.pricing.collect_commands import (
    COLLECTORS,
    collect_all,
    collect_command,
    collect_shape,
    for_shape,
)


def _flags_of(cloud: str) -> set[str]:
    """The options ``spotwise collect CLOUD`` takes."""
    root: Any = typer.main.get_command(app)  # a group of groups (typer's own click)
    command = root.commands["collect"].commands[cloud]
    return {flag for param in command.params for flag in (*param.opts, *param.secondary_opts)}


@pytest.mark.parametrize("cloud", sorted(COLLECTORS))
def test_every_flag_a_collect_line_names_is_one_its_command_takes(cloud: str) -> None:
    regions = ["r1", "r2"] if COLLECTORS[cloud].region_flag == "--regions" else ["r1"]
    lines = [
        collect_all(cloud, shapes=["s1", "s2"], gpu="A100"),
        collect_command(cloud, regions=regions, shapes=["s1"], gpu="A100", on_demand=True),
    ]
    named = {word.rstrip(",") for line in lines for word in line.split() if word.startswith("--")}
    assert named >= {COLLECTORS[cloud].region_flag, COLLECTORS[cloud].shape_flag}
    assert named <= _flags_of(cloud)
    assert all(line.startswith(f"spotwise collect {cloud} ") for line in lines)


def test_a_cloud_collected_one_region_a_run_is_never_told_two() -> None:
    with pytest.raises(ValueError, match="one region a run"):
        collect_command("aws", regions=["us-east-1", "us-west-2"])


def test_every_provider_the_stores_take_has_a_collect_line() -> None:
    from spotwise.pricing.frames import PROVIDERS

    assert set(COLLECTORS) == PROVIDERS


def test_a_shape_is_collected_by_its_clouds_command_and_an_unknown_one_by_every_clouds() -> None:
    assert collect_shape("a2-highgpu-1g") == "spotwise collect gcp --shapes a2-highgpu-1g"
    unknown = collect_shape("x9").split("; ")
    assert [line.split(":")[0] for line in unknown] == list(COLLECTORS)
    assert "aws: spotwise collect aws --region us-east-1 --instance-types x9" in unknown


def test_for_shape_runs_the_command_of_the_shapes_cloud_else_of_every_cloud() -> None:
    assert for_shape("Standard_NC6s_v3", lambda cloud: f"<{cloud}>") == "<azure>"
    assert for_shape("x9", lambda cloud: f"<{cloud}>") == "; ".join(
        f"{cloud}: <{cloud}>" for cloud in COLLECTORS
    )

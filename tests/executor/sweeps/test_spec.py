"""Sweep specs are a stranger's files: every bad field is refused in one line naming it, and
nothing in a spec selects code or reaches a shell."""

from __future__ import annotations

import re
from pathlib import Path

import optuna
import pytest

from spotwise.executor.errors import ExecutorError
from spotwise.executor.sweeps.spec import definition_changes, grid_spec, load_spec

GOOD = """
name = "mlp"
direction = "maximize"
trials = 5
compute_hours = 0.5
command = ["python", "train.py", "--lr", "{lr}", "--hidden", "{hidden}", "--ckpt", "{ckpt}"]
[sampler]
type = "tpe"
seed = 3
[pruner]
type = "median"
n_warmup_steps = 1
[params]
lr = { type = "float", low = 1e-4, high = 1e-2, log = true }
hidden = { type = "int", low = 32, high = 128, step = 32 }
"""


def write(tmp_path: Path, text: str, suffix: str = ".toml") -> Path:
    path = tmp_path / f"spec{suffix}"
    path.write_text(text)
    return path


def test_a_good_spec_builds_its_sampler_pruner_and_command(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, GOOD))
    assert (spec.name, spec.direction, spec.trials, spec.compute_hours) == (
        "mlp",
        "maximize",
        5,
        0.5,
    )
    assert isinstance(spec.build_sampler(), optuna.samplers.TPESampler)
    pruner = spec.build_pruner()
    assert isinstance(pruner, optuna.pruners.MedianPruner)
    assert spec.render({"lr": 0.001, "hidden": 64, "ckpt": "/c", "trial": 0, "sweep": "mlp"}) == [
        "python",
        "train.py",
        "--lr",
        "0.001",
        "--hidden",
        "64",
        "--ckpt",
        "/c",
    ]


def test_yaml_specs_read_the_same(tmp_path: Path) -> None:
    text = """
name: mlp
command: [python, train.py, --x, "{x}"]
sampler: {type: grid}
params:
  x: {type: int, low: 0, high: 9, values: [1, 2, 3]}
"""
    spec = load_spec(write(tmp_path, text, ".yaml"))
    assert spec.trials == 3
    assert spec.grid_points() == [{"x": 1}, {"x": 2}, {"x": 3}]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('type = "tpe"', 'type = "os.system"'), "sampler type must be one of"),
        (("seed = 3", "seed = [1]"), "must be a number, bool or string"),
        (("seed = 3", "constraints_func = 'os.system'"), "has no option 'constraints_func'"),
        (('type = "median"', 'type = "mymodule.Pruner"'), "pruner type must be one of"),
        (('"{ckpt}"]', '"{ckpt.__class__}"]'), "names no param"),
        (('"{ckpt}"]', '"{other}"]'), "names no param"),
        (('name = "mlp"', 'name = "../../etc"'), "name must be"),
        (("trials = 5", "trials = 0"), "trials must be"),
        (("low = 1e-4, high = 1e-2", "low = 1e-2, high = 1e-4"), "finite low <= high"),
        (('direction = "maximize"', 'direction = "sideways"'), "direction must be"),
        (("compute_hours = 0.5", "compute_hours = -1"), "compute_hours must be"),
        (("trials = 5", "trials = 5\nshell = true"), "unknown field 'shell'"),
        (('type = "float"', 'type = "complex"'), "type must be float, int or categorical"),
        (("compute_hours = 0.5", "compute_hours = true"), "compute_hours must be a positive"),
        (("step = 32", "step = 0"), "step must be a whole number above 0"),
        (("high = 128, step = 32", "high = 128, step = 1.5"), "step must be a whole number"),
        (("high = 1e-2, log = true", "high = 1e-2, step = 0.0"), "step must be a number above"),
        (("log = true", 'log = "no"'), "log must be true or false"),
        (("low = 32", "low = true"), "low and high must each be a whole number"),
        (("low = 32", "low = 32.5"), "low and high must each be a whole number"),
        (("seed = 3", "seed = 3\nn_startup_trials = -5"), "n_startup_trials must be a whole nu"),
        (("seed = 3", "seed = true"), "option seed must be a whole number"),
        (("seed = 3", "seed = 3\nmultivariate = 1"), "multivariate must be true or false"),
        (("n_warmup_steps = 1", "n_warmup_steps = true"), "must be a whole number >= 0, got True"),
        (("n_warmup_steps = 1", "n_warmup_steps = 1.5"), "must be a whole number >= 0, got 1.5"),
        (('"{ckpt}"]', '"{ckpt"]'), r"has a \{ alone; write a literal brace twice"),
        (('"{ckpt}"]', '"ckpt}"]'), r"has a \} alone"),
    ],
)
def test_bad_fields_are_refused_by_name(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    text = GOOD.replace(*change, 1)
    assert text != GOOD
    with pytest.raises(ExecutorError, match=message) as caught:
        load_spec(write(tmp_path, text))
    assert str(tmp_path) in str(caught.value)


def test_broken_files_say_where(tmp_path: Path) -> None:
    with pytest.raises(ExecutorError, match="not valid TOML"):
        load_spec(write(tmp_path, "name = [\n"))
    with pytest.raises(ExecutorError, match="not valid YAML"):
        load_spec(write(tmp_path, "a: [b\n", ".yaml"))
    with pytest.raises(ExecutorError, match=r"\.toml or \.yaml"):
        load_spec(write(tmp_path, GOOD, ".py"))
    with pytest.raises(ExecutorError, match="cannot read"):
        load_spec(tmp_path / "missing.toml")


def test_a_grid_sweep_needs_every_param_on_its_grid(tmp_path: Path) -> None:
    text = GOOD.replace('type = "tpe"', 'type = "grid"').replace("seed = 3\n", "")
    with pytest.raises(ExecutorError, match="a grid sweep needs values for every param; lr"):
        load_spec(write(tmp_path, text))


def test_grid_queues_take_ranges_and_lists() -> None:
    spec = grid_spec("q", ["shard=0..3", "kind=a,b"], ["python", "p.py", "{shard}", "{kind}"])
    assert spec.queue and spec.trials == 8
    assert spec.grid_points()[:3] == [
        {"shard": 0, "kind": "a"},
        {"shard": 0, "kind": "b"},
        {"shard": 1, "kind": "a"},
    ]
    for bad in ("shard", "shard=3..1", "shard=a..b", "1x=0..3", "shard="):
        with pytest.raises(ExecutorError, match="--grid"):
            grid_spec("q", [bad], ["python", "p.py"])
    with pytest.raises(ExecutorError, match="names no param"):
        grid_spec("q", ["shard=0..1"], ["python", "p.py", "{shard}", "{nope}"])


def test_a_literal_brace_is_written_twice_as_str_format_does(tmp_path: Path) -> None:
    text = GOOD.replace(
        '"--ckpt", "{ckpt}"]', '"--ckpt", "{ckpt}", "--json", "{{\\"lr\\": {lr}}}"]'
    )
    spec = load_spec(write(tmp_path, text))
    values = {"lr": 0.001, "hidden": 64, "ckpt": "/c", "trial": 0, "sweep": "mlp"}
    assert spec.render(values)[-2:] == ["--json", '{"lr": 0.001}']
    queue = grid_spec("q", ["a=1"], ["echo", "{{a}}", "{{{a}}}", "}}{a}{{"])
    assert queue.render({"a": 1}) == ["echo", "{a}", "{1}", "}1{"]
    with pytest.raises(ExecutorError, match="names no param"):
        grid_spec("q", ["a=1"], ["echo", "{}"])


def test_a_grid_axis_given_twice_is_refused_not_dropped() -> None:
    with pytest.raises(
        ExecutorError,
        match=r"--grid a is given twice; give all its values in one, e.g. --grid a=1,2 ",
    ):
        grid_spec("q", ["a=1", "a=2"], ["echo", "{a}"])
    assert grid_spec("q", ["a=1,2", "b=x"], ["echo", "{a}{b}"]).trials == 2


def test_an_unnamed_queue_is_named_after_its_command_and_grid() -> None:
    one = grid_spec(None, ["a=1,2"], ["python", "t.py", "{a}"])
    assert re.fullmatch(r"queue-[0-9a-f]{8}", one.name)
    assert grid_spec(None, ["a=1,2"], ["python", "t.py", "{a}"]).name == one.name
    assert grid_spec(None, ["a=1,2"], ["python", "other.py", "{a}"]).name != one.name
    assert grid_spec(None, ["a=1..2"], ["python", "t.py", "{a}"]).name != one.name  # ints
    assert grid_spec("nightly", ["a=1,2"], ["python", "t.py", "{a}"]).name == "nightly"


def test_a_changed_definition_says_what_changed() -> None:
    one = grid_spec("q", ["a=1,2"], ["python", "t.py", "{a}"]).definition()
    assert definition_changes(one, one) == ""
    other = grid_spec("q", ["a=1,2,3"], ["python", "other.py", "{a}"]).definition()
    assert definition_changes(one, other) == (
        "command 'python t.py {a}' there, 'python other.py {a}' here; params a; trials 2 there, "
        "3 here"
    )

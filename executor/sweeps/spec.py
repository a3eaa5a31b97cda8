"""What a sweep is: its search space, direction, sampler, pruner and the command each trial
runs, read from a small TOML or YAML file (or from ``--grid`` for a work queue).

    name = "mlp-lr-width"
    direction = "minimize"
    trials = 8
    compute_hours = 0.5
    command = ["python", "train.py", "--lr", "{lr}", "--hidden", "{hidden}", "--ckpt", "{ckpt}"]
    [sampler]
    type = "tpe"            # tpe | random | qmc | grid (every point of the params' grids)
    seed = 0
    [pruner]
    type = "median"         # median | percentile | successive_halving | hyperband | none
    n_warmup_steps = 1
    [params]
    lr = { type = "float", low = 1e-4, high = 1e-2, log = true }
    hidden = { type = "categorical", choices = [64, 128] }

A spec is a stranger's file: sampler and pruner names select from fixed tables, their options
must be parameters of that class with plain values, and the command's placeholders are
replaced as whole arguments' parts (``{name}``), never evaluated and never given to a shell.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeGuard

import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from spotwise.executor.errors import ExecutorError
from spotwise.executor.spec_file import read_spec_file

SAMPLERS: dict[str, type[optuna.samplers.BaseSampler]] = {
    "tpe": optuna.samplers.TPESampler,
    "random": optuna.samplers.RandomSampler,
    "qmc": optuna.samplers.QMCSampler,
    "grid": optuna.samplers.RandomSampler,  # the grid's points are enqueued; see grid_points
}
PRUNERS: dict[str, type[optuna.pruners.BasePruner]] = {
    "median": optuna.pruners.MedianPruner,
    "percentile": optuna.pruners.PercentilePruner,
    "successive_halving": optuna.pruners.SuccessiveHalvingPruner,
    "hyperband": optuna.pruners.HyperbandPruner,
    "none": optuna.pruners.NopPruner,
}
OPTIONS: dict[str, frozenset[str]] = {
    "tpe": frozenset(
        {"seed", "n_startup_trials", "n_ei_candidates", "multivariate", "group", "constant_liar"}
    ),
    "random": frozenset({"seed"}),
    "qmc": frozenset({"seed", "qmc_type", "scramble"}),
    "grid": frozenset(),
    "median": frozenset({"n_startup_trials", "n_warmup_steps", "interval_steps", "n_min_trials"}),
    "percentile": frozenset(
        {"percentile", "n_startup_trials", "n_warmup_steps", "interval_steps", "n_min_trials"}
    ),
    "successive_halving": frozenset(
        {"min_resource", "reduction_factor", "min_early_stopping_rate", "bootstrap_count"}
    ),
    "hyperband": frozenset({"min_resource", "max_resource", "reduction_factor", "bootstrap_count"}),
    "none": frozenset(),
}
"""The options a spec may give each sampler and pruner: plain values only (never a callable's
name)."""
RESERVED = frozenset({"trial", "ckpt", "sweep"})
"""Placeholders every command may use besides its params: the trial's number, its
checkpoint folder (the same for every retry of a trial) and the sweep's name."""
SWEEP_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")
_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_BRACES = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
"""A command argument's braces, as str.format reads them: ``{{`` and ``}}`` are a literal
brace, ``{name}`` a placeholder, and a brace alone is a mistake."""
Scalar = bool | int | float | str


@dataclass(frozen=True, slots=True)
class Param:
    """One dimension of the search space."""

    name: str
    distribution: BaseDistribution
    grid: tuple[Scalar, ...] | None
    """The values a grid sweep takes (None: not on a grid)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepSpec:
    """A validated sweep."""

    name: str
    command: tuple[str, ...]
    params: tuple[Param, ...]
    direction: Literal["minimize", "maximize"] = "minimize"
    trials: int = 8
    sampler: str = "tpe"
    sampler_options: Mapping[str, Scalar] = field(default_factory=dict)
    pruner: str = "none"
    pruner_options: Mapping[str, Scalar] = field(default_factory=dict)
    compute_hours: float = 1.0
    """One trial's compute, as the policy is told."""
    queue: bool = False
    """A work queue: tasks with no metric, each run at least once (``--grid``)."""

    @property
    def distributions(self) -> dict[str, BaseDistribution]:
        """Each param's distribution, by name."""
        return {p.name: p.distribution for p in self.params}

    def build_sampler(self) -> optuna.samplers.BaseSampler:
        """A new Optuna sampler of the spec's kind and options."""
        return SAMPLERS[self.sampler](**self.sampler_options)

    def build_pruner(self) -> optuna.pruners.BasePruner:
        """A new Optuna pruner of the spec's kind and options."""
        return PRUNERS[self.pruner](**self.pruner_options)

    def definition(self) -> dict[str, Any]:
        """What makes this sweep's trials what they are (not its name, nor ``compute_hours``,
        which only tells the policy): stored with its study, so a spec that changed is not run
        into the old study's trials."""
        return {
            "command": list(self.command),
            "params": {
                p.name: {
                    **json.loads(optuna.distributions.distribution_to_json(p.distribution)),
                    "grid": None if p.grid is None else list(p.grid),
                }
                for p in self.params
            },
            "direction": self.direction,
            "trials": self.trials,
            "sampler": {"type": self.sampler, **self.sampler_options},
            "pruner": {"type": self.pruner, **self.pruner_options},
            "queue": self.queue,
        }

    def grid_points(self) -> list[dict[str, Scalar]]:
        """Every point of the grid, in order (a grid sweep only)."""
        grids = [[(p.name, v) for v in p.grid or ()] for p in self.params]
        return [dict(point) for point in itertools.product(*grids)]

    def render(self, values: Mapping[str, object]) -> list[str]:
        """The command with ``{name}`` replaced in each argument (no shell, no evaluation)."""

        return [
            "".join(_text(values[text]) if named else text for text, named in _pieces(arg))
            for arg in self.command
        ]


def _pieces(arg: str) -> list[tuple[str, bool]]:
    """``arg`` as literal text and placeholders' names (``True``), in order.

    Raises:
        ValueError: a brace alone (a literal brace is written twice).
    """
    pieces, at = [], 0
    for match in _BRACES.finditer(arg):
        pieces.append((arg[at : match.start()], False))
        token = match.group(0)
        if match.group(1) is not None:
            pieces.append((match.group(1), True))
        elif token in ("{{", "}}"):
            pieces.append((token[0], False))
        else:
            raise ValueError(token)
        at = match.end()
    pieces.append((arg[at:], False))
    return [p for p in pieces if p[0] or p[1]]


def _text(value: object) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def load_spec(path: Path) -> SweepSpec:
    """Read and check a TOML (``.toml``) or YAML (``.yaml``, ``.yml``) sweep spec.

    Raises:
        ExecutorError: naming the file and the field, and what to write instead.
    """
    if path.suffix not in (".toml", ".yaml", ".yml"):
        raise ExecutorError(f"{path}: a sweep spec is a .toml or .yaml file")
    raw = read_spec_file(path, "sweep spec")
    if not isinstance(raw, dict):
        raise ExecutorError(f"{path}: a sweep spec is a table of fields (name, command, params)")
    return spec_from_dict(raw, where=str(path))


_SPEC_FIELDS = frozenset(
    {"name", "command", "params", "direction", "trials", "sampler", "pruner", "compute_hours"}
)


def spec_from_dict(
    raw: Mapping[str, Any], *, where: str, command: Sequence[str] | None = None
) -> SweepSpec:
    """A checked spec from parsed fields (``command`` given on the command line wins)."""
    _check_known_fields(raw, where)
    name = _sweep_name(raw.get("name"), where)
    params = _params(raw.get("params"), where)
    argv = _argv(list(command) if command else raw.get("command"), where)
    _check_placeholders(argv, {p.name for p in params} | RESERVED, where)
    direction = _direction(raw.get("direction", "minimize"), where)
    sampler, sampler_options = _choice(raw.get("sampler", "tpe"), SAMPLERS, "sampler", where)
    pruner, pruner_options = _choice(raw.get("pruner", "none"), PRUNERS, "pruner", where)
    trials = _grid_trials(raw, params, where) if sampler == "grid" else raw.get("trials", 8)
    if not _is_whole(trials) or not 1 <= trials <= 100_000:
        raise ExecutorError(f"{where}: trials must be a whole number from 1 to 100000")
    compute_hours = _compute_hours(raw.get("compute_hours", 1.0), where)
    return SweepSpec(
        name=name,
        command=tuple(argv),
        params=params,
        direction=direction,
        trials=trials,
        sampler=sampler,
        sampler_options=sampler_options,
        pruner=pruner,
        pruner_options=pruner_options,
        compute_hours=compute_hours,
    )


def _check_known_fields(raw: Mapping[str, Any], where: str) -> None:
    """Refuse a field a sweep spec does not have."""
    unknown = sorted(set(raw) - _SPEC_FIELDS)
    if unknown:
        raise ExecutorError(
            f"{where}: unknown field {unknown[0]!r}; the fields are {sorted(_SPEC_FIELDS)}"
        )


def _sweep_name(name: object, where: str) -> str:
    """The sweep's name, checked against ``SWEEP_NAME``."""
    if not isinstance(name, str) or not SWEEP_NAME.fullmatch(name):
        raise ExecutorError(
            f"{where}: name must be 1-64 letters, digits, '.', '_' or '-' starting with a "
            f"letter, got {str(name)[:40]!r}"
        )
    return name


def _argv(argv: object, where: str) -> list[str]:
    """The command as a non-empty list of strings."""
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise ExecutorError(
            f"{where}: command must be a list of strings (the program and its arguments), "
            'e.g. ["python", "train.py", "--lr", "{lr}", "--ckpt", "{ckpt}"]'
        )
    return argv


def _check_placeholders(argv: list[str], names: set[str] | frozenset[str], where: str) -> None:
    """Refuse a lone brace in the command, or a placeholder that names no param."""
    for arg in argv:
        try:
            pieces = _pieces(arg)
        except ValueError as exc:
            raise ExecutorError(
                f"{where}: the command's argument {arg[:60]!r} has a {exc} alone; write a "
                "literal brace twice ({{ or }}), a param as {name}"
            ) from None
        for placeholder in (text for text, named in pieces if named):
            if placeholder not in names:
                raise ExecutorError(
                    f"{where}: the command's {{{placeholder[:40]}}} names no param; use one of "
                    f"{sorted(names)}"
                )


def _direction(direction: object, where: str) -> Literal["minimize", "maximize"]:
    """The study's direction, minimize or maximize."""
    if direction not in ("minimize", "maximize"):
        raise ExecutorError(f"{where}: direction must be minimize or maximize")
    return direction


def _grid_trials(raw: Mapping[str, Any], params: tuple[Param, ...], where: str) -> object:
    """A grid sweep's trials: its grid's size, which ``trials`` may only repeat."""
    loose = [p.name for p in params if p.grid is None]
    if loose:
        raise ExecutorError(
            f"{where}: a grid sweep needs values for every param; {loose[0]} has none "
            "(give it choices, or values = [...])"
        )
    size = math.prod(len(p.grid or ()) for p in params)
    trials = raw.get("trials", size)
    if trials != size:
        raise ExecutorError(f"{where}: the grid has {size} points, trials says {trials}")
    return trials


def _compute_hours(compute: object, where: str) -> float:
    """One trial's compute hours, a positive number below 100000."""
    if not _is_number(compute) or not (0 < float(compute) < 1e5):
        raise ExecutorError(f"{where}: compute_hours must be a positive number of hours")
    return float(compute)


def definition_changes(stored: Mapping[str, Any], given: Mapping[str, Any]) -> str:
    """How ``given`` differs from a ``stored`` :meth:`SweepSpec.definition`, in a few words
    (empty when it does not)."""
    changes = []
    for key in sorted(set(stored) | set(given)):
        was, now = stored.get(key), given.get(key)
        if json.dumps(was, sort_keys=True) == json.dumps(now, sort_keys=True):
            continue
        if key == "params" and isinstance(was, dict) and isinstance(now, dict):
            names = sorted(n for n in set(was) | set(now) if was.get(n) != now.get(n))
            changes.append(f"params {', '.join(names)}")
        elif key in ("command", "trials", "direction"):
            changes.append(f"{key} {_short(was)} there, {_short(now)} here")
        else:
            changes.append(key)
    return "; ".join(changes)


def _short(value: object) -> str:
    if not isinstance(value, list):
        return str(value)
    text = " ".join(str(v) for v in value)
    return repr(text if len(text) <= 60 else text[:57] + "...")


QUEUE_NAME = "queue-{digest}"
"""An unnamed work queue's name: from its command and grid, so that running the same queue
again resumes it and a different one never meets its tasks."""


def grid_spec(name: str | None, grid: Sequence[str], command: Sequence[str]) -> SweepSpec:
    """A work queue: ``shard=0..7`` (or ``shard=a,b,c``) for each ``--grid``, every point run
    at least once, no metric; named after its command and grid when ``name`` is None."""
    params: dict[str, Any] = {}
    for item in grid:
        key, sep, values = item.partition("=")
        if not sep or not _PARAM.fullmatch(key.strip()):
            raise ExecutorError(f"--grid {item[:40]!r}: write NAME=0..N-1 or NAME=a,b,c")
        if key.strip() in params:
            both = ",".join(str(v) for v in [*params[key.strip()]["choices"], values.strip()])
            raise ExecutorError(
                f"--grid {key.strip()} is given twice; give all its values in one, e.g. "
                f"--grid {key.strip()}={both[:60]} (each --grid is another axis of the product)"
            )
        params[key.strip()] = {"type": "categorical", "choices": _grid_values(item, values)}
    spec = spec_from_dict(
        {"name": name or "queue", "params": params, "sampler": "grid", "direction": "minimize"},
        where="--grid",
        command=command,
    )
    fields = {f: getattr(spec, f) for f in SweepSpec.__dataclass_fields__}
    queue = SweepSpec(**{**fields, "queue": True})
    if name is None:
        text = json.dumps(queue.definition(), sort_keys=True)
        digest = hashlib.sha256(text.encode()).hexdigest()[:8]
        queue = SweepSpec(**{**fields, "queue": True, "name": QUEUE_NAME.format(digest=digest)})
    return queue


def _grid_values(item: str, values: str) -> list[Scalar]:
    low, dots, high = values.partition("..")
    if dots:
        try:
            first, last = int(low), int(high)
        except ValueError:
            raise ExecutorError(
                f"--grid {item[:40]!r}: a range is two whole numbers, 0..7"
            ) from None
        if not 0 <= last - first < 100_000:
            raise ExecutorError(f"--grid {item[:40]!r}: the range must run up, 1 to 100000 values")
        return list(range(first, last + 1))
    parts = [v.strip() for v in values.split(",") if v.strip()]
    if not parts:
        raise ExecutorError(f"--grid {item[:40]!r}: no values")
    return list(dict.fromkeys(parts))


def _params(raw: object, where: str) -> tuple[Param, ...]:
    if not isinstance(raw, dict) or not raw:
        raise ExecutorError(f"{where}: params must be a table of at least one param")
    params = []
    for name, body in raw.items():
        if not isinstance(name, str) or not _PARAM.fullmatch(name) or name in RESERVED:
            raise ExecutorError(
                f"{where}: param name {str(name)[:40]!r} must be an identifier, not one of "
                f"{sorted(RESERVED)}"
            )
        params.append(_param(name, body, f"{where}: params.{name}"))
    return tuple(params)


_PARAM_KEYS = {
    "float": frozenset({"type", "low", "high", "log", "step", "values"}),
    "int": frozenset({"type", "low", "high", "log", "step", "values"}),
    "categorical": frozenset({"type", "choices"}),
}
"""The keys each type of param takes."""


def _param(name: str, body: object, where: str) -> Param:
    """One param's table, checked: a categorical's choices or a number's range and grid."""
    if not isinstance(body, dict):
        raise ExecutorError(f"{where} must be a table with a type (float, int, categorical)")
    kind = body.get("type")
    if kind not in _PARAM_KEYS:
        raise ExecutorError(f"{where}: type must be float, int or categorical")
    extra = sorted(set(body) - _PARAM_KEYS[kind])
    if extra:
        raise ExecutorError(f"{where}: unknown key {extra[0]!r} for a {kind} param")
    if kind == "categorical":
        choices = _choices(body, where)
        return Param(name, CategoricalDistribution(choices), tuple(choices))
    low, high = _range(body, kind, where)
    distribution = _number_distribution(body, kind, low, high, where)
    return Param(name, distribution, _number_grid(body, kind, low, high, where))


def _choices(body: dict[str, Any], where: str) -> list[Scalar]:
    """A categorical param's choices: a non-empty list of numbers or strings."""
    choices = body.get("choices")
    if (
        not isinstance(choices, list)
        or not choices
        or not all(isinstance(c, bool | int | float | str) for c in choices)
    ):
        raise ExecutorError(f"{where}: choices must be a list of numbers or strings")
    return choices


def _fits(value: object, kind: str) -> TypeGuard[int | float]:
    """``value`` is a number of a ``kind`` param: any number for float, a whole one for int."""
    return _is_number(value) if kind == "float" else _is_whole(value)


def _a_number(kind: str) -> str:
    """How messages name a number of a ``kind`` param."""
    return "a number" if kind == "float" else "a whole number"


def _range(body: dict[str, Any], kind: str, where: str) -> tuple[int | float, int | float]:
    """A number param's finite ``low`` and ``high``, with low <= high."""
    low, high = body.get("low"), body.get("high")
    if not (_fits(low, kind) and _fits(high, kind)) or not (
        math.isfinite(low) and math.isfinite(high)
    ):
        raise ExecutorError(
            f"{where}: low and high must each be {_a_number(kind)} (true is not one)"
        )
    if low > high:
        raise ExecutorError(f"{where}: a {kind} param needs finite low <= high, got {low} > {high}")
    return low, high


def _number_distribution(
    body: dict[str, Any], kind: str, low: int | float, high: int | float, where: str
) -> BaseDistribution:
    """A number param's distribution from its range, ``log`` and ``step``."""
    log, step = body.get("log", False), body.get("step")
    if not isinstance(log, bool):
        raise ExecutorError(f"{where}: log must be true or false")
    if step is not None and (not _fits(step, kind) or not 0 < step < math.inf):
        raise ExecutorError(
            f"{where}: step must be {_a_number(kind)} above 0 (or left out), got {step!r}"
        )
    try:
        if kind == "float":
            return FloatDistribution(float(low), float(high), log=log, step=step)
        return IntDistribution(int(low), int(high), log=log, step=int(step or 1))
    except ValueError as exc:  # log with a step, or a log range from 0
        raise ExecutorError(f"{where}: {exc}") from None


def _number_grid(
    body: dict[str, Any], kind: str, low: int | float, high: int | float, where: str
) -> tuple[Scalar, ...] | None:
    """A number param's grid ``values``, each within its range (None: not on a grid)."""
    values = body.get("values")
    if values is None:
        return None
    if not isinstance(values, list) or not values:
        raise ExecutorError(f"{where}: values must be a list of {kind} values")
    if not all(_fits(v, kind) for v in values):
        raise ExecutorError(f"{where}: values must each be {_a_number(kind)}")
    number = float if kind == "float" else int
    grid = tuple(number(v) for v in values)
    if not all(low <= float(v) <= high for v in grid):
        raise ExecutorError(f"{where}: every value must lie within low..high")
    return grid


def _is_number(value: object) -> TypeGuard[int | float]:
    """An int or float, not a bool (TOML's and YAML's true is no number)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_whole(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


_WHOLE_AT_LEAST = {
    "n_startup_trials": 0,
    "n_warmup_steps": 0,
    "min_early_stopping_rate": 0,
    "bootstrap_count": 0,
    "n_ei_candidates": 1,
    "interval_steps": 1,
    "n_min_trials": 1,
    "min_resource": 1,
    "max_resource": 1,
    "reduction_factor": 2,
}
_FLAGS = frozenset({"multivariate", "group", "constant_liar", "scramble"})


def _is_flag(value: Scalar) -> bool:
    """True or false."""
    return isinstance(value, bool)


def _is_seed(value: Scalar) -> bool:
    """A seed numpy takes: a whole number from 0 to 2**32-1."""
    return _is_whole(value) and 0 <= value < 2**32


def _is_qmc_type(value: Scalar) -> bool:
    """A QMC sequence optuna knows."""
    return value in ("sobol", "halton")


def _is_percentile(value: Scalar) -> bool:
    """A number from 0 to 100."""
    return _is_number(value) and 0 <= value <= 100


_OPTION_RULES: dict[str, tuple[Callable[[Scalar], bool], str]] = {
    **{flag: (_is_flag, "true or false") for flag in _FLAGS},
    "seed": (_is_seed, "a whole number 0 to 2**32-1"),
    "qmc_type": (_is_qmc_type, '"sobol" or "halton"'),
    "percentile": (_is_percentile, "a number from 0 to 100"),
}
"""Each option with its own rule, and what the rule asks for."""
_AUTO = frozenset({("successive_halving", "min_resource"), ("hyperband", "max_resource")})
"""The (pruner, option) pairs that may also be ``"auto"``."""


def _option_wanted(kind: str, key: str, value: Scalar) -> str | None:
    """What a sampler's or pruner's option must be, when ``value`` is not that (else None)."""
    rule = _OPTION_RULES.get(key)
    if rule is not None:
        fits, wanted = rule
        return None if fits(value) else wanted
    least = _WHOLE_AT_LEAST.get(key)
    if least is None:
        return None
    auto = (kind, key) in _AUTO
    if (auto and value == "auto") or (_is_whole(value) and value >= least):
        return None
    return f"a whole number >= {least}" + (' or "auto"' if auto else "")


def _choice(
    raw: object, table: Mapping[str, type], what: str, where: str
) -> tuple[str, dict[str, Scalar]]:
    """A sampler or pruner by name from ``table``, and its options, checked against the
    class's parameters (plain values only)."""
    body = {"type": raw} if isinstance(raw, str) else raw
    if not isinstance(body, dict) or body.get("type") not in table:
        raise ExecutorError(f"{where}: {what} type must be one of {', '.join(table)}")
    options = {k: v for k, v in body.items() if k != "type"}
    for key, value in options.items():
        _check_option(what, body["type"], key, value, where)
    try:
        table[body["type"]](**options)
    except (TypeError, ValueError) as exc:
        raise ExecutorError(f"{where}: {what} {body['type']}: {exc}") from None
    return str(body["type"]), options


def _check_option(what: str, kind: str, key: str, value: object, where: str) -> None:
    """Refuse an option the sampler or pruner ``kind`` does not take, or a value it can't."""
    accepted = OPTIONS[kind]
    if key not in accepted:
        raise ExecutorError(
            f"{where}: {what} {kind} has no option {key[:40]!r}; it takes {sorted(accepted)}"
        )
    if not isinstance(value, bool | int | float | str):
        raise ExecutorError(f"{where}: {what} option {key} must be a number, bool or string")
    wanted = _option_wanted(kind, key, value)
    if wanted:
        raise ExecutorError(f"{where}: {what} {kind} option {key} must be {wanted}, got {value!r}")

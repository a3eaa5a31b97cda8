"""``spotwise collect CLOUD``: each cloud's live prices (and AWS's placement scores) into the
market store, incremental, each row with its source and ``as_of``. One command per registered
profile, made from the collector it declares (its flags as data and its run,
:class:`~spotwise.pricing.clouds.profile.Collector`): nothing here names a cloud."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

import spotwise.executor.ledger.schema  # noqa: F401  (every store the CLI opens holds the ledger too)
from spotwise.console import StoreOption, err, fail, ready_store, say, styled
from spotwise.pricing.clouds.profile import CollectOption, Collector, CollectValues, Line
from spotwise.pricing.clouds.registry import PROFILES
from spotwise.pricing.errors import PricingError

collect_app = typer.Typer(
    help="Collect live market data from cloud APIs.", no_args_is_help=True, rich_markup_mode=None
)


def _register(name: str, collector: Collector) -> None:
    """``spotwise collect NAME``: ``collector``'s options (then ``--store``), running its run."""

    def command(**given: Any) -> None:
        store: Path | None = given.pop("store")
        with _collecting(name) as show:
            done = collector.run(lambda: ready_store(store), CollectValues(given), show)
        for line in done.lines:
            _print(line)

    parameters = [_parameter(option) for option in collector.options]
    parameters.append(
        inspect.Parameter(
            "store", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=StoreOption
        )
    )
    # typer reads a command's options from its signature: this one is made from the declaration
    command.__signature__ = inspect.Signature(parameters, return_annotation=None)  # type: ignore[attr-defined]
    collect_app.command(name, help=collector.help)(command)


def _parameter(option: CollectOption) -> inspect.Parameter:
    """A typer option of the command's signature, as ``option`` declares it."""
    optional = option.default is None and not option.required
    return inspect.Parameter(
        option.name,
        inspect.Parameter.KEYWORD_ONLY,
        default=inspect.Parameter.empty if option.required else option.default,
        annotation=Annotated[
            option.type | None if optional else option.type,
            typer.Option(
                option.flag, help=option.help, show_default=option.show_default, min=option.min
            ),
        ],
    )


def _print(line: Line) -> None:
    """One line of what a collection says, on stderr, as it is (the lead in green)."""
    if line.lead:
        err.print(styled(line.lead, "green", line.text), soft_wrap=True)
    else:
        say(line.text)


@contextmanager
def _collecting(label: str) -> Iterator[Callable[[str], None]]:
    """A progress line on stderr (on a terminal only) that the block updates; a PricingError in
    the block ends the command with its one line, once the progress line is gone."""
    from rich.progress import Progress, TextColumn

    failure = None
    with Progress(
        TextColumn("collecting {task.description}"),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as bar:
        task = bar.add_task(label)
        try:
            yield lambda text: bar.update(task, description=text)
        except PricingError as exc:
            failure = str(exc)
    if failure is not None:
        fail(failure)


for _name, _profile in PROFILES.items():
    _register(_name, _profile.collector)

"""What every command shares: the consoles, one-line errors, the store option."""

from __future__ import annotations

import math
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from spotwise.core import settings
from spotwise.pricing.errors import PricingError

if TYPE_CHECKING:
    from spotwise.pricing.operational import OperationalStore
    from spotwise.pricing.store import MarketStore

# Never markup: text from users, files and clouds (a path, a job's name, a table's cell) is
# printed as it is ('[/]' raised MarkupError); a styled lead is a Text (see `styled`).
err = Console(stderr=True, markup=False)
# Piped output gets wide tables rather than truncated cells.
out = Console(width=None if sys.stdout.isatty() else 160, markup=False)


def progress_bar() -> Any:
    """A transient bar on stderr: what runs, how far, how long so far and how long to go."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=err,
        transient=True,
    )


def plural(n: float, word: str) -> str:
    """``1 migration``, ``2 migrations``."""
    return f"{n:g} {word}" if n == 1 else f"{n:g} {word}s"


class BarSteps:
    """:class:`~spotwise.core.progress.Steps` drawn as one task of a :func:`progress_bar`."""

    def __init__(self, bar: Any, description: str) -> None:
        self._bar = bar
        self._task = bar.add_task(description, total=0)

    def expect(self, n: int) -> None:
        """Add ``n`` steps to the bar's total."""
        task = self._bar.tasks[self._task]
        self._bar.update(self._task, total=(task.total or 0) + n)

    def advance(self, n: int = 1) -> None:
        """Move the bar on by ``n`` steps."""
        self._bar.advance(self._task, n)


StoreOption = Annotated[
    Path | None,
    typer.Option(
        "--store",
        help=f"Store file (default: ${settings.STORE_ENV}, else the user data folder).",
        show_default=False,
    ),
]


def styled(lead: str, style: str, rest: str = "") -> Text:
    """``lead`` in ``style``, then ``rest``: both printed as they are, never markup."""
    return Text.assemble((lead, style), rest)


def say(message: str) -> None:
    """Print one line on stderr as it is: text from users, files and clouds is never markup."""
    err.print(message, markup=False, highlight=False, soft_wrap=True)


def fail(message: str) -> NoReturn:
    """Print one clear error line and exit non-zero (``message`` as it is, never markup)."""
    err.print(Text.assemble(("error:", "bold red"), " ", message), highlight=False, soft_wrap=True)
    raise typer.Exit(code=1)


StoreT = TypeVar("StoreT", bound="OperationalStore")


@contextmanager
def _held(open_it: Callable[[], StoreT]) -> Iterator[StoreT]:
    """The store ``open_it`` opens, closed after; store problems become one clear error."""
    try:
        store = open_it()
    except PricingError as exc:
        fail(str(exc))
    try:
        yield store
    finally:
        store.close()


def open_store(
    path: Path | None, *, read_only: bool = False
) -> AbstractContextManager[MarketStore]:
    """Open the configured store, turning store problems into one clear error (a read-only
    open of an older Spotwise's store migrates it first)."""
    from spotwise.pricing.store import MarketStore

    target = settings.store_path(path)
    return _held(
        lambda: MarketStore.open_to_read(target) if read_only else MarketStore.open(target)
    )


def open_operational_store(
    path: Path | None, *, read_only: bool = False
) -> AbstractContextManager[OperationalStore]:
    """Open the jobs, ledger and forecasts' store (the store file, or the database
    ``SPOTWISE_OPERATIONAL_STORE`` names), turning store problems into one clear error."""
    from spotwise.pricing.operational import open_operational

    target = settings.store_path(path)
    return _held(lambda: open_operational(target, read_only=read_only))


def ready_store(path: Path | None) -> Path:
    """The configured store's path, the store made or brought up to date and then let go, for
    work that opens it only when it reads or writes (one clear error if it cannot be)."""
    with open_store(path) as store:
        return store.path


def finite(value: float | None) -> float | None:
    """Typer callback: refuse inf and nan (``min=`` lets them through)."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"must be a finite number, got {value}")
    return value


def positive(value: float | None) -> float | None:
    """Typer callback: a finite number above zero."""
    finite(value)
    if value is not None and value <= 0:
        raise typer.BadParameter(f"must be above zero, got {value}")
    return value


# The job's terms, shared by every command that takes a job.
ComputeHours = Annotated[
    float, typer.Option("--compute-hours", callback=positive, help="Work, in hours.")
]
DeadlineHours = Annotated[
    float, typer.Option("--deadline-hours", callback=positive, help="Hours to finish.")
]
ChangeoverHours = Annotated[
    float, typer.Option("--changeover-hours", min=0.0, callback=finite, help="Hours a move costs.")
]
ModelsOption = Annotated[
    Path | None,
    typer.Option(
        "--models",
        help="Folder of learned models (NAME.pt + NAME.json), read once at start-up; policies "
        "are then named by NAME (default: the shipped models).",
        show_default=False,
    ),
]
TracesOption = Annotated[
    Path | None,
    typer.Option(
        "--traces",
        help="Folder of 1-node CBL JSON traces, one pool per file (default: the bundled "
        "9-zone aws-02-15-2023 traces).",
        show_default=False,
    ),
]


def traces_folder(traces: Path | None) -> Path:
    """``--traces``, or the bundled traces."""
    return traces or settings.bundled_traces()


SpotPrice = Annotated[float, typer.Option("--spot-price", callback=positive, help="Spot USD/h.")]
OnDemandPrice = Annotated[
    float, typer.Option("--on-demand-price", callback=positive, help="On-demand USD/h.")
]


# The prices a supervised job is billed at, shared by `spotwise run` and `spotwise sweep run`.
SpotPriceOption = Annotated[
    float | None,
    typer.Option(
        "--spot-price",
        callback=positive,
        help="Spot USD/h for every pool (default: each pool's newest price in the store).",
        show_default=False,
    ),
]
OnDemandPriceOption = Annotated[
    float | None,
    typer.Option(
        "--on-demand-price",
        callback=positive,
        help="On-demand USD/h (default: the store's for the instance type and region, "
        "else estimated from the Spot Advisor saving).",
        show_default=False,
    ),
]
PolicyNameOption = Annotated[str, typer.Option("--policy-name", help="Policy to ask.")]


def free_loopback_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])

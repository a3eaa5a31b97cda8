"""What every command shares: the consoles, one-line errors, the store option."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console

from pricing.errors import PricingError
from pricing.store import MarketStore
from spotwise import settings

err = Console(stderr=True)
# Piped output gets wide tables rather than truncated cells.
out = Console(width=None if sys.stdout.isatty() else 160)

StoreOption = Annotated[
    Path | None,
    typer.Option(
        "--store",
        help=f"Store file (default: ${settings.STORE_ENV}, else the user data folder).",
        show_default=False,
    ),
]


def fail(message: str) -> NoReturn:
    """Print one clear error line and exit non-zero."""
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code=1)


@contextmanager
def open_store(path: Path | None, *, read_only: bool = False) -> Iterator[MarketStore]:
    """Open the configured store, turning store problems into one clear error."""
    try:
        store = MarketStore.open(settings.store_path(path), read_only=read_only)
    except PricingError as exc:
        fail(str(exc))
    try:
        yield store
    finally:
        store.close()


# The job's terms, shared by every command that takes a job.
ComputeHours = Annotated[float, typer.Option("--compute-hours", min=0.0, help="Work, in hours.")]
DeadlineHours = Annotated[float, typer.Option("--deadline-hours", min=0.0, help="Hours to finish.")]
ChangeoverHours = Annotated[
    float, typer.Option("--changeover-hours", min=0.0, help="Hours a move costs.")
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
SpotPrice = Annotated[float, typer.Option("--spot-price", min=0.0, help="Spot USD/h.")]
OnDemandPrice = Annotated[
    float, typer.Option("--on-demand-price", min=0.0, help="On-demand USD/h.")
]

"""What every cloud's ``spotwise collect`` run shares: its flags' values read the same way (a
comma-separated list of names, a time, shapes of the GPU table) with the same one-line refusals
(:class:`~spotwise.pricing.errors.FlagError`), and the line that says what was collected."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from spotwise.core.echo import echo
from spotwise.pricing.clouds.profile import Line
from spotwise.pricing.errors import FlagError

if TYPE_CHECKING:
    import pandas as pd

    from spotwise.pricing.gpus import GpuShape

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,79}")


def names(text: str, flag: str) -> list[str]:
    """A comma-separated list of names (letters, digits, '.', '_', '+', '-') from ``flag``.

    Raises:
        FlagError: naming the first that is not a name.
    """
    given = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in given if not _NAME.fullmatch(n)]
    if bad:
        raise FlagError(
            f"{flag}: {echo(bad[0])} is not a name (letters, digits, '.', '_', '+' and '-')"
        )
    return given


def since(text: str | None) -> pd.Timestamp | None:
    """``--since`` as a UTC time (a time without a zone is UTC); None when not given.

    Raises:
        FlagError: for text that is not a time.
    """
    if text is None:
        return None
    import pandas as pd

    try:
        stamp = pd.Timestamp(text)
    except ValueError:
        raise FlagError(
            f"--since {echo(text)} is not a time: give ISO 8601 like 2026-01-01T00:00:00Z"
        ) from None
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")


def cloud_shapes(cloud: str, shapes: str, gpu: str | None, flag: str) -> list[GpuShape]:
    """The GPU table's shapes of ``cloud`` that ``flag`` names (all, or those of ``--gpu``).

    Raises:
        FlagError: for a shape the table lacks, or a GPU no shape of ``cloud`` carries.
        PricingError: when the GPU table cannot be read.
    """
    known = _shapes_with(cloud, gpu)
    named = names(shapes, flag)
    if not named:
        return list(known)
    by_name = {s.shape.lower(): s for s in known}
    missing = [n for n in named if n.lower() not in by_name]
    if missing:
        raise FlagError(
            f"{flag}: {', '.join(missing)} not in the GPU table for {cloud}"
            + (f" with {gpu}" if gpu else "")
            + f"; known: {', '.join(s.shape for s in known)}"
        )
    return [by_name[n.lower()] for n in named]


def _shapes_with(cloud: str, gpu: str | None) -> tuple[GpuShape, ...]:
    """The table's shapes of ``cloud`` (those carrying ``gpu``, when given)."""
    from spotwise.pricing import gpus

    known = gpus.on_cloud(cloud)
    if gpu is None:
        return known
    carrying = tuple(s for s in known if s.gpu.lower() == gpu.lower())
    if not carrying:
        raise FlagError(
            f"--gpu {echo(gpu)}: no {cloud} shape carries it; GPUs: {', '.join(gpus.gpu_models())}"
        )
    return carrying


def plural(n: float, word: str) -> str:
    """``1 page``, ``2 pages``."""
    return f"{n:g} {word}" if n == 1 else f"{n:g} {word}s"


def collected(cloud: str, frame: pd.DataFrame | None, added: int, read: str) -> Line:
    """One line: how many prices of how many shapes and regions, and the newest ``as_of``."""
    if frame is None or not len(frame):
        return Line(f" from {read}: no prices", lead=f"collected {cloud}")
    return Line(
        f" from {read}: {plural(len(frame), 'price')} ({added} new) "
        f"of {plural(frame['instance_type'].nunique(), 'shape')} in "
        f"{plural(frame['region'].nunique(), 'region')}, as of {frame['ts'].min():%Y-%m-%d} .. "
        f"{frame['ts'].max():%Y-%m-%d %H:%M}Z",
        lead=f"collected {cloud}",
    )

"""The launchers by name (``spotwise run --launcher NAME``): the replayed market (``local``,
``torchrun``) and every registered cloud; each builds a
:class:`~executor.launchers.base.Launcher` from one set of run settings, and may wrap the
command (``torchrun``). A name only ever selects an entry of :data:`LAUNCHERS`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from spotwise.executor.clouds.base import CloudTarget
from spotwise.executor.clouds.registry import CLOUDS
from spotwise.executor.errors import ExecutorError
from spotwise.executor.launchers.base import Launcher
from spotwise.executor.launchers.torchrun import Elastic, torchrun_command


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchSettings:
    """Everything a launcher may need from the command line."""

    pools: tuple[str, ...] = ()
    """local/torchrun: the traces to replay; empty = all of them."""
    traces: Path | None = None
    """local/torchrun: the folder of traces to replay."""
    start_hours: float = 0.0
    scale: float = 1.0
    elastic: Elastic = field(default_factory=Elastic)
    cloud: CloudTarget | None = None
    """A cloud launcher's settings (:meth:`~executor.clouds.base.Cloud.target`)."""
    secrets: dict[str, str] = field(default_factory=dict)
    """A cloud: environment variables the command gets on its instances, through the cloud's
    secret store, kept out of its boot script."""
    ignore_file: Path | None = None
    wheel: Path | None = None
    """A cloud: the Spotwise wheel to install there (default: built from the installed
    source)."""
    job_id: str = ""
    """A cloud: the ledger's id of the job (:func:`~executor.ledger.ledger.new_job_id`), on its
    instances' tags, its storage prefix and its secrets' names."""


@dataclass(frozen=True, slots=True)
class LauncherKind:
    """How to build one kind of launcher, and what it does to the command."""

    build: Callable[[LaunchSettings], Launcher]
    wrap: Callable[[Sequence[str], LaunchSettings], list[str]] = lambda command, _: list(command)


def _replay(settings: LaunchSettings) -> Launcher:
    from spotwise.executor.launchers.local import Replay
    from spotwise.policy.traces import load_traces

    if settings.traces is None:
        raise ExecutorError("the local launcher needs traces to replay (--traces)")
    traces = load_traces(settings.traces)
    if settings.pools:
        traces = traces.subset(list(settings.pools))
    replay = Replay(traces=traces, start_hours=settings.start_hours, scale=settings.scale)
    return replay.launcher()


def _cloud(settings: LaunchSettings) -> Launcher:
    target = settings.cloud
    if target is None:
        raise ExecutorError("a cloud launcher needs its settings (LaunchSettings.cloud)")
    cloud = CLOUDS[target.cloud]
    code = cloud.ship_code(target, ignore_file=settings.ignore_file, wheel=settings.wheel)
    return cloud.launcher(target, code, settings.secrets, job_id=settings.job_id)


LAUNCHERS: dict[str, LauncherKind] = {
    "local": LauncherKind(_replay),
    **{name: LauncherKind(_cloud) for name in CLOUDS},
    "torchrun": LauncherKind(_replay, lambda command, s: torchrun_command(command, s.elastic)),
}

"""The launcher interface: the pools a job can run in, and instances started there."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TextIO, runtime_checkable

import numpy as np

from spotwise.policy.observe import ObserveMode

Market = Literal["spot", "on-demand"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    """Where an instance runs: a market, the spot pool (None on demand) and its price per hour,
    and for spot the most it may cost before the cloud takes it back (the policy's bid)."""

    market: Market
    pool: str | None
    price: float
    bid: float | None = None
    """USD/h: a cloud that takes a bid (AWS ``MaxPrice``, Azure ``max_price``) reclaims the
    instance when its price rises above it (None: no cap beyond the on-demand price)."""

    def describe(self) -> str:
        """The placement as a person reads it."""
        return f"spot in {self.pool}" if self.market == "spot" else "on-demand"


def echo(
    placement: Placement, stream: TextIO | None = None, label: str | None = None
) -> Callable[[str], None]:
    """Print an instance's lines on ``stream`` (stderr), prefixed by where it runs (after
    ``label``, the job's name, when several jobs print side by side)."""
    where = placement.describe()
    prefix = f"[{label}: {where}] " if label else f"[{where}] "

    def write(line: str) -> None:
        out = stream if stream is not None else sys.stderr
        out.write(prefix + (line if line.endswith("\n") else line + "\n"))
        out.flush()

    return write


@dataclass(frozen=True, slots=True, kw_only=True)
class Preemption:
    """A take-back the launcher knows is coming for an instance's pool."""

    in_s: float
    """Wall seconds until it, at the launcher's pace."""
    at_hours: float
    """When it happens, in the launcher's hours since the job started."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RiddenOut:
    """A take-back an instance rode out: one of its workers (a Kubernetes Pod) ended by its
    node's reclaim, and a new one took over from the checkpoint (the instance went on)."""

    worker: str
    """What was ended (the Pod's name)."""
    reason: str
    """The cloud's reason (Kubernetes' ``DisruptionTarget`` reason, e.g.
    ``TerminationByKubelet``)."""
    noticed: bool
    """Whether it was given its SIGTERM window (a grace over 0 s): the notice."""


@runtime_checkable
class RidesOut(Protocol):
    """An instance that outlives a take-back of its worker (a Kubernetes Job): the supervisor
    counts each one, as it would count an instance preempted."""

    def ridden_out(self) -> list[RiddenOut]:
        """The take-backs seen since the last call, each once."""
        ...


class Instance(Protocol):
    """One launched instance running the command."""

    placement: Placement
    started_hours: float
    """The launcher's hours since the job started (``Launcher.now_hours``) at launch."""
    address: str | None
    """Where the job's other instances reach this one (a private IP on a cloud; None when
    not known)."""
    events: list[dict[str, Any]]
    """JSON event lines the command printed (``fresh``, ``resumed``, ``first_step``, ...),
    each stamped with ``cloud_hours``, the launcher's hours when it was read."""

    def poll(self) -> int | None:
        """The command's exit code once it has ended, else None."""
        ...

    def notice(self) -> None:
        """Pass on a preemption notice (or a request to move): checkpoint and leave."""
        ...

    def kill(self) -> None:
        """Take the instance away now (with everything the command started)."""
        ...

    def process_group(self) -> int | None:
        """The local process group the command runs in (None when it runs elsewhere)."""
        ...

    def quiet_s(self) -> float | None:
        """Seconds since the command's last step heartbeat (or its launch, before the first);
        None when this launcher cannot tell."""
        ...

    def terminate(self) -> None:
        """Release the instance's resources (after it has ended)."""
        ...


class Launcher(Protocol):
    """Starts instances and says what the market looks like now."""

    name: str
    pools: tuple[str, ...]
    simulated: bool
    """Whether the market is a replay (its hours and dollars are simulated, not billed)."""
    observe: ObserveMode
    """What the supervisor can see of the pools: ``all`` (a replay knows every pool's
    availability) or ``probe`` (a cloud shows only what launches teach)."""
    python: str
    """The Python a command starts on its instances (an elastic node's ``torchrun``)."""

    @property
    def simulation(self) -> str | None:
        """What the replay is and how fast it runs (None on a real cloud)."""
        ...

    def now_hours(self) -> float:
        """The cloud's hours since the job started."""
        ...

    def available(self) -> dict[str, bool]:
        """Whether each pool's spot capacity can be had now."""
        ...

    def history(self) -> tuple[np.ndarray, int]:
        """bool [pools, ticks] availability up to now, and the tick gap in seconds."""
        ...

    def launch(
        self,
        placement: Placement,
        command: Sequence[str],
        env: dict[str, str],
        log: Callable[[str], None] | None = None,
    ) -> Instance:
        """Start ``command`` on a new instance at ``placement``; ``log`` gets each line it
        prints that is not a JSON event (where the launcher can see them)."""
        ...

    def preemption(self, instance: Instance) -> Preemption | None:
        """The provider's next take-back of ``instance``, if known from outside (else None)."""
        ...

    def wait(self, seconds: float) -> None:
        """Let ``seconds`` of wall time pass while the job waits for capacity."""
        ...

    def close(self) -> None:
        """Release what the launcher holds for the job (e.g. its secrets in the cloud)."""
        ...

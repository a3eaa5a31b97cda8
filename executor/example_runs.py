"""The bundled example training (``spotwise.executor.examples.train_mlp``) as the demo and
the benches run it: its command line, and the uninterrupted reference run that a resumed run
must match bit for bit."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spotwise.core.clock import SYSTEM_CLOCK
from spotwise.core.progress import Progress
from spotwise.executor.errors import ExecutorError
from spotwise.executor.supervise.replay import ReplayRun, run_under_replay


def example_command(ckpt: Path | str, *, epochs: int, step_sleep_s: float) -> list[str]:
    """The example training, checkpointing to ``ckpt``."""
    return [
        sys.executable,
        "-m",
        "spotwise.executor.examples.train_mlp",
        "--epochs",
        str(epochs),
        "--step-sleep-s",
        str(step_sleep_s),
        "--ckpt",
        str(ckpt),
    ]


@dataclass(frozen=True, slots=True)
class ReferenceRun:
    """The example run once, uninterrupted."""

    run: ReplayRun
    done: dict[str, Any]
    """Its ``done`` event: the step count and the final state's digest."""
    wall_s: float


def reference_run(
    ckpt: Path | str, *, epochs: int, step_sleep_s: float, progress: Progress | None = None
) -> ReferenceRun:
    """Run the example uninterrupted, saying its step to ``progress`` as it goes.

    Raises:
        ExecutorError: when it fails, or ends without its ``done`` event.
    """
    began = SYSTEM_CLOCK.monotonic()  # timing only: the reference run's wall time, a bench figure
    run = run_under_replay(
        example_command(ckpt, epochs=epochs, step_sleep_s=step_sleep_s),
        [],
        lead_s=2,
        grace_s=5,
        progress=progress,
    )
    done = run.launches[-1].event("done")
    if done is None:
        raise ExecutorError("the reference run ended without its done event")
    return ReferenceRun(run=run, done=done, wall_s=SYSTEM_CLOCK.monotonic() - began)

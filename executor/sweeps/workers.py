"""A sweep's workers on this machine: ``workers`` processes of ``spotwise sweep worker``, each
taking trials from the shared study until none are left, while this process follows the study
and passes on what the workers say. Workers on other machines join the same study by running
``spotwise sweep run`` there with the same spec and ``--storage`` URL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import optuna
from optuna.trial import TrialState

from spotwise.core.progress import Progress
from spotwise.executor.sweeps.spec import SweepSpec
from spotwise.executor.sweeps.sweep import SweepConfig, open_study, original_number


@dataclass(frozen=True, slots=True)
class WorkersEnded:
    """How the workers ended."""

    exit_codes: tuple[int, ...]
    interrupted: int | None
    """The signal that stopped the sweep early (None: it ran to its end)."""


def _tally(study: optuna.Study, spec: SweepSpec) -> str:
    trials = study.get_trials(deepcopy=False)
    last = {original_number(t): t.state for t in trials}
    count = {s: sum(v is s for v in last.values()) for s in TrialState}
    return (
        f"{count[TrialState.COMPLETE] + count[TrialState.PRUNED]}/{spec.trials} trials done "
        f"({count[TrialState.PRUNED]} pruned), {count[TrialState.RUNNING]} running"
    )


def run_workers(config: SweepConfig, progress: Progress, *, poll_s: float = 1.0) -> WorkersEnded:
    """Start the workers, relay their lines, report the study's progress, wait for them.

    SIGTERM or SIGINT passes SIGTERM to every worker: each job gets a notice, checkpoints and
    stops, and its trial is queued again for the next ``sweep run``.
    """
    folder = Path(config.root)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    spec = config.source.load()
    study = open_study(config, spec)  # made once, before the workers race for it
    config_file = folder / "config.json"
    fd = os.open(config_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(config.to_json())
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // config.workers)))
    logs = [folder / f"worker-{i}.log" for i in range(config.workers)]
    processes = []
    for log in logs:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as sink:
            processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "spotwise", "sweep", "worker", str(config_file)],
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=env,
                )
            )
    interrupted: list[int] = []

    def stop(signum: int, _: FrameType | None) -> None:
        interrupted.append(signum)
        for p in processes:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    offsets = [0] * len(logs)
    said = ""
    try:
        while True:
            running = any(p.poll() is None for p in processes)
            for i, log in enumerate(logs):
                with open(log, "rb") as reader:
                    reader.seek(offsets[i])
                    data = reader.read()
                complete = data[: data.rfind(b"\n") + 1] if running else data
                offsets[i] += len(complete)
                for line in complete.decode(errors="replace").splitlines():
                    progress(f"[worker {i}] {line}")
            tally = _tally(study, spec)
            if tally != said:
                progress(tally)
                said = tally
            if not running:
                break
            time.sleep(poll_s)
    finally:
        for s, old in previous.items():
            signal.signal(s, old)
    return WorkersEnded(
        tuple(int(p.returncode) for p in processes), interrupted[0] if interrupted else None
    )

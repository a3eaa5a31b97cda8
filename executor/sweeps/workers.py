"""A sweep's workers on this machine: ``workers`` processes of ``spotwise sweep worker``, each
taking trials from the shared study until none are left, while this process follows the study
and passes on what the workers say. Workers on other machines join the same study by running
``spotwise sweep run`` there with the same spec and ``--storage`` URL."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import optuna
from optuna.trial import TrialState

from spotwise.core.clock import SYSTEM_CLOCK
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
    config_file = _write_private(folder / "config.json", config.to_json())
    env = _worker_env(config.workers)
    logs = [folder / f"worker-{i}.log" for i in range(config.workers)]
    processes = [_start_worker(config_file, log, env) for log in logs]
    with _stop_on_signal(processes) as interrupted:
        _follow(processes, logs, progress, lambda: _tally(study, spec), poll_s)
    return WorkersEnded(
        tuple(int(p.returncode) for p in processes), interrupted[0] if interrupted else None
    )


@contextlib.contextmanager
def _stop_on_signal(processes: list[subprocess.Popen[bytes]]) -> Iterator[list[int]]:
    """While inside, SIGTERM or SIGINT passes SIGTERM to each running process; yields the
    signals received, and puts the previous handlers back on leaving."""
    interrupted: list[int] = []

    def stop(signum: int, _: FrameType | None) -> None:
        interrupted.append(signum)
        for p in processes:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield interrupted
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


def _follow(
    processes: list[subprocess.Popen[bytes]],
    logs: list[Path],
    progress: Progress,
    tally: Callable[[], str],
    poll_s: float,
) -> None:
    """Relay the workers' lines and each new tally every ``poll_s`` until all have exited."""
    offsets = [0] * len(logs)
    said = ""
    while True:
        running = any(p.poll() is None for p in processes)
        _relay_logs(logs, offsets, progress, partial_lines=not running)
        now = tally()
        if now != said:
            progress(now)
            said = now
        if not running:
            return
        SYSTEM_CLOCK.sleep(poll_s)


def _write_private(path: Path, text: str) -> Path:
    """Write ``text`` to ``path``, readable by this user alone."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    return path


def _worker_env(workers: int) -> dict[str, str]:
    """This environment, with the CPUs shared among the workers unless OMP_NUM_THREADS is set."""
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // workers)))
    return env


def _start_worker(config_file: Path, log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """One ``spotwise sweep worker`` process writing to its own (private) ``log``."""
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "spotwise", "sweep", "worker", str(config_file)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
        )


def _relay_logs(
    logs: list[Path], offsets: list[int], progress: Progress, *, partial_lines: bool
) -> None:
    """Pass on each worker's new lines (a last line without its newline only when
    ``partial_lines``), moving ``offsets`` past them."""
    for i, log in enumerate(logs):
        with open(log, "rb") as reader:
            reader.seek(offsets[i])
            data = reader.read()
        complete = data if partial_lines else data[: data.rfind(b"\n") + 1]
        offsets[i] += len(complete)
        for line in complete.decode(errors="replace").splitlines():
            progress(f"[worker {i}] {line}")

"""A stand-in training command for supervisor tests: real process, real signals, no torch.

It "trains" for ``--work-s`` seconds in total across launches, keeping its progress in
``--state`` (its checkpoint). On SIGTERM it saves progress and exits with the preempted code.
It prints the executor's JSON events (``fresh``/``resumed``, ``first_step``, ``preempted``,
``done``). ``--fail-with CODE`` exits with CODE at once (a real error); ``--exit-delay-s S``
makes it take S more seconds to exit after saving on SIGTERM, with SIGTERM back to its default
action meanwhile, as the executor's guard leaves it (a slow teardown). It beats the step
heartbeat as the guard does, one step per 0.02 s of work, each taking ``--step-sleep-s`` of
wall time (a slower machine takes more); ``--hang-after-s S`` stops stepping and beating
after S seconds of a launch (a hung job); ``--pid-file F`` writes its pid there. Under torchrun
every rank runs it alike on the one state file (an elastic job's stand-in).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

from spotwise.executor.training.heartbeat import Heartbeat

PREEMPTED_EXIT_CODE = 75


def emit(event: str, **fields: object) -> None:
    print(json.dumps({"event": event, "t": time.time(), **fields}), flush=True)


def save(state: Path, done: float) -> None:
    """Write the progress whole (the ranks of an elastic job share one state file)."""
    part = state.with_name(f"{state.name}.{os.getpid()}.part")
    part.write_text(str(done))
    os.replace(part, state)


def steps(done: float) -> int:
    """Steps taken for ``done`` seconds of work."""
    return round(done / 0.02)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work-s", type=float, required=True)
    parser.add_argument("--state", type=Path, required=True)
    parser.add_argument("--fail-with", type=int, default=0)
    parser.add_argument("--exit-delay-s", type=float, default=0.0)
    parser.add_argument("--hang-after-s", type=float, default=None)
    parser.add_argument("--pid-file", type=Path, default=None)
    parser.add_argument("--step-sleep-s", type=float, default=0.02)
    args = parser.parse_args()
    if args.pid_file:  # written whole: a reader never sees it half-written
        part = args.pid_file.with_name(f"{args.pid_file.name}.part")
        part.write_text(str(os.getpid()))
        os.replace(part, args.pid_file)
    if args.fail_with:
        print("boom", file=sys.stderr)
        return args.fail_with
    done = float(args.state.read_text()) if args.state.exists() else 0.0
    emit("resumed" if done else "fresh", step=steps(done))
    stop = False

    def on_term(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    emit("first_step", step=steps(done))
    heartbeat = Heartbeat()
    began = time.monotonic()
    while done < args.work_s:
        if args.hang_after_s is not None and time.monotonic() - began > args.hang_after_s:
            save(args.state, done)  # its last checkpoint
            time.sleep(1e5)
        heartbeat.beat(steps(done))
        if stop:
            save(args.state, done)
            emit("preempted", step=steps(done))
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            time.sleep(args.exit_delay_s)
            return PREEMPTED_EXIT_CODE
        time.sleep(args.step_sleep_s)
        done += 0.02
    save(args.state, done)
    emit("done", step=steps(done), digest="same")
    return 0


if __name__ == "__main__":
    sys.exit(main())

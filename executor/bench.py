"""Executor benchmarks: checkpoint cost on large states under CPU load, and preemption-resume on
a real trace.

Every figure is measured side by side in one run on the same state, so ratios hold on a noisy
machine.
"""

from __future__ import annotations

import gc
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from spotwise.core.progress import Progress, silent
from spotwise.executor.checkpoint.manager import CheckpointManager
from spotwise.executor.notices import NoticeWatcher, preemption_times
from spotwise.executor.training.guard import Guard

if TYPE_CHECKING:
    from spotwise.executor.supervise.replay import Launch


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointCase:
    """One state size under one load: ``torch.save``, DCP and Spotwise's checkpoints side by
    side, on the same state, in the same run."""

    size_gb: float
    """The state's size, measured (10⁹ bytes)."""
    load: int
    """CPU-hog processes running beside it."""
    torch_save_s: float
    dcp_save_s: float
    """``dcp.save`` to durable: the median of the rounds it takes turns with ``durable_s`` and
    ``notice_to_durable_s``."""
    dcp_async_stall_s: float
    """``dcp.async_save`` until it returned."""
    dcp_async_durable_s: float
    """``dcp.async_save`` until its future was done."""
    first_stall_s: float
    """The first save's stall (it allocates the staging buffers)."""
    stall_path: str
    """Which save ``stall_s`` measures: ``"guarded"``, the one :func:`guard` makes by default
    when given the optimizer (its tensors staged in the background, its next step waiting)."""
    stall_s: float
    """Training blocked per save on the path :func:`guard` takes by default (``stall_path``),
    measured through a :class:`Guard` on an SGD loop: ``checkpoint()`` until it returned, plus
    what the next ``optimizer.step()`` waited (median of three)."""
    unguarded_stall_s: float
    """The same with every tensor staged before ``save()`` returns: a guard with no optimizer,
    or ``stage_in_background=False`` (median of three)."""
    stall_vs_dcp_async: float
    """``stall_s`` / ``dcp_async_stall_s``."""
    unguarded_stall_vs_dcp_async: float
    durable_s: float
    """An async save of the whole state (a full save, as :func:`guard` makes by default and
    as DCP writes), from the call until it was durable (median of the rounds)."""
    durable_vs_dcp_save: float
    """``durable_s`` / ``dcp_save_s``."""
    notice_to_durable_s: float
    """A blocking full save on notice, nothing else in flight (median of the rounds)."""
    restore_s: float
    incremental_bytes_ratio: float
    stall_vs_torch_save: float
    train_step_s: float
    """One SGD step of the whole model (batch 8), no save: the median of three."""
    save_step_overhead_s: float
    """What an unguarded save adds to the step it precedes, the save included (median of
    three)."""
    guarded_save_step_overhead_s: float
    """The same for the default (guarded) save: the copy overlaps the forward and backward."""
    peak_rss_gb: float
    """The peak resident memory of a fresh process that builds the same state and saves it
    three times (10⁹ bytes): its ``VmHWM``: the interpreter with torch, the state, and what the
    saves hold."""
    peak_rss_vs_state: float
    """``peak_rss_gb`` / the state's size."""
    interpreter_rss_gb: float
    """That process's resident memory before it builds the state: Python, torch and the
    checkpoint manager (10⁹ bytes), the same whatever the state's size."""
    saves_rss_vs_state: float
    """What the saves held at their peak beyond the state (and the interpreter), over the
    state's size: the staging copy of an async save (1×) and the write path."""

    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON-ready values."""
        return asdict(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointBench:
    """Every size under every load, and the host it ran on."""

    cpus: int
    cases: list[CheckpointCase]

    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON-ready values."""
        return asdict(self)


def parse_list(text: str, what: str, kind: type[float] | type[int]) -> list[Any]:
    """``"1,4,10"`` as numbers of ``kind``, none negative (a size also not 0).

    Raises:
        ValueError: saying which item is wrong.
    """
    items = [item.strip() for item in text.split(",")]
    values = []
    for item in items:
        try:
            value = kind(item)
        except ValueError:
            raise ValueError(f"{what}: {item!r} is not a number (give e.g. 1,4,10)") from None
        if value < 0 or (kind is float and not 0 < value < float("inf")):
            raise ValueError(f"{what}: {item} is out of range")
        values.append(value)
    return values


@dataclass(frozen=True, slots=True, kw_only=True)
class ResumeBench:
    """The example training under a replayed real preemption trace, against its uninterrupted
    run."""

    bitwise_identical: bool
    preemptions: int
    lost_steps: int
    """Steps run again after a resume (a lower bound when a launch was killed: what it ran past
    its last checkpoint is not seen)."""
    killed_launches: int
    """Launches killed after the grace, before they could report their steps."""
    restart_to_first_step_s: float
    stall_s_per_checkpoint: float
    checkpoints_per_10min: float
    goodput_at_one_preemption_per_10min: float
    steps: int
    trace: str
    trace_clock_scale: float

    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON-ready values."""
        return asdict(self)


def steps_run_of(launches: Sequence[Launch]) -> tuple[int, int]:
    """The training steps ``launches`` ran, and how many of them were killed before they
    reported theirs: a killed launch is counted up to the checkpoint the next one resumed
    from."""
    starts = [
        (launch.event("fresh") or launch.event("resumed") or {}).get("step") for launch in launches
    ]
    steps, killed = 0, 0
    for i, launch in enumerate(launches):
        end = launch.event("done") or launch.event("preempted")
        if end is not None:
            steps += int(end["steps_here"])
            continue
        killed += 1
        start, resumed_at = starts[i], starts[i + 1] if i + 1 < len(launches) else None
        if isinstance(start, int) and isinstance(resumed_at, int):
            steps += max(0, resumed_at - start)
    return steps, killed


def _model_of_size(size_gb: float, width: int = 2048) -> nn.Sequential:
    """Linear layers of ``width``² fp32 weights adding up to about ``size_gb`` GB."""
    per_layer = width * width * 4
    layers = max(2, round(size_gb * 1e9 / per_layer))
    torch.manual_seed(0)
    return nn.Sequential(*(nn.Linear(width, width) for _ in range(layers)))


@contextmanager
def cpu_hogs(n: int) -> Iterator[None]:
    """``n`` processes spinning on a CPU each, killed on the way out whatever happens."""
    hogs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(n):
            hogs.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        yield
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait()


def bench_checkpoint(
    sizes_gb: Sequence[float],
    loads: Sequence[int],
    folder: Path | None = None,
    progress: Progress = silent,
) -> CheckpointBench:
    """Every size under every load (``n`` CPU hogs beside it)."""
    cases = []
    for size_gb in sizes_gb:
        model = _model_of_size(size_gb)
        for load in loads:
            progress(f"{size_gb:g} GB beside {load} CPU hog(s)")
            with cpu_hogs(load):
                cases.append(_bench_case(model, load, folder, progress))
        del model
        gc.collect()
    return CheckpointBench(cpus=os.cpu_count() or 1, cases=cases)


def _bench_case(
    model: nn.Sequential, load: int, folder: Path | None, progress: Progress
) -> CheckpointCase:
    """torch.save, DCP and the CheckpointManager on the same state."""
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        root = Path(tmp)
        state = {"model": model.state_dict()}
        state_bytes = sum(t.numel() * t.element_size() for t in state["model"].values())

        progress("torch.save")
        # timing only: every perf_counter read here measures a benched operation
        began = time.perf_counter()
        with open(root / "torch.pt", "wb") as handle:
            torch.save(state, handle)
            handle.flush()
            os.fsync(handle.fileno())
        torch_save_s = time.perf_counter() - began
        (root / "torch.pt").unlink()

        dcp_async_stall_s, dcp_async_durable_s = _bench_dcp_async(state, root, progress)

        # every save full, as guard() saves by default (full_every=1), and as DCP writes
        manager = CheckpointManager([str(root / "ckpt")], keep_latest_k=2, say=progress)
        progress("first async save (allocates the staging buffers)")
        began = time.perf_counter()
        manager.save(1, state)
        first_stall_s = time.perf_counter() - began
        manager.wait()
        # A disk's speed drifts over a run (other writers, its own caches): dcp.save and
        # Spotwise's saves take turns, and each figure is the median of its rounds.
        dcp_saves, durables, notices = [], [], []
        for i in range(DURABLE_ROUNDS):
            progress(f"dcp.save, an async save and a save on notice (round {i + 1})")
            dcp_saves.append(_dcp_save(state, root))
            began = time.perf_counter()
            manager.save(2 * i + 2, state)
            manager.wait()
            durables.append(time.perf_counter() - began)
            began = time.perf_counter()
            manager.save(2 * i + 3, state, block=True)
            notices.append(time.perf_counter() - began)
        dcp_save_s = statistics.median(dcp_saves)
        durable_s = statistics.median(durables)
        notice_to_durable_s = statistics.median(notices)

        progress("restore")
        began = time.perf_counter()
        loaded = manager.load()
        assert loaded is not None
        model.load_state_dict(loaded.state["model"])
        restore_s = time.perf_counter() - began
        del loaded

        manager.close()
        # each phase's checkpoints go once it is done: at 4 GB, kept, they added up to 30 GB
        shutil.rmtree(root / "ckpt")
        progress("fine-tune, incremental save")
        manager = CheckpointManager(
            [str(root / "incremental")], keep_latest_k=2, full_every=1000, say=progress
        )
        for layer in list(model)[:-1]:
            layer.requires_grad_(False)
        optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad])
        x = torch.randn(8, 2048)  # the layers are 2048 wide
        model(x).square().mean().backward()
        optimizer.step()
        tuned = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
        manager.save(4, tuned, block=True)  # full: the first
        full = manager.last_save
        for _ in range(2):
            optimizer.zero_grad()
            model(x).square().mean().backward()
            optimizer.step()
        manager.save(5, tuned, block=True)  # incremental: only the unfrozen layer changed
        incremental = manager.last_save
        manager.close()
        shutil.rmtree(root / "incremental")
        del manager, tuned, optimizer
        gc.collect()  # (the staging buffers, before the steps' own)

        progress("peak RSS of three saves, in a fresh process")
        rss = peak_rss_of_saves(state_bytes / 1e9, root / "rss")
        shutil.rmtree(root / "rss")

        progress("training steps under a guard, after no save, an unguarded and a guarded one")
        model.requires_grad_(True)
        steps = CheckpointManager([str(root / "steps")], keep_latest_k=1, say=progress)
        on_steps = _bench_steps(model, steps)
        steps.close()
    assert full is not None and incremental is not None and not incremental.full
    return CheckpointCase(
        size_gb=round(state_bytes / 1e9, 3),
        load=load,
        torch_save_s=round(torch_save_s, 4),
        dcp_save_s=round(dcp_save_s, 4),
        dcp_async_stall_s=round(dcp_async_stall_s, 4),
        dcp_async_durable_s=round(dcp_async_durable_s, 4),
        first_stall_s=round(first_stall_s, 4),
        stall_path="guarded",
        stall_s=round(on_steps.guarded_stall_s, 4),
        unguarded_stall_s=round(on_steps.unguarded_stall_s, 4),
        stall_vs_dcp_async=round(on_steps.guarded_stall_s / dcp_async_stall_s, 4),
        unguarded_stall_vs_dcp_async=round(on_steps.unguarded_stall_s / dcp_async_stall_s, 4),
        durable_s=round(durable_s, 4),
        durable_vs_dcp_save=round(durable_s / dcp_save_s, 4),
        notice_to_durable_s=round(notice_to_durable_s, 4),
        restore_s=round(restore_s, 4),
        incremental_bytes_ratio=round(incremental.bytes_written / full.bytes_written, 4),
        stall_vs_torch_save=round(on_steps.guarded_stall_s / torch_save_s, 4),
        train_step_s=round(on_steps.step_s, 4),
        save_step_overhead_s=round(on_steps.unguarded_overhead_s, 4),
        guarded_save_step_overhead_s=round(on_steps.guarded_overhead_s, 4),
        peak_rss_gb=round(rss.peak / 1e9, 3),
        peak_rss_vs_state=round(rss.peak / state_bytes, 3),
        interpreter_rss_gb=round(rss.interpreter / 1e9, 3),
        saves_rss_vs_state=round((rss.peak - rss.with_state) / state_bytes, 3),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class _OnSteps:
    """Medians of three rounds of a training loop under a :class:`Guard`."""

    step_s: float
    unguarded_stall_s: float
    unguarded_overhead_s: float
    guarded_stall_s: float
    guarded_overhead_s: float


def _bench_steps(model: nn.Sequential, manager: CheckpointManager) -> _OnSteps:
    """An SGD loop under a :class:`Guard` on ``manager``, as a script under :func:`guard` runs
    it: per round a step with no save, a step after an unguarded save and one after the save
    the guard makes by default (guarded); each save's stall as the guard records it (for the
    guarded one, with what the next ``optimizer.step()`` waited), and what each save added to
    the step after it. Each save is durable before the next round."""
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
    x = torch.randn(8, 2048)  # the layers are 2048 wide
    g = Guard(
        manager,
        NoticeWatcher([]),
        model=model,
        optimizer=optimizer,
        scheduler=None,
        scaler=None,
        loader=DataLoader(TensorDataset(x), batch_size=8),
        epochs=1,
        interval_s=float("inf"),
        mtbf_s=None,
    )

    def step() -> None:
        """One training step as a guarded script takes it."""
        optimizer.zero_grad()
        model(x).square().mean().backward()
        optimizer.step()  # (waits for a guarded save's staging)
        g.step()

    def saved_then_step(guarded: bool) -> tuple[float, float]:
        """A save, then a step: the save's stall as the guard records it, and the wall time."""
        g.stage_in_background = guarded
        began = time.perf_counter()
        g.checkpoint()
        step()
        wall = time.perf_counter() - began
        manager.wait()
        return g.stalls_s[-1], wall

    step()  # (allocates the gradients)
    plain: list[float] = []
    unguarded: list[tuple[float, float]] = []
    guarded: list[tuple[float, float]] = []
    for _ in range(3):
        began = time.perf_counter()
        step()
        plain.append(time.perf_counter() - began)
        unguarded.append(saved_then_step(guarded=False))
        guarded.append(saved_then_step(guarded=True))
    g.heartbeat.close()
    model.zero_grad(set_to_none=True)  # (not held into the next case)
    step_s = statistics.median(plain)
    return _OnSteps(
        step_s=step_s,
        unguarded_stall_s=statistics.median(s for s, _ in unguarded),
        unguarded_overhead_s=statistics.median(w for _, w in unguarded) - step_s,
        guarded_stall_s=statistics.median(s for s, _ in guarded),
        guarded_overhead_s=statistics.median(w for _, w in guarded) - step_s,
    )


_SAVES = """
import re, sys
def kb(field): return re.search(field + r":\\s+(\\d+) kB", open("/proc/self/status").read())[1]
from spotwise.executor.bench import _model_of_size
from spotwise.executor.checkpoint.manager import CheckpointManager
interpreter = kb("VmRSS")
state = {"model": _model_of_size(float(sys.argv[1])).state_dict()}
with_state = kb("VmRSS")
manager = CheckpointManager([sys.argv[2]])
manager.save(1, state)
manager.save(2, state)
manager.save(3, state, block=True)
manager.close()
print(interpreter, with_state, kb("VmHWM"))
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class SavesRss:
    """The resident memory (bytes) of a fresh process that saves a state three times."""

    interpreter: int
    """Before it builds the state: Python, torch and the checkpoint manager imported."""
    with_state: int
    """With the state built, before the first save."""
    peak: int
    """Its peak (``VmHWM``), the saves included."""


def peak_rss_of_saves(size_gb: float, folder: Path) -> SavesRss:
    """The resident memory of a fresh process that builds the state of ``size_gb`` and saves it
    three times to ``folder`` (two async saves, then a blocking one): the interpreter, the
    state, and what checkpointing holds. Linux's ``VmHWM``: ``ru_maxrss`` would keep the forking
    parent's. The process imports no more than the bench module, which leaves what only the
    resume bench needs (pandas, 0.1 GB) to that bench."""
    found = subprocess.run(
        [sys.executable, "-c", _SAVES, str(size_gb), str(folder)],
        check=True,
        capture_output=True,
        text=True,
    )
    interpreter, with_state, peak = (int(kb) * 1024 for kb in found.stdout.split()[-3:])
    return SavesRss(interpreter=interpreter, with_state=with_state, peak=peak)


DURABLE_ROUNDS = 3
"""Rounds of ``dcp.save`` and Spotwise's full saves, taking turns."""


def _dcp_save(state: dict[str, Any], root: Path) -> float:
    """Seconds of one ``dcp.save`` to durable (one process, no process group)."""
    import torch.distributed.checkpoint as dcp  # (~0.7 s to import: only here)

    began = time.perf_counter()
    dcp.save(state, storage_writer=dcp.FileSystemWriter(root / "dcp"))
    save_s = time.perf_counter() - began
    shutil.rmtree(root / "dcp")
    return save_s


def _bench_dcp_async(state: dict[str, Any], root: Path, progress: Progress) -> tuple[float, ...]:
    """``dcp.async_save`` until it returned and until durable (one process, no process
    group)."""
    import torch.distributed.checkpoint as dcp

    progress("dcp.async_save")
    began = time.perf_counter()
    future = dcp.async_save(state, storage_writer=dcp.FileSystemWriter(root / "dcp-async"))
    stall_s = time.perf_counter() - began
    assert isinstance(future, Future)  # (no process group: no AsyncSaveResponse)
    future.result()
    durable_s = time.perf_counter() - began
    shutil.rmtree(root / "dcp-async")
    gc.collect()  # its staged copy
    return stall_s, durable_s


DEFAULT_TRACE = ("traces/cbl/preemption/1-node/aws-04-22-2023", "us-east-1c_v100_1")


def _trace_scale(real_times: Sequence[float], preemptions: int, plain_s: float) -> float:
    """How much faster than the trace to replay it so that its first ``preemptions`` fall in
    the first 60 % of a run that takes ``plain_s`` uninterrupted."""
    window = real_times[preemptions - 1] if len(real_times) >= preemptions else real_times[-1]
    return window / (0.6 * plain_s)


def _end_event(launch: Launch) -> dict[str, Any] | None:
    """A launch's ``done`` or ``preempted`` event (None: it ended without one)."""
    return launch.event("done") or launch.event("preempted")


def _mean(values: Sequence[float]) -> float:
    """The mean, 0 for none."""
    return sum(values) / len(values) if values else 0.0


def bench_resume(
    data_dir: Path,
    *,
    epochs: int = 4,
    step_sleep_s: float = 0.02,
    lead_s: float = 2.0,
    grace_s: float = 5.0,
    preemptions: int = 4,
    progress: Progress = silent,
) -> ResumeBench:
    """The example training uninterrupted, then under a replayed real preemption trace."""
    # Imported here: they bring pandas (0.1 GB), which the checkpoint bench's peak-RSS process,
    # importing this module, must not hold.
    from spotwise.executor.example_runs import example_command, reference_run
    from spotwise.executor.supervise.replay import run_under_replay
    from spotwise.policy.traces import load_traces

    folder, pool = DEFAULT_TRACE
    traces = load_traces(data_dir / folder)
    available = traces.available[traces.names.index(pool)]
    real_times = preemption_times(available, traces.gap_seconds)
    with tempfile.TemporaryDirectory() as tmp:
        progress("uninterrupted run")
        plain = reference_run(f"{tmp}/plain", epochs=epochs, step_sleep_s=step_sleep_s)
        plain_s = plain.wall_s
        # Scale the trace's clock so that its first preemptions fall inside the first 60 % of
        # the run (room for a replayed run faster than a reference slowed by a busy machine);
        # replay take-backs until that many hit the job (each restart lengthens the run, which
        # would let ever more of the trace in).
        scale = _trace_scale(real_times, preemptions, plain_s)
        schedule = [t / scale for t in real_times]
        mtbf_s = (len(available) * traces.gap_seconds / max(1, len(real_times))) / scale
        progress(
            f"replaying {pool} ({len(real_times)} preemptions, clock ×{scale:.0f}) until "
            f"{preemptions} hit the job"
        )
        replayed = run_under_replay(
            [
                *example_command(f"{tmp}/replayed", epochs=epochs, step_sleep_s=step_sleep_s),
                "--mtbf-s",
                f"{mtbf_s:.3f}",
            ],
            schedule,
            lead_s=lead_s,
            grace_s=grace_s,
            max_preemptions=preemptions,
        )
    done_plain = plain.done
    done = replayed.launches[-1].event("done")
    assert done is not None
    ends = [e for launch in replayed.launches if (e := _end_event(launch))]
    steps_run, killed = steps_run_of(replayed.launches)
    stall_s = _mean([s for e in ends for s in e["stall_s"]])
    checkpoints = sum(e["checkpoints"] for e in ends)
    restart_s = _mean(
        [
            first["t"] - launch.started
            for launch in replayed.launches[1:]
            if (first := launch.event("first_step"))
        ]
    )
    per_10min = checkpoints / replayed.wall_s * 600
    return ResumeBench(
        bitwise_identical=done["digest"] == done_plain["digest"],
        preemptions=replayed.preemptions,
        lost_steps=int(steps_run - done["step"]),
        killed_launches=killed,
        restart_to_first_step_s=round(restart_s, 3),
        stall_s_per_checkpoint=round(stall_s, 5),
        checkpoints_per_10min=round(per_10min, 2),
        goodput_at_one_preemption_per_10min=round(1 - (restart_s + per_10min * stall_s) / 600, 4),
        steps=int(done["step"]),
        trace=f"{folder}/{pool}.json",
        trace_clock_scale=round(scale, 1),
    )

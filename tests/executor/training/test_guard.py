"""The guard around the example training: notices, graceful exit, bit-exact resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from spotwise.executor.errors import PREEMPTED_EXIT_CODE
from spotwise.executor.local_clouds.metadata import FakeMetadata
from spotwise.executor.training.guard import guard
from tests.conftest import ManualClock

TRAIN = [sys.executable, "-m", "spotwise.executor.examples.train_mlp", "--epochs", "2"]


def launch(ckpt: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [*TRAIN, "--ckpt", str(ckpt), *extra],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def events(process: subprocess.Popen) -> list[dict]:
    assert process.stdout is not None
    return [json.loads(line) for line in process.stdout if line.startswith("{")]


def wait_for(process: subprocess.Popen, event: str) -> list[dict]:
    seen = []
    assert process.stdout is not None
    for line in process.stdout:
        seen.append(json.loads(line))
        if seen[-1]["event"] == event:
            return seen
    raise AssertionError(f"the process ended before {event!r}: {seen}")


@pytest.mark.e2e
def test_resume_after_sigterm_is_bitwise_identical_to_an_uninterrupted_run(tmp_path: Path) -> None:
    plain = launch(tmp_path / "plain")
    reference = events(plain)[-1]
    assert plain.wait() == 0 and reference["event"] == "done"
    interrupted_steps = []
    for _ in range(3):
        run = launch(tmp_path / "ckpt", "--step-sleep-s", "0.005")
        wait_for(run, "first_step")
        time.sleep(0.2)
        run.send_signal(signal.SIGTERM)
        run.communicate()
        assert run.returncode == PREEMPTED_EXIT_CODE
        with open(tmp_path / "ckpt" / "latest") as handle:
            interrupted_steps.append(int(handle.read()))
    assert interrupted_steps == sorted(set(interrupted_steps))  # progress each time
    final = launch(tmp_path / "ckpt")
    done = events(final)
    assert final.wait() == 0
    assert done[1]["event"] == "resumed" and done[1]["step"] == interrupted_steps[-1]
    assert done[-1]["digest"] == reference["digest"]
    assert done[-1]["step"] == reference["step"]
    assert done[-1]["steps_here"] == reference["step"] - interrupted_steps[-1]  # none lost


@pytest.mark.e2e  # 18-27 s of a worker: in make test-e2e (CI), to keep make test under 10 min
@pytest.mark.slow
def test_finished_run_does_nothing_when_launched_again(tmp_path: Path) -> None:
    first = launch(tmp_path / "ckpt")
    digest = events(first)[-1]["digest"]
    again = launch(tmp_path / "ckpt")
    done = events(again)[-1]
    assert again.wait() == 0 and done["steps_here"] == 0 and done["digest"] == digest


def launch_on_aws(ckpt: Path, metadata: FakeMetadata, *extra: str) -> subprocess.Popen:
    """The example training watching the fake IMDS, after its first step."""
    run = launch(
        ckpt,
        "--step-sleep-s",
        "0.01",
        *extra,
        env={"SPOTWISE_NOTICES": "aws", "SPOTWISE_AWS_IMDS_URL": metadata.url},
    )
    wait_for(run, "first_step")
    return run


@pytest.mark.slow
def test_rebalance_recommendation_checkpoints_without_stopping(
    tmp_path: Path, metadata: FakeMetadata
) -> None:
    run = launch_on_aws(tmp_path / "ckpt", metadata, "--interval-s", "3600")
    metadata.aws_rebalance = {"noticeTime": "2026-11-29T09:50:00Z"}
    done = events(run)[-1]
    assert run.wait() == 0
    assert done["event"] == "done" and done["checkpoints"] == 2  # the rebalance and the end


@pytest.mark.slow
def test_aws_instance_action_stops_the_run_with_the_preempted_code(
    tmp_path: Path, metadata: FakeMetadata
) -> None:
    run = launch_on_aws(tmp_path / "ckpt", metadata)
    metadata.aws_action = {"action": "terminate", "time": "2026-11-29T10:00:00Z"}
    run.communicate(timeout=60)
    assert run.returncode == PREEMPTED_EXIT_CODE
    assert int((tmp_path / "ckpt" / "latest").read_text()) > 0


def test_the_guard_checkpoints_when_its_clock_says_the_interval_is_up(tmp_path: Path) -> None:
    clock = ManualClock()
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(40, 2)), batch_size=4)
    with guard(
        [str(tmp_path)],
        model=model,
        optimizer=optimizer,
        loader=loader,
        interval_s=60,
        notices=[],
        clock=clock,
    ) as g:
        for i, (x,) in enumerate(g.batches()):
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
            if i == 3:
                clock.sleep(61)  # a minute passes on this clock, none on the wall
            g.step()
        assert g.checkpoints == 1 and g.step_count == 10  # at step 4, when the minute was up
    assert g.checkpoints == 2  # and the final one


def test_the_interval_set_with_spotwise_run_is_the_guards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPOTWISE_CHECKPOINT_S", "45")
    model = torch.nn.Linear(2, 1)
    loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)
    with guard([str(tmp_path)], model=model, loader=loader, notices=[]) as g:
        assert g.interval_s == 45.0
    monkeypatch.delenv("SPOTWISE_CHECKPOINT_S")
    with guard([str(tmp_path / "other")], model=model, loader=loader, notices=[]) as g:
        assert g.interval_s == 60.0  # Young/Daly's starting value before a stall is measured


def test_the_sigterm_window_is_the_one_the_environment_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Kubernetes Pod sets ``SPOTWISE_NOTICE_S`` to its grace; elsewhere SIGTERM gives 30 s."""
    monkeypatch.delenv("SPOTWISE_NOTICES", raising=False)
    monkeypatch.setenv("SPOTWISE_NOTICE_S", "120")
    model = torch.nn.Linear(2, 1)
    loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)
    with guard([str(tmp_path / "eks")], model=model, loader=loader) as g:
        assert g.notice_s == 120.0
    monkeypatch.delenv("SPOTWISE_NOTICE_S")
    with guard([str(tmp_path / "vm")], model=model, loader=loader) as g:
        assert g.notice_s == 30.0


# A stranger's own training script, wrapped as the README's guard snippet shows (not the
# bundled example): argv is the checkpoint folder, where to write the final weights' sha256,
# and the seconds each step sleeps.
STRANGER = """\
import hashlib
import sys
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from spotwise.executor import guard

torch.manual_seed(0)
x = torch.randn(256, 8)
y = x @ torch.randn(8, 1)
loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10)

with guard(
    [sys.argv[1]],
    model=model,
    optimizer=opt,
    scheduler=sched,
    loader=loader,
    epochs=4,
) as g:
    for xb, yb in g.batches():
        loss = nn.functional.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        time.sleep(float(sys.argv[3]))
        g.step()
weights = b"".join(p.detach().numpy().tobytes() for p in model.parameters())
open(sys.argv[2], "w").write(hashlib.sha256(weights).hexdigest())
"""

# A script that prints before its guard without flushing (stdout is a pipe: block-buffered)
# and then hands print() to a logger of its own; argv: checkpoint folder, epochs.
REDIRECTED = """\
import io
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

from spotwise.executor import guard

print("loading data")
sys.stdout = io.StringIO()
model = torch.nn.Linear(2, 1)
loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)
with guard([sys.argv[1]], model=model, loader=loader, epochs=int(sys.argv[2])) as g:
    for (x,) in g.batches():
        g.step()
"""


def run_script(
    tmp_path: Path, text: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.py"
    script.write_text(text)
    return subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_the_guard_announces_itself_where_its_supervisor_reads(tmp_path: Path) -> None:
    """The fresh/resumed event comes from the guard itself, on the process's stdout, after
    what the script printed before it, even though the script took print() over; and the
    step heartbeat has its first beat at once."""
    from spotwise.executor.training.heartbeat import last_step

    heartbeat = tmp_path / "heartbeat"
    env = {"SPOTWISE_HEARTBEAT_FILE": str(heartbeat)}
    first = run_script(tmp_path, REDIRECTED, str(tmp_path / "ckpt"), "0", env=env)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0] == "loading data" and len(lines) == 3
    event, trained = map(json.loads, lines[1:])
    assert event["event"] == "fresh" and event["step"] == 0 and event["world_size"] == 1
    assert trained["event"] == "trained" and trained["step"] == 0
    assert last_step(heartbeat) == 0  # no step taken: the beat on entry
    again = run_script(tmp_path, REDIRECTED, str(tmp_path / "ckpt"), "1")
    assert again.returncode == 0, again.stderr
    event, _ = [json.loads(line) for line in again.stdout.splitlines() if line.startswith("{")]
    assert event["event"] == "resumed" and event["step"] == 0


def test_a_seeded_script_sees_the_same_batches_and_weights_with_and_without_the_guard(
    tmp_path: Path,
) -> None:
    """The guard draws the epoch's order as a plain loop over the loader would: a seeded
    script keeps its data order, and with dropout its weights, when it adopts the guard."""

    def seeded() -> tuple[DataLoader, torch.nn.Module, torch.optim.Optimizer]:
        torch.manual_seed(0)
        data = TensorDataset(torch.arange(24), torch.randn(24, 3))
        loader = DataLoader(data, batch_size=4, shuffle=True)
        model = torch.nn.Sequential(
            torch.nn.Linear(3, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 1)
        )
        return loader, model, torch.optim.SGD(model.parameters(), lr=0.1)

    def train(model: torch.nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor) -> None:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()

    loader, model, optimizer = seeded()
    plain = []
    for _ in range(2):
        for index, x in loader:
            plain.append(index.tolist())
            train(model, optimizer, x)
    plain_weights = [p.detach().clone() for p in model.parameters()]
    loader, model, optimizer = seeded()
    guarded = []
    with guard(
        [str(tmp_path)], model=model, optimizer=optimizer, loader=loader, epochs=2, notices=[]
    ) as g:
        for index, x in g.batches():
            guarded.append(index.tolist())
            train(model, optimizer, x)
            g.step()
    assert guarded == plain
    assert all(torch.equal(a, b) for a, b in zip(plain_weights, model.parameters(), strict=True))


def said(capfd: pytest.CaptureFixture[str]) -> list[tuple[str, int]]:
    """The events the guard printed since the last call: each one's name and step."""
    lines = capfd.readouterr().out.splitlines()
    return [(e["event"], e["step"]) for e in map(json.loads, lines)]


def test_the_guard_says_once_when_its_training_loop_has_ended(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The ``trained`` event comes when the last batch is served, before what the script runs
    after its loop; a loop left early says it when the guard's block ends; a finished run
    launched again says it at once."""
    model = torch.nn.Linear(2, 1)
    loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)
    with guard([str(tmp_path / "all")], model=model, loader=loader, epochs=2, notices=[]) as g:
        for _ in g.batches():
            g.step()
        assert said(capfd) == [("fresh", 0), ("trained", 4)]
    assert said(capfd) == []  # once
    with guard([str(tmp_path / "early")], model=model, loader=loader, notices=[]) as g:
        for _ in g.batches():
            g.step()
            break
        assert said(capfd) == [("fresh", 0)]
    assert said(capfd) == [("trained", 1)]
    with guard([str(tmp_path / "all")], model=model, loader=loader, epochs=2, notices=[]) as g:
        assert list(g.batches()) == []
    assert said(capfd) == [("resumed", 4), ("trained", 4)]


def test_a_script_reads_its_step_epoch_and_total_steps_from_the_guard(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    model = torch.nn.Linear(2, 1)
    loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)  # two batches an epoch
    seen = []
    with guard([str(tmp_path)], model=model, loader=loader, epochs=3, notices=[]) as g:
        assert (g.step_count, g.epoch, g.epochs, g.total_steps) == (0, 0, 3, 6)
        for _ in g.batches():
            g.step()
            seen.append((g.step_count, g.epoch))
    assert seen == [(1, 0), (2, 0), (3, 1), (4, 1), (5, 2), (6, 2)]
    assert g.epoch == 3  # every epoch done
    fresh = json.loads(capfd.readouterr().out.splitlines()[0])
    assert (fresh["event"], fresh["epoch"], fresh["total_steps"]) == ("fresh", 0, 6)


def small_guarded_run(folder: Path) -> None:
    """Two steps under the guard: one committed checkpoint, the final one."""
    model = torch.nn.Linear(2, 1)
    loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)
    with guard([str(folder)], model=model, loader=loader, notices=[]) as g:
        for _ in g.batches():
            g.step()


@pytest.mark.slow
def test_every_checkpoint_damaged_stops_the_guard_and_says_how_to_start_over(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "ckpt"
    small_guarded_run(folder)
    [step] = [p for p in folder.iterdir() if p.name.startswith("step-")]
    manifest = step / "manifest.json"
    damaged = bytearray(manifest.read_bytes())
    damaged[len(damaged) // 2] ^= 1 << 3  # one bit, in the only step's manifest
    manifest.write_bytes(bytes(damaged))

    refused = run_script(tmp_path, REDIRECTED, str(folder), "1")
    assert refused.returncode == 1
    assert "Traceback" not in refused.stderr
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith("spotwise guard: ") and str(folder) in line
    assert f"{step.name}: manifest checksum mismatch" in line
    assert "SPOTWISE_FRESH_IF_DAMAGED=1" in line and f"delete {folder}" in line
    assert "fresh" not in refused.stdout  # it never started
    assert manifest.read_bytes() == bytes(damaged)  # and left the damaged copy as it was

    over = run_script(
        tmp_path, REDIRECTED, str(folder), "1", env={"SPOTWISE_FRESH_IF_DAMAGED": "1"}
    )
    assert over.returncode == 0, over.stderr
    assert "starting over from step 0 as asked" in over.stderr
    event, _ = [json.loads(line) for line in over.stdout.splitlines() if line.startswith("{")]
    assert event["event"] == "fresh" and event["step"] == 0


def test_a_damaged_newest_checkpoint_skipped_on_resume_is_said_loudly_with_its_path(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    model = torch.nn.Linear(2, 1)
    loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)
    with guard([str(tmp_path)], model=model, loader=loader, notices=[], interval_s=0.0) as g:
        for _ in g.batches():
            g.step()  # a checkpoint at each: step-1, step-2 (and the final one, step-2 again)
    newest = tmp_path / "step-2"
    (newest / "small.bin").write_bytes(b"torn")
    capfd.readouterr()
    with guard([str(tmp_path)], model=model, loader=loader, notices=[]) as g:
        assert g.resumed_from == 1 and [c.path for c in g.skipped] == [str(newest)]
    out, err = capfd.readouterr()
    [warning] = [line for line in err.splitlines() if "WARNING" in line]
    assert warning.startswith(
        f"spotwise guard: WARNING: damaged checkpoint skipped: {newest} (step 2): "
        f"{newest}/small.bin: checksum mismatch; resuming from step 1 at {tmp_path}"
    )
    resumed = json.loads(out.splitlines()[0])
    assert resumed["event"] == "resumed" and resumed["step"] == 1
    assert resumed["damaged"] == [{"path": str(newest), "step": 2}]


def test_the_guard_refuses_damaged_checkpoints_in_process_too(tmp_path: Path) -> None:
    from spotwise.executor.errors import CheckpointError
    from spotwise.executor.training.guard import GuardRefused

    small_guarded_run(tmp_path)
    for blob in tmp_path.glob("step-*/*.bin"):
        blob.write_bytes(b"torn")
    model = torch.nn.Linear(2, 1)
    loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)
    unguarded = guard([str(tmp_path)], model=model, loader=loader, notices=[])
    with pytest.raises(GuardRefused, match="none intact") as refused, unguarded:
        pass
    assert isinstance(refused.value, CheckpointError) and refused.value.code != 0
    with guard([str(tmp_path)], model=model, loader=loader, notices=[], fresh_if_damaged=True) as g:
        assert g.resumed_from is None and g.step_count == 0


def test_a_checkpoint_folder_that_cannot_be_made_is_one_clear_line(tmp_path: Path) -> None:
    from spotwise.executor.training.guard import GuardRefused

    afile = tmp_path / "a-file"
    afile.write_text("not a folder")
    model = torch.nn.Linear(2, 1)
    loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)
    unmade = guard([str(afile / "ckpt")], model=model, loader=loader, notices=[])
    with pytest.raises(GuardRefused) as refused, unmade:
        pass
    message = str(refused.value.code)
    assert message.startswith("spotwise guard: cannot open checkpoint replica ")
    assert f"{afile / 'ckpt'}: Not a directory" in message and "\n" not in message


UNREADABLE = """\
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

from spotwise.executor import guard

model = torch.nn.Linear(2, 1)
loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)
with guard([sys.argv[1]], model=model, loader=loader) as g:
    pass
"""


def without_root_overrides() -> None:
    """In a child about to exec: drop the capabilities by which root reads any folder
    (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) from its bounding set, so that the command runs
    with a user's file permissions."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def as_a_user(command: list[str], **options: object) -> subprocess.CompletedProcess[str]:
    """Run ``command`` with a user's file permissions (as root: without root's overrides)."""
    preexec = without_root_overrides if os.geteuid() == 0 else None
    return subprocess.run(
        command, capture_output=True, text=True, check=False, preexec_fn=preexec, **options
    )  # type: ignore[call-overload]


@pytest.mark.slow
def test_an_unreadable_checkpoint_folder_is_one_clear_line(tmp_path: Path) -> None:
    """A folder this user may enter and write but not list."""
    folder = tmp_path / "ckpt"
    folder.mkdir()
    folder.chmod(0o300)
    try:
        probe = as_a_user([sys.executable, "-c", f"import os; os.listdir({str(folder)!r})"])
        if probe.returncode == 0:
            pytest.skip("this process reads any folder, and cannot give that up")
        script = tmp_path / "script.py"
        script.write_text(UNREADABLE)
        result = as_a_user([sys.executable, str(script), str(folder)], timeout=300)
    finally:
        folder.chmod(0o700)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and "PermissionError" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line == (
        f"spotwise guard: cannot open checkpoint replica {folder}: Permission denied; give a "
        "folder or URL this user can read and write"
    )

"""Bit flips in every file of the newest checkpoint, the manifest included: a load never
returns different state and never crashes; it falls back to the previous intact step."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spotwise.executor.checkpoint.manager import CheckpointManager


def state(step: int) -> dict[str, object]:
    return {
        "model": {"w": torch.full((300_000,), float(step)), "b": torch.arange(5) * step},
        "optimizer": {"lr": 0.1 / step, "betas": (0.9, 0.999)},
        "rng": torch.get_rng_state(),
        "step": step,
        "epoch": step // 3,
    }


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    """Steps 1 and 2 saved in a folder, and the bytes of each file of the newest."""
    folder = tmp_path_factory.mktemp("damage")
    manager = CheckpointManager([str(folder)], async_save=False)
    for step in (1, 2):
        manager.save(step, state(step))
    manager.close()
    newest = folder / "step-2"
    return folder, {p.name: p.read_bytes() for p in sorted(newest.iterdir())}


@st.composite
def flips(draw: st.DrawFn, newest: dict[str, bytes]) -> tuple[str, int, int]:
    name = draw(st.sampled_from(sorted(newest)))
    # most draws land in the manifest, where a flip used to change state silently
    if draw(st.booleans()):
        name = "manifest.json"
    return name, draw(st.integers(0, len(newest[name]) - 1)), draw(st.integers(0, 7))


@pytest.mark.slow
@settings(
    max_examples=400, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
@given(data=st.data())
def test_a_bit_flip_anywhere_in_the_newest_checkpoint_falls_back_to_the_previous_one(
    written: tuple[Path, dict[str, bytes]], data: st.DataObject
) -> None:
    folder, newest = written
    name, offset, bit = data.draw(flips(newest), label="flip")
    target = folder / "step-2" / name
    damaged = bytearray(newest[name])
    damaged[offset] ^= 1 << bit
    target.write_bytes(bytes(damaged))
    try:
        manager = CheckpointManager([str(folder)])
        loaded = manager.load()
        manager.close()
    finally:
        target.write_bytes(newest[name])
    assert loaded is not None and loaded.step == 1, (name, offset, bit)
    expected = state(1)
    assert loaded.state["step"] == 1 and loaded.state["epoch"] == 0
    assert torch.equal(loaded.state["model"]["w"], expected["model"]["w"])  # type: ignore[index]
    assert loaded.state["optimizer"] == {"lr": 0.1, "betas": (0.9, 0.999)}


def test_the_undamaged_checkpoint_loads_as_written(
    written: tuple[Path, dict[str, bytes]],
) -> None:
    manager = CheckpointManager([str(written[0])])
    loaded = manager.load()
    manager.close()
    assert loaded is not None and loaded.step == 2 and loaded.state["epoch"] == 0
    assert torch.equal(loaded.state["model"]["b"], torch.arange(5) * 2)


def test_leaked_latest_temp_files_are_cleaned_on_open(tmp_path: Path) -> None:
    leaked = tmp_path / ".latest.0a1b2c3d"
    leaked.write_text("7")
    CheckpointManager([str(tmp_path)]).close()
    assert not leaked.exists()


def test_a_dtype_outside_the_allow_list_is_refused_not_looked_up() -> None:
    import pytest

    from spotwise.executor.checkpoint.statedict import tensor_from_bytes
    from spotwise.executor.errors import CheckpointError

    for dtype in ("torch.Tensor", "torch.load", "float32", "torch.float32\x00"):
        with pytest.raises(CheckpointError, match="unknown tensor dtype"):
            tensor_from_bytes(b"\x00" * 4, dtype, [1])
    with pytest.raises(CheckpointError, match="needs 8 bytes"):
        tensor_from_bytes(b"\x00" * 4, "torch.float32", [2])
    assert tensor_from_bytes(bytearray(8), "torch.float32", [2]).tolist() == [0.0, 0.0]

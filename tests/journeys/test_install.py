"""`make demo` then `make test` on a machine with no GPU: the venv holds the CPU torch the
Makefile names, and no CUDA wheels a later install could have swapped in."""

from __future__ import annotations

import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_venv_holds_the_cpu_torch_the_makefile_names() -> None:
    venv = ROOT / ".venv"
    if Path(sys.prefix).resolve() != venv.resolve():
        pytest.skip(f"the tests run outside the project's venv ({sys.prefix}): `make test` uses it")
    pin = re.search(r"^TORCH_PIN \?= torch==(\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert pin is not None, "the Makefile names no torch pin"
    import torch

    # The dev tools went in after torch, held to it: torch is still the one installed first.
    held = (venv / "torch-constraint.txt").read_text().strip()
    assert held == f"torch=={torch.__version__}"
    if torch.__version__.split("+")[0] != pin.group(1):
        pytest.skip(f"TORCH_PIN chose torch {torch.__version__}, not the default CPU pin")
    assert torch.version.cuda is None  # the CPU build
    names = {d.metadata["Name"].lower() for d in importlib.metadata.distributions()}
    cuda = sorted(n for n in names if n.startswith(("nvidia-", "cuda-")) or n == "triton")
    assert cuda == []

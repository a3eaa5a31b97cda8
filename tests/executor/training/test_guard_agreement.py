"""The guard's per-step agreement runs on a gloo group, whatever the default group's backend."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

RANK = """
import json, sys
import torch
import torch.distributed as dist
from spotwise.executor.training.guard import agreement_group
rank = int(sys.argv[2])
dist.init_process_group("gloo", init_method=f"file://{sys.argv[1]}", rank=rank, world_size=2)
side = agreement_group("nccl")  # as an NCCL-only default group would need
flags = torch.tensor([float(rank == 1), 0.0])
dist.all_reduce(flags, op=dist.ReduceOp.MAX, group=side)
print(json.dumps({
    "side": side is not None and dist.get_backend(side) == "gloo",
    "flags": flags.tolist(),
    "default": [agreement_group(b) is None for b in (None, "gloo", "cpu:gloo,cuda:nccl")],
}))
dist.destroy_process_group()
"""


@pytest.mark.slow
@pytest.mark.xdist_group("torch-distributed")  # gloo jobs, one at a time
def test_ranks_agree_on_a_gloo_side_group_when_the_default_group_cannot_take_cpu_tensors(
    tmp_path: Path,
) -> None:
    ranks = [
        subprocess.Popen(
            [sys.executable, "-c", RANK, str(tmp_path / "store"), str(rank)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        for rank in (0, 1)
    ]
    outputs = [rank.communicate(timeout=120)[0] for rank in ranks]
    assert [rank.returncode for rank in ranks] == [0, 0], outputs
    for output in outputs:
        said = json.loads(output)
        assert said == {"side": True, "flags": [1.0, 0.0], "default": [True, True, True]}

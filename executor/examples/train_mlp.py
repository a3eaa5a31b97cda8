"""A small real training job for the demo, the tests and the benchmarks.

An MLP with dropout learns a fixed random teacher network on data it generates (seeded), with
AdamW, a OneCycle LR schedule, a GradScaler and a shuffling DataLoader, all under
``executor.guard``. It prints one JSON line per event on stdout (``start``, ``first_step``,
``done``; the guard prints its own ``fresh`` or ``resumed``) and, when finished, writes
``--out`` with a sha256 of the final model and optimizer state, so runs can be compared bit
for bit. After each epoch it prints its loss on held-out data
(``{"event": "report", "step": S, "value": V}``) and the ``done`` event carries the final one
(``value``): what a sweep's pruner and objective read.

    python -m spotwise.executor.examples.train_mlp --ckpt /tmp/ckpt --epochs 3 --out result.json
    torchrun --nproc-per-node 2 -m spotwise.executor.examples.train_mlp --ckpt /shared/ckpt

Under torchrun it trains data-parallel (DDP over gloo) and checkpoints through
torch.distributed.checkpoint.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from spotwise.executor.checkpoint.statedict import flatten, tensor_bytes
from spotwise.executor.errors import Preempted
from spotwise.executor.training.guard import Guard, guard

# dist.set_timeout is public in recent torch; older releases (>= 2.3) have the private name.
set_timeout = getattr(dist, "set_timeout", None) or dist.distributed_c10d._set_pg_timeout


def make_data(n: int, features: int, seed: int) -> TensorDataset:
    """Inputs and the targets of a fixed random teacher, reproducible from ``seed``."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=generator)
    teacher = torch.randn(features, 4, generator=generator)
    y = torch.tanh(x @ teacher) + 0.05 * torch.randn(n, 4, generator=generator)
    return TensorDataset(x, y)


def state_digest(state: Any) -> str:
    """sha256 over every tensor (sorted by key) and the structure of ``state``."""
    skeleton, tensors = flatten(state)
    digest = hashlib.sha256(json.dumps(skeleton, sort_keys=True, default=str).encode())
    for key in sorted(tensors):
        digest.update(key.encode())
        digest.update(tensor_bytes(tensors[key].detach().cpu().contiguous()))
    return digest.hexdigest()


def emit(event: str, **fields: Any) -> None:
    """Print one JSON event line (with the time and this rank) for the supervisor."""
    rank = int(os.environ.get("RANK", "0"))
    # timing only: the event's wall time, read by the resume bench; this runs as the job's own
    # process, apart from the supervisor's Clock
    print(json.dumps({"event": event, "t": time.time(), "rank": rank, **fields}), flush=True)


def _parser() -> argparse.ArgumentParser:
    """The example's options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ckpt", action="append", required=True, help="replica URL (repeat)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=4096)
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (OneCycle)")
    parser.add_argument("--batch-size", type=int, default=32, help="global batch")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--interval-s", type=float, default=None)
    parser.add_argument("--mtbf-s", type=float, default=None)
    parser.add_argument("--full-every", type=int, default=4)
    parser.add_argument(
        "--step-sleep-s",
        type=float,
        default=0.0,
        help="slow each step down (to line a run up with a replayed trace)",
    )
    parser.add_argument("--out", type=Path, default=None)
    return parser


def _join_group_when_launched() -> None:
    """Under torchrun: join the data-parallel process group over gloo (DCP checkpoints)."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    elastic = "TORCHELASTIC_RUN_ID" in os.environ
    if elastic or world_size > 1:
        # Peers may take long to start (the setup timeout), but once they run, a lost peer
        # must fail collectives soon so that torchrun elastic regroups without it.
        setup_s = float(os.environ.get("SPOTWISE_PG_SETUP_TIMEOUT_S", "300"))
        dist.init_process_group("gloo", timeout=timedelta(seconds=setup_s))
        dist.barrier()
        set_timeout(timedelta(seconds=float(os.environ.get("SPOTWISE_PG_TIMEOUT_S", "60"))))


def _loader(
    data: TensorDataset, args: argparse.Namespace, parser: argparse.ArgumentParser
) -> DataLoader[Any]:
    """Batches of ``data``: a shard of each global batch per rank under a process group."""
    if not dist.is_initialized():
        return DataLoader(data, batch_size=args.batch_size, shuffle=True)
    sampler: DistributedSampler[Any] = DistributedSampler(data, shuffle=True, seed=args.seed)
    # The global batch stays --batch-size at any world size, so an elastic job that
    # shrinks or grows keeps its steps per epoch and its LR schedule.
    ranks = dist.get_world_size()
    if args.batch_size % ranks:
        parser.error(f"--batch-size {args.batch_size} does not split over {ranks} ranks")
    return DataLoader(data, batch_size=args.batch_size // ranks, sampler=sampler)


def _model(features: int, hidden: int) -> nn.Module:
    """The MLP, data-parallel under a process group."""
    model: nn.Module = nn.Sequential(
        nn.Linear(features, hidden),
        nn.ReLU(),
        nn.Dropout(0.1),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, 4),
    )
    return DistributedDataParallel(model) if dist.is_initialized() else model


def main(argv: list[str] | None = None) -> int:
    """Train the MLP with checkpoints; the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    _join_group_when_launched()
    torch.manual_seed(args.seed)
    data = make_data(args.samples, args.features, args.seed)
    loader = _loader(data, args, parser)
    model = _model(args.features, args.hidden)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    total = args.epochs * len(loader)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=total)
    held_out = make_data(512, args.features, args.seed + 1).tensors

    def held_out_loss() -> float:
        """Loss on held-out data (no RNG drawn, so resumed runs stay bit-exact)."""
        model.eval()
        with torch.no_grad():
            loss = float(nn.functional.mse_loss(model(held_out[0]), held_out[1]))
        model.train()
        return loss

    scaler = torch.amp.GradScaler("cuda", enabled=torch.cuda.is_available())
    emit("start")
    steps_here = 0
    g: Guard | None = None
    try:
        with guard(
            args.ckpt,
            model=model,
            optimizer=optimizer,
            scheduler=scheduler,
            scaler=scaler,
            loader=loader,
            epochs=args.epochs,
            interval_s=args.interval_s,
            mtbf_s=args.mtbf_s,
            full_every=args.full_every,
        ) as g:  # the guard announces itself: {"event": "fresh"|"resumed", "step": ...}
            for x, y in g.batches():
                loss = nn.functional.mse_loss(model(x), y)
                optimizer.zero_grad(set_to_none=True)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                scheduler.step()
                if args.step_sleep_s:
                    time.sleep(args.step_sleep_s)
                steps_here += 1
                if steps_here == 1:
                    emit("first_step", step=g.step_count + 1)
                g.step()
                if g.step_count % len(loader) == 0:
                    emit("report", step=g.step_count, value=held_out_loss())
    except Preempted as exc:
        assert g is not None
        emit(
            "preempted",
            step=exc.step,
            steps_here=steps_here,
            checkpoints=g.checkpoints,
            stall_s=g.stalls_s,
        )
        raise
    digest = state_digest(
        {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
        }
    )
    emit(
        "done",
        step=g.step_count,
        steps_here=steps_here,
        checkpoints=g.checkpoints,
        stall_s=g.stalls_s,
        digest=digest,
        value=held_out_loss(),
    )
    if args.out and int(os.environ.get("RANK", "0")) == 0:
        args.out.write_text(json.dumps({"digest": digest, "steps": g.step_count}))
    if dist.is_initialized():
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

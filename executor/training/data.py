"""Resumable data order for any sampler-based DataLoader.

At the start of each epoch the loader's batch order is drawn once (from its sampler, with the
RNG as it stands) and kept; the epoch is then served from a DataLoader over exactly those
batches, starting at the saved position. The order and position are part of the checkpoint, so
a resumed run sees the same batches in the same order.

In a ``torch.distributed`` job the order kept is the epoch's global batches: every rank's b-th
batch, in rank order, gathered when the epoch's order is drawn. The same on every rank, it is
valid at any world size: a job that resumes at another size (torchrun elastic after a lost or
a new node) splits each remaining global batch evenly over its ranks, so the epoch goes on
with the same samples in the same global batches, none skipped and none repeated; at the same
size every rank gets back exactly its own batches.

A fresh epoch draws from the RNG what ``for batch in loader`` would, in its order (the
iterator's base seed, then the sampler's order), so a seeded script sees the same batches
under the guard as without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader


class ResumableBatches:
    """Serves a DataLoader's batches epoch by epoch from a resumable position."""

    def __init__(self, loader: DataLoader, *, distributed: bool = False) -> None:
        if loader.batch_sampler is None:
            raise ValueError(
                "the DataLoader has no batch sampler (an IterableDataset?): "
                "give a map-style dataset with a sampler"
            )
        self.loader = loader
        self.distributed = distributed
        self.epoch = 0
        self.position = 0
        self.order: list[list[int]] | None = None
        self.global_order: list[list[int]] | None = None
        """Distributed: the epoch's global batches (every rank's b-th, in rank order)."""
        self._iterated = False
        """Whether this process has started an epoch's iterator yet."""

    def draw_order(self) -> None:
        """Draw this epoch's batches from the loader's batch sampler."""
        set_epoch = getattr(self.loader.sampler, "set_epoch", None)
        if callable(set_epoch):
            set_epoch(self.epoch)
        batch_sampler = self.loader.batch_sampler
        assert batch_sampler is not None
        self.order = [list(map(int, batch)) for batch in batch_sampler]
        self.position = 0
        if self.distributed:
            parts: list[Any] = [None] * dist.get_world_size()
            dist.all_gather_object(parts, self.order)
            if len({len(part) for part in parts}) != 1:
                raise ValueError(
                    "the ranks drew different numbers of batches this epoch; use a "
                    "DistributedSampler (it pads every rank to the same length)"
                )
            self.global_order = [
                [i for batch in batches for i in batch] for batches in zip(*parts, strict=True)
            ]

    def remaining(self) -> DataLoader:
        """A DataLoader over the rest of this epoch's batches, as the original would load
        them (same dataset, collate, workers, pinning)."""
        assert self.order is not None
        source = self.loader
        return DataLoader(
            source.dataset,
            batch_sampler=self.order[self.position :],
            num_workers=source.num_workers,
            collate_fn=source.collate_fn,
            pin_memory=source.pin_memory,
            timeout=source.timeout,
            worker_init_fn=source.worker_init_fn,
            generator=source.generator,
            persistent_workers=False,
        )

    def _start_epoch(self) -> Iterator[Any]:
        """Draw the epoch's order and start serving it. A plain ``iter(loader)`` draws its base
        seed (for workers) first and the sampler's seed at the first batch; drawing the order
        first would swap the two and give a seeded script other batches than without the
        guard. So the base seed is drawn as the plain loader would, then the order, and the
        iterator over the order is created with the RNG back at the base seed's draw. (A
        loader with persistent workers draws its base seed only for its first iterator.)"""
        loader, generator = self.loader, self.loader.generator
        before = torch.get_rng_state() if generator is None else generator.get_state()
        if not (self._iterated and loader.persistent_workers and loader.num_workers > 0):
            torch.empty((), dtype=torch.int64).random_(generator=generator)  # the base seed
        self.draw_order()
        after = torch.get_rng_state() if generator is None else generator.get_state()
        _set_state(generator, before)
        iterator = iter(self.remaining())  # draws that same base seed again
        _set_state(generator, after)
        return iterator

    def iterate(self, epochs: int, after_start: Any = None) -> Iterator[Any]:
        """Batches until ``epochs`` are done; ``after_start()`` runs once, right after the first
        iterator is created (the guard restores RNG state there)."""
        while self.epoch < epochs:
            iterator = self._start_epoch() if self.order is None else iter(self.remaining())
            self._iterated = True
            if after_start is not None:
                after_start()
                after_start = None
            for batch in iterator:
                self.position += 1
                yield batch
            self.epoch += 1
            self.order = self.global_order = None
            self.position = 0

    def state_dict(self, *, as_lists: bool = False) -> dict[str, Any]:
        """Epoch, position and the epoch's order (as tensors, or lists for DCP, whose
        templates cannot change a tensor's size); distributed, the global order."""
        order = (self.global_order if self.distributed else self.order) or []
        indices = [i for b in order for i in b]
        lengths = [len(b) for b in order]
        return {
            "epoch": self.epoch,
            "position": self.position,
            "indices": indices if as_lists else torch.tensor(indices, dtype=torch.int64),
            "lengths": lengths if as_lists else torch.tensor(lengths, dtype=torch.int64),
            "has_order": self.order is not None,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue where :meth:`state_dict` was taken (distributed: this rank's share of each
        global batch at the present world size)."""
        self.epoch = int(state["epoch"])
        self.position = int(state["position"])
        self.order = self.global_order = None
        if not state["has_order"]:
            return
        indices = torch.as_tensor(state["indices"], dtype=torch.int64).tolist()
        order, start = [], 0
        for length in torch.as_tensor(state["lengths"], dtype=torch.int64).tolist():
            order.append(indices[start : start + length])
            start += length
        if not self.distributed:
            self.order = order
            return
        self.global_order = order
        rank, world = dist.get_rank(), dist.get_world_size()
        if any(len(batch) < world for batch in order[self.position :]):
            raise ValueError(
                f"a global batch of the checkpoint's epoch is smaller than the {world} ranks "
                "resuming it; resume on fewer nodes or use a larger batch"
            )
        self.order = rank_share(order, rank, world)


def _set_state(generator: torch.Generator | None, state: torch.Tensor) -> None:
    if generator is None:
        torch.set_rng_state(state)
    else:
        generator.set_state(state)


def rank_share(global_batches: list[list[int]], rank: int, world: int) -> list[list[int]]:
    """``rank``'s part of each global batch when ``world`` ranks share them: contiguous, as
    even as can be, in rank order (so ``world`` parts of a batch make it up again, and at the
    size that gathered them each rank gets back its own batches)."""
    return [
        [int(i) for i in part]
        for part in (np.array_split(np.asarray(batch), world)[rank] for batch in global_batches)
    ]

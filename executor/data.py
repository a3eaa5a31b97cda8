"""Resumable data order for any sampler-based DataLoader.

At the start of each epoch the loader's batch order is drawn once (from its sampler, with the
RNG as it stands) and kept; the epoch is then served from a DataLoader over exactly those
batches, starting at the saved position. The order and position are part of the checkpoint, so
a resumed run sees the same batches in the same order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch.utils.data import DataLoader


class ResumableBatches:
    """Serves a DataLoader's batches epoch by epoch from a resumable position."""

    def __init__(self, loader: DataLoader) -> None:
        if loader.batch_sampler is None:
            raise ValueError(
                "the DataLoader has no batch sampler (an IterableDataset?): "
                "give a map-style dataset with a sampler"
            )
        self.loader = loader
        self.epoch = 0
        self.position = 0
        self.order: list[list[int]] | None = None

    def draw_order(self) -> None:
        """Draw this epoch's batches from the loader's batch sampler."""
        set_epoch = getattr(self.loader.sampler, "set_epoch", None)
        if callable(set_epoch):
            set_epoch(self.epoch)
        batch_sampler = self.loader.batch_sampler
        assert batch_sampler is not None
        self.order = [list(map(int, batch)) for batch in batch_sampler]
        self.position = 0

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

    def iterate(self, epochs: int, after_start: Any = None) -> Iterator[Any]:
        """Batches until ``epochs`` are done; ``after_start()`` runs once, right after the first
        iterator is created (the guard restores RNG state there)."""
        while self.epoch < epochs:
            if self.order is None:
                self.draw_order()
            iterator = iter(self.remaining())
            if after_start is not None:
                after_start()
                after_start = None
            for batch in iterator:
                self.position += 1
                yield batch
            self.epoch += 1
            self.order = None
            self.position = 0

    def state_dict(self, *, as_lists: bool = False) -> dict[str, Any]:
        """Epoch, position and the epoch's order (as tensors, or lists for DCP, whose
        templates cannot change a tensor's size)."""
        order = self.order or []
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
        """Continue where :meth:`state_dict` was taken."""
        self.epoch = int(state["epoch"])
        self.position = int(state["position"])
        if state["has_order"]:
            indices = torch.as_tensor(state["indices"], dtype=torch.int64).tolist()
            order, start = [], 0
            for length in torch.as_tensor(state["lengths"], dtype=torch.int64).tolist():
                order.append(indices[start : start + length])
                start += length
            self.order = order
        else:
            self.order = None

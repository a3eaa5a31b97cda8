"""The training data's order: resumable mid-epoch, a global batch shared whole among ranks."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset

from spotwise.executor.training.data import ResumableBatches, rank_share


def test_data_order_resumes_mid_epoch() -> None:
    data = TensorDataset(torch.arange(20))
    torch.manual_seed(1)
    plain = ResumableBatches(DataLoader(data, batch_size=3, shuffle=True))
    full = [b[0].tolist() for b in plain.iterate(2)]
    torch.manual_seed(1)
    first = ResumableBatches(DataLoader(data, batch_size=3, shuffle=True))
    iterator = first.iterate(2)
    head = [next(iterator)[0].tolist() for _ in range(9)]
    saved = first.state_dict()
    rng = torch.get_rng_state()
    second = ResumableBatches(DataLoader(data, batch_size=3, shuffle=True))
    second.load_state_dict(saved)
    tail = [b[0].tolist() for b in second.iterate(2, after_start=lambda: torch.set_rng_state(rng))]
    assert head + tail == full


def test_a_global_batch_is_shared_whole_at_any_world_size() -> None:
    """The global batches two ranks drew, resumed by one, two or three ranks: every sample
    once, in its batch; two ranks get back exactly what they drew."""
    rank0, rank1 = [[5, 1, 7], [0, 9, 2]], [[3, 8, 6], [4, 11, 10]]
    global_batches = [a + b for a, b in zip(rank0, rank1, strict=True)]
    assert [rank_share(global_batches, r, 2) for r in (0, 1)] == [rank0, rank1]
    assert rank_share(global_batches, 0, 1) == global_batches
    for world in (1, 2, 3, 4):
        shares = [rank_share(global_batches, r, world) for r in range(world)]
        for b, batch in enumerate(global_batches):
            assert [i for share in shares for i in share[b]] == batch

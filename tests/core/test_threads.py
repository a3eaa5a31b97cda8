"""Spotwise's own fits run on one thread per pool, and give the pools back as they were."""

from __future__ import annotations

import numpy as np
import scipy.linalg  # noqa: F401  (scipy's BLAS, loaded before the block)
import sklearn.ensemble  # noqa: F401  (scikit-learn's OpenMP)
import torch
from threadpoolctl import threadpool_info, threadpool_limits

from spotwise.core.threads import one_thread_each


def test_every_loaded_pool_runs_one_thread_in_the_block_and_as_before_after() -> None:
    torch_threads = torch.get_num_threads()
    with threadpool_limits(limits=2):  # the suite's workers may run at one already
        torch.set_num_threads(2)
        before = {p["filepath"]: p["num_threads"] for p in threadpool_info()}
        assert max(before.values()) == 2
        with one_thread_each():
            inside = {p["filepath"]: p["num_threads"] for p in threadpool_info()}
            assert set(inside.values()) == {1}
            assert torch.get_num_threads() == 1
            assert np.allclose(np.linalg.inv(np.eye(3) * 2), np.eye(3) / 2)  # still computes
        assert {p["filepath"]: p["num_threads"] for p in threadpool_info()} == before
        assert torch.get_num_threads() == 2
    torch.set_num_threads(torch_threads)

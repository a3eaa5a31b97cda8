"""How many threads Spotwise's own number crunching runs on.

BLAS and OpenMP pools (numpy's and scipy's OpenBLAS, scikit-learn's and torch's OpenMP) start a
thread per core, and their idle threads spin. On a busy host they fight the other processes for
the cores: a forecast run that took 47 s of wall time with one thread each took 161 s with the
default two (load 8-10 on two cores, measured side by side). With one thread each, work slows in
proportion to the load instead.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def one_thread_each() -> Iterator[None]:
    """Run the block with numpy's and scipy's BLAS, every other BLAS and OpenMP pool loaded
    so far, and torch's intra-op pool at one thread (a pool another library loads inside the
    block is not limited: import it first)."""
    import numpy  # noqa: F401  (loads its BLAS, so that the limit reaches it)
    import scipy.linalg  # noqa: F401  (loads scipy's)
    from threadpoolctl import threadpool_limits

    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    with threadpool_limits(limits=1):
        if torch is not None:
            torch.set_num_threads(1)
        try:
            yield
        finally:
            if torch is not None and before is not None:
                torch.set_num_threads(before)

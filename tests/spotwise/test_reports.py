"""What a job's report prints of its bids: each pool once, a bid repeated at relaunches counted."""

from __future__ import annotations

from spotwise.reports import _bids


def test_a_pool_relaunched_at_the_same_bid_is_named_once_with_its_launches() -> None:
    bids = (("ap-southeast-1a", 3.9), ("ap-southeast-1a", 3.9), ("b", 1.2), ("b", 1.5))
    assert _bids(bids) == "ap-southeast-1a $3.900/h (2 launches), b $1.200/h / $1.500/h"

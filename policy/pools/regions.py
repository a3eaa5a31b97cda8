"""Where a job's pools run: each pool's region, each region's on-demand price, and what a
checkpoint costs to move from one region to another (the clouds' egress list prices).

A job's checkpoint lives where its last instance wrote it. An instance in another region reads
it from there: the checkpoint's gigabytes times the price of that transfer (free within a
region; the cloud's inter-region price within a continent, its inter-continent price across
continents; the source cloud's internet egress price to another cloud). Pools that name no cloud
or region (plain availability traces) share one region, where nothing is charged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from spotwise.policy.pools.clouds import STORAGE_LISTS
from spotwise.policy.traces import Pool

NOWHERE = -1
"""The region of a job that has written no checkpoint yet: its first launch moves nothing."""

_CONTINENTS = (
    ("NA", ("us", "ca", "northamerica", "eastus", "westus", "centralus", "northcentralus",
            "southcentralus", "westcentralus", "canada", "mx")),
    ("EU", ("eu", "europe", "westeurope", "northeurope", "uk", "france", "germany", "sweden",
            "switzerland", "norway", "italy", "poland", "spain")),
    ("AP", ("ap", "asia", "australia", "eastasia", "southeastasia", "japan", "korea", "india",
            "centralindia", "southindia", "westindia")),
    ("SA", ("sa", "southamerica", "brazil")),
    ("ME", ("me", "il", "uae", "qatar", "israel")),
    ("AF", ("af", "africa", "southafrica")),
)  # fmt: skip


def continent(region: str) -> str:
    """The continent a region's name says (``us-east-1``, ``europe-west4``, ``eastus`` → NA,
    EU, NA); "" when the name says none."""
    name = region.lower()
    head = name.split("-", 1)[0]
    for code, starts in _CONTINENTS:
        if head in starts or any(name.startswith(s) for s in starts if len(s) > 3):
            return code
    return ""


def egress_usd_per_gb(src: tuple[str, str], dst: tuple[str, str]) -> float:
    """$ per GB to read a checkpoint written in ``src`` (cloud, region) from ``dst``: 0 within a
    region or where a cloud is unknown; the list prices of the source cloud otherwise."""
    (src_cloud, src_region), (dst_cloud, dst_region) = src, dst
    if src == dst or src_cloud not in STORAGE_LISTS:
        return 0.0
    prices = STORAGE_LISTS[src_cloud]
    if dst_cloud != src_cloud:
        return prices.egress_usd_per_gb
    if continent(src_region) == continent(dst_region) != "":
        return prices.inter_region_usd_per_gb
    return prices.inter_continent_usd_per_gb


@dataclass(frozen=True, slots=True, kw_only=True)
class Regions:
    """The regions of a job's pools: names, each pool's region, each region's on-demand price
    ($/h) and the egress price between any two ($/GB, source × destination)."""

    names: tuple[tuple[str, str], ...]
    """(cloud, region) of each region."""
    of_pool: np.ndarray
    """int [pools]: each pool's region."""
    on_demand: np.ndarray
    """float [regions]: $/h on demand there."""
    egress_per_gb: np.ndarray
    """float [regions, regions]: $/GB from the first region to the second."""

    @classmethod
    def of(cls, pools: Sequence[Pool], on_demand_price: float) -> Regions:
        """The regions of ``pools``; a region's on-demand price is its pools' (the cheapest
        they give), else ``on_demand_price``."""
        names: list[tuple[str, str]] = []
        of_pool = []
        for pool in pools:
            key = (pool.cloud, pool.region)
            if key not in names:
                names.append(key)
            of_pool.append(names.index(key))
        on_demand = np.full(len(names), np.inf)
        for pool, r in zip(pools, of_pool, strict=True):
            if pool.on_demand_price is not None:
                on_demand[r] = min(on_demand[r], pool.on_demand_price)
        on_demand[np.isinf(on_demand)] = on_demand_price
        egress = np.array([[egress_usd_per_gb(a, b) for b in names] for a in names])
        return cls(
            names=tuple(names),
            of_pool=np.array(of_pool, dtype=int),
            on_demand=on_demand,
            egress_per_gb=egress.reshape(len(names), len(names)),
        )

    @property
    def count(self) -> int:
        """How many regions there are."""
        return len(self.names)

    @property
    def priced_moves(self) -> bool:
        """Whether moving a checkpoint between any two of them costs anything."""
        return bool(self.egress_per_gb.any())

    def move_usd(self, src: int, dst: int, checkpoint_gb: float) -> float:
        """$ to read a checkpoint of ``checkpoint_gb`` written in region ``src`` (NOWHERE: none
        yet) from region ``dst``."""
        if src in (NOWHERE, dst):
            return 0.0
        return float(self.egress_per_gb[src, dst]) * checkpoint_gb

    def label(self, r: int) -> str:
        """``cloud:region`` of region ``r`` (or the region alone, or ``here``)."""
        cloud, region = self.names[r]
        return ":".join(p for p in (cloud, region) if p) or "here"

    def cheapest_on_demand(self, checkpoint: int, checkpoint_gb: float, hours: float) -> int:
        """The region where ``hours`` on demand cost least, the checkpoint's move from region
        ``checkpoint`` counted."""
        costs = [
            self.on_demand[r] * hours + self.move_usd(checkpoint, r, checkpoint_gb)
            for r in range(self.count)
        ]
        return int(np.argmin(costs))

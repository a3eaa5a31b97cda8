"""A cloud's profile: the facts about a cloud that pricing, the plan and the dashboard read
(the executor's side of the cloud is its folder under ``executor/clouds/``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Collector:
    """How a cloud's ``spotwise collect`` command is written."""

    region_flag: str
    """``--region`` (one region a run) or ``--regions`` (comma-separated)."""
    shape_flag: str
    """The flag that names instance types, machine shapes or VM sizes."""
    per_region: bool
    """Its catalog prices a shape per region, not per zone."""
    needs_region: str | None
    """A region to name where the command needs one and the caller has none (None: optional)."""
    on_demand_flag: str | None = None
    """The flag of a separate run for on-demand prices (None: one run stores both)."""
    gpu_flag: str | None = "--gpu"
    """The flag that picks shapes by GPU model (None: none)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StorageList:
    """A cloud's object-store list prices as the plan and the ledger charge a job's
    checkpoints: read from the provider's pricing page (``source``) on ``as_of``, the first
    tier of a US region, no free tier counted; not collected into the store, and labelled so."""

    usd_per_gb_month: float
    usd_per_1k_writes: float
    egress_usd_per_gb: float
    """Internet egress, first tier: the final checkpoint leaving the cloud once."""
    source: str
    as_of: str
    """The day the figures were read from ``source`` (ISO date)."""

    def describe(self) -> str:
        """One line: the figures, their page and the day they were read."""
        return (
            f"${self.usd_per_gb_month}/GB-month, ${self.usd_per_1k_writes}/1k writes, egress "
            f"${self.egress_usd_per_gb}/GB (list prices of {self.source}, read {self.as_of}; "
            "not a quote)"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchForm:
    """How ``spotwise run --launcher CLOUD`` is written: its account flags in order, each with
    the placeholder printed when the plan was not given its value, and where it checkpoints."""

    cloud: str
    flags: tuple[tuple[str, str, str], ...]
    """(the setting's name, the flag as this cloud's users know it, its placeholder)."""
    scheme: str
    """The object store's URL scheme (``s3``, ``gs``, ``az``)."""
    bucket_is_account_container: bool = False
    """``--bucket`` is ``ACCOUNT/CONTAINER`` and a URL names the container only (Azure)."""

    def container(self, bucket: str) -> str:
        """The part of ``--bucket`` a checkpoint URL starts with."""
        return bucket.rsplit("/", 1)[-1] if self.bucket_is_account_container else bucket


@dataclass(frozen=True, slots=True, kw_only=True)
class CloudProfile:
    """One cloud as pricing, the plan and the dashboard know it."""

    name: str
    """The provider name of store rows, ``collect NAME`` and ``--launcher NAME``."""
    title: str
    """How people write it (``AWS``, ``Azure``): the dashboard's headings."""
    collector: Collector
    storage: StorageList
    launch: LaunchForm
    zone_separator: str | None
    """What ends a region's name in a zone's (``-`` in ``us-central1-a``); None: a zone is its
    region and one letter (``us-east-1a``)."""
    skypilot: str | None
    """Its name in a SkyPilot task (None: SkyPilot does not launch there)."""
    price_grid: str = "D"
    """The grid its stored prices are forecast on: ``h`` for a spot history that changes within
    a day, ``D`` for a catalog read once a day."""
    gpu_prefixes: tuple[str, ...] = ()
    """Lower-case starts of its shapes' names that carry accelerators (``p3`` of ``p3.2xlarge``),
    beside the GPU table's shapes."""

    def region_of(self, zone: str) -> str:
        """The region of an availability zone (``us-east-1a`` → ``us-east-1``, ``us-central1-a``
        → ``us-central1``)."""
        if self.zone_separator is not None:
            return zone.rsplit(self.zone_separator, 1)[0]
        return zone[:-1] if zone and zone[-1].isalpha() else zone

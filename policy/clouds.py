"""What a plan needs to know of each cloud beside its compute prices: what its object store
charges for a job's checkpoints (storage, writes, and the final checkpoint's egress to the
internet), how long its preemption notice is, and how ``spotwise run --launcher CLOUD`` is
written for it (its account flags, with placeholders, and its storage URL).

The storage and egress figures are list prices read from each provider's pricing page (named
in ``source``, with the day they were read as ``as_of``): the first tier of a US region, no
free tier counted. They are not collected into the store, and the plan labels them so. The
notice windows are not defined here: the executor's clouds define them
(:attr:`~executor.clouds.base.Cloud.notice_s`) and the caller passes them in, so there is one
definition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class StorageList:
    """A cloud's object-store list prices as the plan charges a job's checkpoints."""

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


STORAGE_LISTS: dict[str, StorageList] = {
    "aws": StorageList(
        usd_per_gb_month=0.023,
        usd_per_1k_writes=0.005,
        egress_usd_per_gb=0.09,
        source="https://aws.amazon.com/s3/pricing/ (S3 Standard, us-east-1; egress to the "
        "internet, first 10 TB)",
        as_of="2026-12-04",
    ),
    "gcp": StorageList(
        usd_per_gb_month=0.020,
        usd_per_1k_writes=0.005,
        egress_usd_per_gb=0.12,
        source="https://cloud.google.com/storage/pricing (Standard, us-central1; Class A "
        "operations; Premium Tier egress to the internet, first TiB)",
        as_of="2026-12-04",
    ),
    "azure": StorageList(
        usd_per_gb_month=0.018,
        usd_per_1k_writes=0.0065,
        egress_usd_per_gb=0.087,
        source="https://azure.microsoft.com/en-us/pricing/details/storage/blobs/ (Hot LRS, "
        "East US; write operations) and .../bandwidth/ (internet egress, first 10 TB)",
        as_of="2026-12-04",
    ),
}
"""Each cloud's checkpoint storage and egress list prices, by cloud name."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchForm:
    """How ``spotwise run --launcher CLOUD`` is written: its account flags in order, each with
    the placeholder printed when the plan was not given its value, and where it checkpoints."""

    cloud: str
    flags: tuple[tuple[str, str, str], ...]
    """(the setting's name, the flag as this cloud's users know it, its placeholder)."""
    scheme: str
    """The object store's URL scheme (``s3``, ``gs``, ``az``)."""

    def container(self, bucket: str) -> str:
        """The part of ``--bucket`` a checkpoint URL starts with (Azure: the container of
        ``ACCOUNT/CONTAINER``)."""
        return bucket.rsplit("/", 1)[-1] if self.cloud == "azure" else bucket


LAUNCH_FORMS: dict[str, LaunchForm] = {
    "aws": LaunchForm(
        cloud="aws",
        flags=(
            ("image", "--image-id", "AMI"),
            ("bucket", "--bucket", "BUCKET"),
            ("identity", "--instance-profile", "PROFILE"),
        ),
        scheme="s3",
    ),
    "gcp": LaunchForm(
        cloud="gcp",
        flags=(
            ("project", "--project", "PROJECT"),
            ("image", "--image", "IMAGE"),
            ("bucket", "--bucket", "BUCKET"),
            ("identity", "--service-account", "SERVICE_ACCOUNT"),
        ),
        scheme="gs",
    ),
    "azure": LaunchForm(
        cloud="azure",
        flags=(
            ("project", "--project", "SUBSCRIPTION/RESOURCE_GROUP"),
            ("image", "--image", "IMAGE_URN"),
            ("bucket", "--bucket", "ACCOUNT/CONTAINER"),
            ("identity", "--identity", "IDENTITY"),
        ),
        scheme="az",
    ),
}
"""The launch form of each cloud ``spotwise run`` launches on, by cloud name."""

CHECKPOINT_PREFIX = "spotwise/checkpoints"
"""Where in the bucket a run's checkpoints go (the prefix every cloud's setup lets its
instances write)."""


def notice_line(notices: Mapping[str, float], save_s: float) -> str:
    """Whether a checkpoint written in ``save_s`` fits each cloud's preemption notice."""
    shown = ", ".join(f"{c} {s:.0f} s" for c, s in sorted(notices.items()))
    short = sorted(c for c, s in notices.items() if s < save_s)
    if not short:
        return f"the last checkpoint ({save_s:.0f} s to write) fits every notice ({shown})"
    return (
        f"the last checkpoint takes {save_s:.0f} s to write, longer than the notice of "
        f"{', '.join(short)} ({shown}): there a preemption loses the work since the previous "
        "checkpoint; a smaller or incremental checkpoint, or a faster store, makes it fit"
    )

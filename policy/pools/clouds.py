"""What a plan needs to know of each cloud beside its compute prices, by cloud name: what its
object store charges for a job's checkpoints and how ``spotwise run --launcher CLOUD`` is
written for it (both from the cloud's profile, :mod:`pricing.clouds`), and whether the last
checkpoint fits its preemption notice.

The notice windows are not defined here: the executor's clouds define them
(:attr:`~executor.clouds.base.Cloud.notice_s`) and the caller passes them in, so there is one
definition.
"""

from __future__ import annotations

from collections.abc import Mapping

from spotwise.pricing.clouds.profile import LaunchForm, StorageList
from spotwise.pricing.clouds.registry import PROFILES

STORAGE_LISTS: dict[str, StorageList] = {name: p.storage for name, p in PROFILES.items()}
"""Each cloud's checkpoint storage and egress list prices, by cloud name."""

LAUNCH_FORMS: dict[str, LaunchForm] = {name: p.launch for name, p in PROFILES.items()}
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

"""The plan as a SkyPilot task, for teams that launch with SkyPilot: its resources list the
plan's pools in forecast-cost order (``ordered``: SkyPilot tries them in turn) on spot, and its
environment carries the guard's settings (the best pool's mean time between preemptions, from
which the guard sets its checkpoint interval, and the clouds' notice sources)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from spotwise.policy.errors import PolicyError
from spotwise.policy.plan import Plan
from spotwise.pricing.clouds.registry import PROFILES

CLOUDS = {name: p.skypilot for name, p in PROFILES.items() if p.skypilot}
"""Spotwise's provider names → SkyPilot's cloud names (where SkyPilot launches)."""


def skypilot_task(plan: Plan, *, run: str, top: int, name: str = "spotwise-job") -> dict[str, Any]:
    """The task: the ``top`` pools of ``plan`` in order, spot, the guard's settings, ``run``."""
    pools = plan.pools[:top]
    ordered = []
    for choice in pools:
        pool = choice.pool
        resource: dict[str, Any] = {
            "cloud": _skypilot_cloud(pool.provider),
            "region": pool.region,
            "instance_type": pool.instance_type,
        }
        if pool.zone:
            resource["zone"] = pool.zone
        ordered.append(resource)
    best = plan.best
    notices = ",".join(sorted({p.pool.provider for p in pools}))  # SPOTWISE_NOTICES names
    return {
        "name": name,
        "resources": {"use_spot": True, "ordered": ordered},
        "envs": {
            "SPOTWISE_MTBF_S": str(round(best.pool.mtbf_hours * 3600)),
            "SPOTWISE_NOTICES": notices,
        },
        "workdir": ".",
        "run": run,
    }


def write_task(task: dict[str, Any], plan: Plan, path: Path) -> None:
    """Write ``task`` as YAML to ``path`` (readable by its owner only), under a header that
    says where it came from."""
    best = plan.best
    header = (
        "# Written by `spotwise plan --skypilot`: pools in forecast-cost order, on spot.\n"
        f"# The plan checkpoints every {60 * best.checkpoint_interval_hours:.0f} min on "
        f"{best.pool.name}; the guard sets its own interval\n"
        "# from SPOTWISE_MTBF_S and the checkpoint time it measures.\n"
    )
    body = yaml.safe_dump(task, sort_keys=False)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as file:
        file.write(header + body)


def _skypilot_cloud(provider: str) -> str:
    """SkyPilot's name of ``provider``.

    Raises:
        PolicyError: for a cloud SkyPilot does not launch on.
    """
    if provider not in CLOUDS:
        raise PolicyError(
            f"SkyPilot does not launch on {provider}: plan with --provider "
            f"{'|'.join(CLOUDS)}, or run it with spotwise run --launcher {provider}"
        )
    return CLOUDS[provider]

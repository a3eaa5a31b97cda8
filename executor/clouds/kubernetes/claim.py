"""The PersistentVolumeClaim a job checkpoints to, sized from the job's state: one checkpoint's
bytes times the copies on the claim at once, plus a margin, in whole GiB.

The copies at once are the steps the guard keeps (``keep_latest_k``, 3 by default) and the one
being written: a new step is committed before the oldest is pruned. With ``full_every`` above 1
the steps between full ones are smaller, so a full checkpoint per copy is an upper bound. The
margin covers what a step carries beside its tensors (manifest, RNG and loader state) and the
growth of optimizer state a first save does not show.

``python -m spotwise.executor.clouds.kubernetes.claim NAME STATE_GB [--kept K] [--margin M]
[--storage-class CLASS] [--access-mode MODE]`` prints the claim's manifest as JSON (``kubectl
apply -f -`` reads it).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Sequence
from typing import Any

KEPT = 3
"""The committed steps the guard keeps by default (``guard(keep_latest_k=3)``)."""
IN_FLIGHT = 1
"""The step being written while the kept ones are still there."""
MARGIN = 0.25
"""The share added to the checkpoints' bytes."""
GIB = 1 << 30
MAX_STATE_BYTES = 100 * 10**12
"""The largest checkpoint sized here (100 TB): more is a unit slip (bytes given as GB), and no
single volume of a managed cluster holds it."""
ACCESS_MODES = ("ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
"""A claim's name: a DNS-1123 subdomain (253 characters at most)."""
LABELS = {"app.kubernetes.io/managed-by": "spotwise", "spotwise.dev/purpose": "checkpoints"}
"""Not ``spotwise.dev/job``: a claim outlives every job, and ``gc`` must never take it."""


def claim_bytes(state_bytes: int, *, kept: int = KEPT, margin: float = MARGIN) -> int:
    """The bytes a claim needs for checkpoints of ``state_bytes`` each, ``kept`` of them kept:
    ``state_bytes × (kept + 1) × (1 + margin)``, rounded up to whole GiB (1 GiB at least).

    Raises:
        ValueError: for a state of no bytes or over 100 TB, fewer than one kept, or a margin
            below 0 or not finite.
    """
    if isinstance(state_bytes, bool) or not isinstance(state_bytes, int) or state_bytes <= 0:
        raise ValueError(f"a checkpoint's size is a positive number of bytes, not {state_bytes!r}")
    if state_bytes > MAX_STATE_BYTES:
        raise ValueError(
            f"a checkpoint of {state_bytes / 1e9:,.0f} GB is no one claim's (100,000 GB at most); "
            "give the state's size in GB"
        )
    if isinstance(kept, bool) or not isinstance(kept, int) or kept < 1:
        raise ValueError(f"the checkpoints kept are 1 or more (keep_latest_k), not {kept!r}")
    if not math.isfinite(margin) or margin < 0:
        raise ValueError(f"the margin is a share of 0 or more (0.25 is 25%), not {margin!r}")
    needed = state_bytes * (kept + IN_FLIGHT) * (1 + margin)
    return max(1, math.ceil(needed / GIB)) * GIB


def quantity(n_bytes: int) -> str:
    """A whole number of GiB as a Kubernetes quantity (``"12Gi"``).

    Raises:
        ValueError: for bytes that are not a positive multiple of 1 GiB.
    """
    if n_bytes <= 0 or n_bytes % GIB:
        raise ValueError(f"{n_bytes} bytes is not a whole number of GiB")
    return f"{n_bytes // GIB}Gi"


def checkpoint_claim(
    name: str,
    state_bytes: int,
    *,
    kept: int = KEPT,
    margin: float = MARGIN,
    storage_class: str | None = None,
    access_mode: str = "ReadWriteMany",
) -> dict[str, Any]:
    """The PersistentVolumeClaim ``name`` for checkpoints of ``state_bytes``, sized by
    :func:`claim_bytes`, in ``storage_class`` (None: the cluster's default), labelled as
    Spotwise's (its size and what it was sized from in annotations).

    Raises:
        ValueError: for a name (of the claim or the class) Kubernetes refuses, a size
            :func:`claim_bytes` refuses, or an access mode Kubernetes has not.
    """
    for what, value in (("claim", name), ("storage class", storage_class)):
        if value is not None and (len(value) > 253 or not NAME.fullmatch(value)):
            raise ValueError(
                f"{value[:60]!r} is no {what} name (lower-case letters, digits, '-' and '.', "
                "starting and ending with a letter or digit)"
            )
    if access_mode not in ACCESS_MODES:
        raise ValueError(f"access mode {access_mode[:40]!r} is none of {', '.join(ACCESS_MODES)}")
    size = claim_bytes(state_bytes, kept=kept, margin=margin)
    spec: dict[str, Any] = {
        "accessModes": [access_mode],
        "resources": {"requests": {"storage": quantity(size)}},
    }
    if storage_class:
        spec["storageClassName"] = storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": name,
            "labels": dict(LABELS),
            "annotations": {
                "spotwise.dev/state-bytes": str(state_bytes),
                "spotwise.dev/kept": str(kept),
                "spotwise.dev/margin": f"{margin:g}",
            },
        },
        "spec": spec,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Print the manifest of a sized claim; a bad argument: one line, exit 2."""
    parser = argparse.ArgumentParser(
        prog="python -m spotwise.executor.clouds.kubernetes.claim",
        description="The PersistentVolumeClaim of a job's checkpoints, sized from its state.",
    )
    parser.add_argument("name", help="the claim's name (run's --bucket)")
    parser.add_argument("state_gb", type=float, help="one checkpoint's size in GB (1e9 bytes)")
    parser.add_argument("--kept", type=int, default=KEPT, help="checkpoints kept (default 3)")
    parser.add_argument("--margin", type=float, default=MARGIN, help="share added (0.25)")
    parser.add_argument("--storage-class", default=None, help="default: the cluster's")
    parser.add_argument("--access-mode", default="ReadWriteMany", choices=ACCESS_MODES)
    args = parser.parse_args(argv)
    if not math.isfinite(args.state_gb) or args.state_gb <= 0:
        parser.error(f"STATE_GB is a positive number of GB, not {args.state_gb!r}")
    try:
        manifest = checkpoint_claim(
            args.name,
            math.ceil(args.state_gb * 1e9),
            kept=args.kept,
            margin=args.margin,
            storage_class=args.storage_class,
            access_mode=args.access_mode,
        )
    except ValueError as error:
        parser.error(str(error))
    json.dump(manifest, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A fourth cloud's ``spotwise collect toy``, declared as a new cloud's folder declares its own
(``pricing/clouds/NAME/collector.py``): its flags as data and a run that stores what it
"collected" (an hourly spot or on-demand price per kind, made up here, not fetched) through the
same validation and upsert as the real clouds' collectors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from spotwise.pricing.clouds import collecting
from spotwise.pricing.clouds.profile import (
    Collected,
    CollectOption,
    Collector,
    CollectValues,
    Line,
)
from spotwise.pricing.errors import FlagError

TOY = "toy"
PRICE = 0.25
"""The toy's spot price, USD an hour (on demand: four times it)."""

OPTIONS = (
    CollectOption(flag="--zone", type=str, required=True, help="Toy zone, e.g. toy-1-a."),
    CollectOption(
        flag="--kinds",
        type=str,
        default="toy.gpu1",
        help="Comma-separated toy kinds.",
    ),
    CollectOption(flag="--gpu", type=str, help="Only kinds with this GPU (none has one)."),
    CollectOption(flag="--hours", type=int, default=2, min=1, help="Hours of prices to store."),
    CollectOption(
        flag="--spot/--no-spot",
        type=bool,
        default=True,
        help="Spot prices; --no-spot: on-demand prices.",
    ),
)


def collect(
    store: Callable[[], Path], values: CollectValues, progress: Callable[[str], None]
) -> Collected:
    """``--hours`` hourly prices of each kind in ``--zone``, ending at the last full hour."""
    import pandas as pd

    from spotwise.pricing.frames import validate
    from spotwise.pricing.operational import upsert_frames

    zone = values.text("zone")
    kinds = collecting.names(values.text("kinds"), "--kinds")
    if values.optional_text("gpu") is not None:
        raise FlagError(f"--gpu {values.optional_text('gpu')!r}: no toy kind carries it")
    hours = values.number("hours")
    spot = values.switch("spot")
    path = store()
    now = pd.Timestamp.now(tz="UTC").floor("h")
    rows = []
    for kind in kinds:
        progress(f"toy: {kind}")
        for hour in range(hours):
            rows.append(
                {
                    "source": "toy-api",
                    "provider": TOY,
                    "region": zone.rsplit("-", 1)[0],
                    "zone": zone,
                    "instance_type": kind,
                    "market": "spot" if spot else "on_demand",
                    "ts": now - pd.Timedelta(hours=hour),
                    "price": PRICE if spot else 4 * PRICE,
                }
            )
    prices = validate("prices", pd.DataFrame(rows), origin="toy-api")
    added = upsert_frames(path, {"prices": prices})
    return Collected(
        (
            Line(f"read {len(kinds)} kinds"),
            Line(f": {len(prices)} prices ({added.get('prices', 0)} new)", lead="collected toy"),
        )
    )


COLLECTOR = Collector(
    help="Collect the toy cloud's made-up prices.",
    options=OPTIONS,
    run=collect,
    region_flag="--zone",
    shape_flag="--kinds",
    per_region=False,
    needs_region=None,
)
"""How ``spotwise collect toy`` is written and what it runs."""

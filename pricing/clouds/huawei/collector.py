"""``spotwise collect huawei``'s run (its flags are its profile's, in ``__init__.py``): on-demand
list prices from BSS (:mod:`.list_prices`), spot sell status per zone and flavor from ECS
(:mod:`.sell_policies`), and the spot prices given (:mod:`.given_prices`). Imported only when
the command runs (:class:`~spotwise.pricing.clouds.profile.CollectorModule`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from spotwise.pricing.clouds import collecting
from spotwise.pricing.clouds.collecting import plural
from spotwise.pricing.clouds.huawei import COLLECTOR, PROFILE, clients
from spotwise.pricing.clouds.huawei.given_prices import given_spot_prices
from spotwise.pricing.clouds.huawei.list_prices import list_prices
from spotwise.pricing.clouds.huawei.sell_policies import spot_sell_status
from spotwise.pricing.clouds.profile import Collected, CollectValues, Line
from spotwise.pricing.errors import FlagError, PricingError


def collect(
    store: Callable[[], Path], values: CollectValues, progress: Callable[[str], None]
) -> Collected:
    """The flavors' list prices (where BSS answers: a refusal is a line of the result) and spot
    sell status in the regions asked, and the given spot prices.

    Raises:
        PricingError: a flag's value, the store, the SDK or credentials missing, ECS refusing:
            one line.
        SettingsError: an endpoint variable is not a URL it may use.
    """
    from spotwise.pricing.frames import utc_now, validate
    from spotwise.pricing.operational import upsert_frames

    chosen = collecting.cloud_shapes(
        "huawei", values.text("flavors"), values.optional_text("gpu"), COLLECTOR.shape_flag
    )
    flavors = [shape.shape for shape in chosen]
    regions = [
        clients.region_name(r) for r in collecting.names(values.text("regions"), "--regions")
    ]
    if not regions:
        raise FlagError("--regions: name at least one Huawei Cloud region, e.g. ap-southeast-1")
    now = utc_now()
    given = given_spot_prices(values.text("spot_prices"), PROFILE.region_of, now)
    outside = sorted(set(given.get("region", ())) - set(regions))
    if outside:
        raise FlagError(f"--spot-prices: {outside[0]} is not one of --regions")
    path = store()
    frames: dict[str, list[pd.DataFrame]] = {"prices": [given], "availability": []}
    skipped: list[str] = []
    for region in regions:
        progress(f"huawei {region}: spot sell status")
        ecs, project = clients.ecs_client(region)
        frames["availability"].append(spot_sell_status(ecs, flavors, now))
        if values.switch("list_prices"):
            progress(f"huawei {region}: list prices")
            try:
                bss = clients.bss_client()
                frames["prices"].append(list_prices(bss, project, region, flavors, now))
            except PricingError as refused:  # where BSS is not reachable: the rest is kept
                skipped.append(f"list prices of {region}: skipped, {refused}")
    origin = "collect huawei"
    ready = {
        name: validate(name, pd.concat(parts, ignore_index=True), origin=origin)
        for name, parts in frames.items()
        if any(len(p) for p in parts)
    }
    added = upsert_frames(path, ready) if ready else {}
    availability = ready.get("availability")
    selling = 0 if availability is None else int(availability["available_nodes"].sum())
    pools = 0 if availability is None else len(availability)
    read = f"{plural(len(regions), 'region')} (BSS, ECS flavor-sell-policies)"
    lines = [
        *(Line(message) for message in skipped),
        collecting.collected("huawei", ready.get("prices"), added.get("prices", 0), read),
        Line(
            f"spot sells in {selling} of {plural(pools, 'pool')} (zone and flavor; "
            f"{added.get('availability', 0)} new rows)"
        ),
    ]
    if not len(given):
        lines.append(
            Line(
                "no spot price stored: Huawei Cloud publishes none; give those you read with "
                "--spot-prices FLAVOR@ZONE=USD (the plan ranks Huawei pools with one)"
            )
        )
    return Collected(tuple(lines))

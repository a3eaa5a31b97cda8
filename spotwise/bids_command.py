"""``spotwise bench bids``: a policy with a bid against the same policy without one, on a real
price history (:mod:`spotwise.policy.lab.bids`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from spotwise.console import fail
from spotwise.core import settings
from spotwise.policy.errors import PolicyError
from spotwise.pricing.errors import PricingError
from spotwise.pricing.quotes import REFERENCE_INSTANCE_TYPE, REFERENCE_ON_DEMAND_USD


def bench_bids(
    prices: Annotated[
        Path | None,
        typer.Option(
            "--prices",
            help="A describe-spot-price-history CSV (default: the bundled one).",
            show_default=False,
        ),
    ] = None,
    instance_type: Annotated[
        str, typer.Option("--instance-type", help="The instance type whose zones are pools.")
    ] = REFERENCE_INSTANCE_TYPE,
    region: Annotated[
        str, typer.Option("--region", help="The region whose zones are pools (all: every zone).")
    ] = "us-east-1",
    on_demand_price: Annotated[
        float, typer.Option("--on-demand-price", min=0.001, help="On-demand USD/h.")
    ] = REFERENCE_ON_DEMAND_USD,
    bids: Annotated[
        list[float] | None,
        typer.Option(
            "--bid",
            help="A bid in USD/h to compare (repeat for more; default: the on-demand price and "
            "the median spot price × 1.05).",
            show_default=False,
        ),
    ] = None,
    policy: Annotated[str, typer.Option("--policy", help="The policy that bids.")] = "greedy",
    compute_hours: Annotated[
        float, typer.Option("--compute-hours", min=0.01, help="Hours of work of each job.")
    ] = 24.0,
    deadline_hours: Annotated[
        float,
        typer.Option("--deadline-hours", min=0.01, help="Hours from start to each job's deadline."),
    ] = 36.0,
) -> None:
    """Cost, evictions and deadline misses of a policy with each bid and without one, on the
    same jobs over a price history (JSON)."""
    from spotwise.policy.lab.bids import bench_bids as run

    try:
        result = run(
            prices or settings.bundled_prices(),
            instance_type=instance_type,
            region=None if region == "all" else region,
            on_demand_price=on_demand_price,
            bids=bids or (),
            policy=policy,
            compute_hours=compute_hours,
            deadline_hours=deadline_hours,
        )
    except (PolicyError, PricingError) as exc:
        fail(str(exc))
    typer.echo(json.dumps(result.to_dict(), indent=2))

"""``spotwise plan``: the pools of a job ranked by total cost, each price with its source and
``as_of``, and the command that runs the best one."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from spotwise.cloud_options import GIVEN, cloud_options
from spotwise.console import (
    DeadlineHours,
    StoreOption,
    err,
    fail,
    finite,
    open_store,
    out,
    positive,
    say,
)
from spotwise.core.threads import one_thread_each
from spotwise.executor.clouds.base import CloudOptions
from spotwise.policy.errors import PolicyError
from spotwise.pricing.clouds.registry import PROFILES
from spotwise.pricing.errors import PricingError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from spotwise.policy.market import Band, PoolTerms, Risk, StorePools
    from spotwise.policy.plan import Plan, PlanInputs, PoolPlan


@cloud_options(account=True)
def plan(
    gpu_hours: Annotated[
        float,
        typer.Option(
            "--gpu-hours",
            callback=positive,
            help="Work to do: hours on one instance (--instance-type), or GPU-hours spread "
            "over --gpus (--gpu).",
        ),
    ],
    deadline_hours: DeadlineHours,
    gpu: Annotated[
        str | None,
        typer.Option(
            "--gpu",
            help="A GPU model (V100, A100, H100, L4, ...): rank the equivalent shapes of every "
            "cloud (data/gpu_shapes.csv) instead of one --instance-type.",
            show_default=False,
        ),
    ] = None,
    gpus: Annotated[int, typer.Option("--gpus", min=1, help="GPUs the job uses (--gpu).")] = 1,
    checkpoint_gb: Annotated[
        float,
        typer.Option("--checkpoint-gb", min=0.0, callback=finite, help="Size of one checkpoint."),
    ] = 10.0,
    provider: Annotated[
        str, typer.Option("--provider", help=f"{', '.join(PROFILES)} or all.")
    ] = "all",
    on_demand_price: Annotated[
        float | None,
        typer.Option(
            "--on-demand-price",
            callback=positive,
            help="On-demand $/h (default: from the store or estimated).",
            show_default=False,
        ),
    ] = None,
    restart_hours: Annotated[
        float,
        typer.Option(
            "--restart-hours", min=0.0, callback=finite, help="Time to restart after a preemption."
        ),
    ] = 0.2,
    top: Annotated[
        int, typer.Option("--top", min=1, help="Pools to show (and each other cloud's best).")
    ] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    skypilot: Annotated[
        Path | None,
        typer.Option(
            "--skypilot",
            help="Also write a SkyPilot task here: the --top pools in order, on spot.",
            show_default=False,
        ),
    ] = None,
    run: Annotated[
        str | None,
        typer.Option(
            "--run",
            help="The training command (of the next step, and of the SkyPilot task).",
            show_default=False,
        ),
    ] = None,
    store: StoreOption = None,
    cloud: CloudOptions = GIVEN,
) -> None:
    """Recommend pools, market mix and checkpoint interval, with the cost against on-demand,
    where every number came from, and the command that runs the plan; with --gpu, across
    AWS, GCP and Azure. The cloud options (--image, --bucket, --identity, --project ...) go
    into that command, so that it runs as printed."""
    from spotwise.policy.plan import PlanInputs, next_step, plan_job

    what = _plan_subject(gpu, gpus, cloud.instance_type, provider)
    _check_ranges(gpu_hours / what.gpus if what.gpu else gpu_hours, deadline_hours, checkpoint_gb)
    if skypilot is not None and not run:
        fail("--skypilot needs --run 'python train.py ...' (the task's command)")
    say(f"… reading the prices and traces of {what.label} from the store")
    try:
        with one_thread_each():
            found = _plan_pools(store, what, cloud.region, on_demand_price)
            inputs = PlanInputs(
                gpu_hours=gpu_hours / what.gpus if what.gpu else gpu_hours,
                deadline_hours=deadline_hours,
                checkpoint_gb=checkpoint_gb,
                restart_hours=restart_hours,
            )
            say(f"… pricing {len(found.pools)} pools: the cost to finish in each, and the mix")
            result = plan_job(inputs, found.pools, left_out=found.left_out, unpriced=found.unpriced)
    except PolicyError as exc:
        fail(f"{what.label}: {exc}")
    shown = result.shown(top)
    command = next_step(result, inputs, run, shown=top, account=_account(cloud))
    if skypilot is not None:
        _write_skypilot(result, str(run), top, skypilot)
    if as_json:
        print(json.dumps(_plan_json(result, shown, what, command), indent=2))
        return
    title = _plan_title(what, gpu_hours, inputs, deadline_hours)
    _print_plan_table(result, shown, title, what.gpus if what.gpu else None)
    _print_plan_summary(result, command, _oversized(result, what))


def _check_ranges(machine_hours: float, deadline_hours: float, checkpoint_gb: float) -> None:
    """Refuse a job's hours or checkpoint past what a plan takes, naming the flag (before the
    store is read: a typo such as 1e308 is said, not overflowed)."""
    from spotwise.policy.job import MAX_JOB_HOURS
    from spotwise.policy.plan import MAX_CHECKPOINT_GB

    for flag, value, most, unit in (
        ("--gpu-hours", machine_hours, MAX_JOB_HOURS, "hours on one machine"),
        ("--deadline-hours", deadline_hours, MAX_JOB_HOURS, "hours"),
        ("--checkpoint-gb", checkpoint_gb, MAX_CHECKPOINT_GB, "GB"),
    ):
        if value > most:
            fail(f"{flag} {value:g}: a plan takes at most {most:,} {unit}; give the job's own")


def _oversized(result: Plan, what: _Subject) -> list[str]:
    """One line per cloud whose shapes carry more GPUs than asked: its rows price them all."""
    bigger: dict[str, set[str]] = {}
    for p in result.pools:
        shape = p.pool.shape
        if what.gpu and shape is not None and shape.gpu_count != what.gpus:
            bigger.setdefault(p.pool.provider, set()).add(f"{shape.shape}, {shape.gpu_count} GPUs")
    return [
        f"{cloud} sells {what.label} only as {'; '.join(sorted(shapes))}: its rows price the "
        "whole machine"
        for cloud, shapes in bigger.items()
    ]


@dataclass(frozen=True, slots=True)
class _Subject:
    """What a plan is of: one instance type, or ``gpus`` × ``gpu`` on every cloud."""

    instance_type: str | None
    gpu: str | None
    gpus: int
    provider: str

    @property
    def label(self) -> str:
        """The subject as the plan's title names it."""
        return f"{self.gpus} × {self.gpu}" if self.gpu else str(self.instance_type)


def _plan_subject(gpu: str | None, gpus: int, instance_type: str | None, provider: str) -> _Subject:
    """The plan's subject from its flags, refusing a mix of them in one line."""
    if provider not in ("all", *PROFILES):
        fail(f"--provider must be {', '.join(PROFILES)} or all, got {provider!r}")
    if (gpu is None) == (instance_type is None):
        fail(
            "give --gpu MODEL (with --gpus N: every cloud's equivalent shapes) or "
            "--instance-type TYPE (one shape), not both and not neither"
        )
    if gpu is None and gpus != 1:
        fail("--gpus goes with --gpu; an --instance-type has the GPUs it has")
    if gpu is not None:
        from spotwise.pricing import gpus as table

        try:
            models = table.gpu_models()
        except PricingError as exc:
            fail(str(exc))
        known = {m.lower(): m for m in models}
        if gpu.lower() not in known:
            fail(f"--gpu {gpu[:40]!r}: not in the GPU table; GPUs: {', '.join(models)}")
        gpu = known[gpu.lower()]
    return _Subject(instance_type, gpu, gpus, provider)


def _notice_windows() -> dict[str, float]:
    """Each priced cloud's preemption notice in seconds, as its launcher defines it (a cloud
    with no prices of its own, Kubernetes on another cloud's nodes, is not ranked)."""
    from spotwise.executor.clouds.registry import CLOUDS

    return {name: c.notice_s for name, c in CLOUDS.items() if name in PROFILES}


def _plan_pools(
    store: Path | None, what: _Subject, region: str | None, on_demand_price: float | None
) -> StorePools:
    """The subject's pools in the store (``region``: only there), or a PolicyError naming
    what the store has and the command that collects the rest."""
    from spotwise.policy.market import (
        StorePools,
        pools_for_gpu,
        pools_from_store,
        require_gpu_pools,
        require_pools,
    )

    notices = _notice_windows()
    with open_store(store, read_only=True) as market:
        if what.gpu:
            found = pools_for_gpu(
                market, what.gpu, what.gpus, what.provider, on_demand_price, notices=notices
            )
        else:
            found = pools_from_store(
                market, str(what.instance_type), what.provider, on_demand_price, notices=notices
            )
    if region:
        found = StorePools(
            pools=[p for p in found.pools if p.region == region],
            left_out={k: v for k, v in found.left_out.items() if f":{region}" in k},
            spot_types=found.spot_types,
            unpriced=found.unpriced,
        )
    if what.gpu:
        require_gpu_pools(found, what.gpu, what.gpus)
    else:
        require_pools(found, str(what.instance_type))
    return found


def _account(cloud: CloudOptions) -> dict[str, Any]:
    """The shared cloud options the next step carries, by name."""
    return {
        "image": cloud.image,
        "bucket": cloud.bucket,
        "identity": cloud.identity,
        "project": cloud.project,
        "network": cloud.network,
        "endpoint_url": cloud.endpoint_url,
    }


def _write_skypilot(result: Plan, run: str, top: int, path: Path) -> None:
    from spotwise.policy.service.skypilot import skypilot_task, write_task

    try:
        write_task(skypilot_task(result, run=run, top=top), result, path)
    except OSError as exc:
        fail(f"--skypilot {path}: {exc.strerror or exc}")
    err.print(f"wrote the SkyPilot task {path} ({len(result.pools[:top])} pools, spot)")


def _plan_title(what: _Subject, gpu_hours: float, inputs: PlanInputs, deadline: float) -> str:
    if what.gpu:
        return (
            f"{gpu_hours:g} GPU-hours on {what.gpus} × {what.gpu} ({inputs.gpu_hours:g} h a "
            f"machine) in {deadline:g} h, every cloud"
        )
    return f"{gpu_hours:g} GPU-hours of {what.instance_type} in {deadline:g} h"


def _print_plan_summary(result: Plan, command: str, notes: Sequence[str] = ()) -> None:
    """The best pool's cost parts, the assumptions, what was left out, and the next step."""
    from spotwise.policy.plan import missing_settings

    best = result.best
    cost = best.cost
    out.print(
        f"best: {best.pool.name}: compute ${cost.compute:,.2f} + storage and egress "
        f"${cost.storage:,.2f} + recovery ${cost.recovery:,.2f} = ${cost.total:,.2f} "
        f"against ${cost.on_demand:,.2f} on demand ({cost.saved_pct:.1f}% saved); "
        f"P(spot alone misses the deadline) {best.p_late_on_spot:.0%}, covered by the "
        "supervisor's on-demand fallback"
    )
    out.print("assumptions:")
    for line in (*result.assumptions, *notes):
        out.print(f"  - {line}")
    for name, why in list(result.left_out.items())[:5]:
        out.print(f"  - left out {name}: {why}")
    if len(result.left_out) > 5:
        out.print(f"  - … and {len(result.left_out) - 5} more pools left out")
    for cloud_name, collect in result.unpriced.items():
        out.print(f"  - {cloud_name}: no stored price of these shapes; collect one: {collect}")
    out.print(f"next: {command}", soft_wrap=True)
    missing = missing_settings(command)
    if missing:
        out.print(
            f"  (give plan {', '.join(missing)} to fill in the capitals, so that it runs as "
            f"printed: `spotwise setup {best.pool.provider}` makes the bucket and the "
            "instances' identity)",
            soft_wrap=True,
        )


OD_KINDS = {"store": "list", "estimate": "est.", "given": "given", "reference": "ref."}
"""How the table names an on-demand price's source (the legend spells them out)."""


def _print_plan_table(
    result: Plan, shown: Sequence[PoolPlan], title: str, asked: int | None
) -> None:
    """The ranked pools, one row each (a shape with more GPUs than ``asked`` says so)."""
    table = Table(
        "cloud",
        "pool",
        "shape",
        "spot $/h",
        "source",
        "as of",
        "OD $/h",
        "MTBF h",
        "notice",
        "P(late)",
        "spot",
        "ckpt min",
        "total $",
        "saved",
        "",
        title=title,
        caption=(
            "OD: list = price list in the store, est. = from a Spot Advisor saving, ref. = the "
            "reference price (not a quote), given = --on-demand-price. MTBF: the pool's traces, "
            "(band N) its eviction band, or (range) the prior of other pools' traces or bands. "
            "notice: the cloud's preemption notice "
            "(! = one checkpoint takes longer to write). P(late): spot alone misses the "
            f"deadline. stale: an input older than a week on {result.made_at:%Y-%m-%d}. "
            "out of line: on demand under half the shape's median on its cloud (ranked last). "
            "whole machine: the row prices every GPU of a shape with more than asked."
        ),
    )
    for p in shown:
        table.add_row(*_plan_row(result, p, asked))
    # a pipe gets the whole table (a terminal: as wide as it is)
    (out if out.is_terminal else Console(width=200, markup=False)).print(table)


def _plan_row(result: Plan, p: PoolPlan, asked: int | None) -> list[str]:
    """One pool's cells of the plan table."""
    pool = p.pool
    notice = "" if pool.notice_s is None else f"{pool.notice_s:.0f} s"
    return [
        pool.provider,
        pool.zone or pool.region,
        _shape_cell(pool, asked),
        f"{pool.spot_price:.3f}",
        pool.spot.source.removeprefix("store: ").split(",")[0],
        (pool.spot.as_of or "")[:10],
        f"{pool.on_demand_price:.3f} {OD_KINDS[pool.on_demand.kind]}",
        _mtbf_cell(pool.risk, pool.band),
        notice + (" !" if p.save_fits_notice is False else ""),
        f"{p.p_late_on_spot:.0%}",
        f"{p.spot_share:.0%}",
        f"{60 * p.checkpoint_interval_hours:.0f}",
        f"{p.cost.total:,.2f}",
        f"{p.cost.saved_pct:.1f}%",
        ", ".join(
            flag
            for flag, raised in (
                ("stale", bool(result.stale(p))),
                ("out of line", pool.name in result.out_of_line),
                (_whole_machine(pool, asked), bool(_whole_machine(pool, asked))),
            )
            if raised
        ),
    ]


def _mtbf_cell(risk: Risk, band: Band | None) -> str:
    """A pool's MTBF in hours, with its eviction band, the prior's range or ``(default)``
    where it is no measurement of the pool's own."""
    mtbf = f"{risk.mtbf_hours:.1f}"
    if risk.kind == "band" and band is not None:
        mtbf += f" (band {band.band})"
    elif risk.low_hours is not None and risk.high_hours is not None:
        mtbf += f" ({risk.low_hours:.1f}–{risk.high_hours:.1f})"
    elif risk.kind == "default":
        mtbf += " (default)"
    return mtbf


def _whole_machine(pool: PoolTerms, asked: int | None) -> str:
    """The flag of a row that prices a whole machine of more GPUs than a plan by GPU asked."""
    shape = pool.shape
    if asked is None or shape is None or shape.gpu_count <= asked:
        return ""
    return "whole machine"


def _shape_cell(pool: PoolTerms, asked: int | None) -> str:
    """A pool's instance type, with its GPU count where it is not the ``asked`` one."""
    shape = pool.instance_type
    if pool.shape is not None and pool.shape.gpu_count != asked:
        shape += f" ({pool.shape.gpu_count} GPUs)"
    return shape


def _pool_json(result: Plan, p: PoolPlan, what_gpus: int | None) -> dict[str, Any]:
    """One ranked pool as JSON: every number with its source and when it held (``what_gpus``:
    the GPUs a plan by GPU asked for)."""
    pool, risk = p.pool, p.pool.risk
    return {
        "pool": pool.name,
        "cloud": pool.provider,
        "region": pool.region,
        "zone": pool.zone,
        "instance_type": pool.instance_type,
        "shape": None
        if pool.shape is None
        else {
            "gpu": pool.shape.gpu,
            "gpu_count": pool.shape.gpu_count,
            "gpu_memory_gb": pool.shape.gpu_memory_gb,
            "source": pool.shape.source,
        },
        "spot_price": pool.spot_price,
        "spot_price_source": pool.spot.source,
        "spot_price_as_of": pool.spot.as_of,
        "on_demand_price": round(pool.on_demand_price, 4),
        "on_demand_source": pool.on_demand.source,
        "on_demand_as_of": pool.on_demand.as_of,
        "mtbf_hours": round(pool.mtbf_hours, 2),
        "mtbf_source": risk.source,
        "mtbf_kind": risk.kind,
        "mtbf_range_hours": None
        if risk.low_hours is None
        else [round(risk.low_hours, 2), round(risk.high_hours or 0, 2)],
        "mtbf_as_of": None if risk.as_of is None else risk.as_of.isoformat(),
        "spot_advisor_band": None
        if pool.band is None
        else {
            "band": pool.band.band,
            "observed": pool.band.observed.isoformat(),
            "cloud": pool.band.provider,
        },
        "prices_whole_machine": bool(_whole_machine(pool, what_gpus)),
        "notice_s": pool.notice_s,
        "checkpoint_fits_notice": p.save_fits_notice,
        "storage_prices": None
        if pool.storage_list is None
        else {
            "usd_per_gb_month": pool.storage_list.usd_per_gb_month,
            "usd_per_1k_writes": pool.storage_list.usd_per_1k_writes,
            "egress_usd_per_gb": pool.storage_list.egress_usd_per_gb,
            "source": pool.storage_list.source,
            "as_of": pool.storage_list.as_of,
        },
        "stale_inputs": result.stale(p),
        "out_of_line": result.out_of_line.get(pool.name),
        "p_late_on_spot_alone": round(p.p_late_on_spot, 4),
        "market_mix": {"spot": round(p.spot_share, 3), "on_demand": round(1 - p.spot_share, 3)},
        "checkpoint_interval_minutes": round(60 * p.checkpoint_interval_hours, 1),
        "expected_hours": round(p.expected_hours, 1),
        "cost": {**p.cost.as_dict(), "egress": round(p.egress, 2)},
    }


def _plan_json(
    result: Plan, shown: Sequence[PoolPlan], what: _Subject, command: str
) -> dict[str, Any]:
    return {
        "instance_type": what.instance_type,
        "gpu": what.gpu,
        "gpus": what.gpus if what.gpu else None,
        "made_at": result.made_at.isoformat(),
        "clouds": list(result.clouds()),
        "recommended": [_pool_json(result, p, what.gpus if what.gpu else None) for p in shown],
        "left_out": result.left_out,
        "no_stored_price": result.unpriced,
        "assumptions": list(result.assumptions),
        "next_step": command,
    }

"""A supervised job's report as ``spotwise run``, ``jobs show`` and ``demo`` print it: its cost
against on-demand, each price with its source and time, and its course."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from spotwise.console import out, plural, styled

if TYPE_CHECKING:
    from spotwise.executor.ledger.ledger import JobReport
    from spotwise.executor.supervise.supervised import SupervisedJob


def print_report(result: JobReport | SupervisedJob, as_json: bool) -> None:
    """A job's report from the ledger (with a supervised run's own account, if one): its JSON
    object, or its cost, prices and course."""
    from spotwise.executor.ledger.ledger import JobReport

    if as_json:
        print(json.dumps(result.to_dict(), default=str))
        return
    report = result if isinstance(result, JobReport) else result.report
    out.print(
        f"job {report.job_id} ({report.status.value}"
        f"{_simulated(report)}): "
        f"${report.cost_usd:,.2f} against "
        f"${report.on_demand_cost_usd:,.2f} on demand ({report.savings_pct:.1f}% saved)"
    )
    if report.prices:
        out.print(
            f"  on demand = {report.hours_needed:.2f} h needed (instance hours less work "
            f"redone) × the on-demand price of {report.prices.instance_type} in the "
            "region each ran in"
        )
        for line in report.prices.used_by(report.pools_used).quote_lines():
            out.print(f"  {line}")
    b = report.breakdown
    sized = report.checkpoints_sized
    storage = f"${b.storage:,.4f}" if sized else "not counted"
    out.print(f"  compute ${b.compute:,.2f} + storage {storage} + recovery ${b.recovery:,.2f}")
    for market, m in report.markets.items():
        out.print(f"  {market}: {m.hours:.2f} h, ${m.cost_usd:,.2f}")
    out.print(
        f"  {plural(report.instances, 'instance')}, "
        f"{plural(report.preemptions, 'preemption')} "
        f"({plural(report.notices, 'notice')}{_drills(report)}), "
        f"{plural(report.migrations, 'migration')}, "
        f"{report.lost_work_hours:.2f} h of work lost, "
        + (
            f"{report.checkpoint_bytes / 1e6:.1f} MB of checkpoints"
            if sized
            else "checkpoints not sized (spotwise run --ckpt FOLDER|URL sizes them when the "
            "job ends: a folder here, or one in the bucket of the job's cloud)"
        )
    )
    for why in report.moves:
        out.print(f"  moved: {why}")
    for damaged in report.damaged_checkpoints:
        out.print(
            styled(
                f"  damaged checkpoint skipped on resume: {damaged}",
                "yellow",
                " (something corrupted it: check that storage)",
            )
        )
    if report.bids:
        out.print(f"  bids (the price above which a move pays): {_bids(report.bids)}")
    if report.pending_writes:
        out.print(
            styled(
                f"  {report.pending_writes} ledger writes pending",
                "yellow",
                ": counted here, and in the store once its supervisor (or the next "
                "`spotwise jobs` command) finds it free",
            )
        )


def _drills(report: JobReport) -> str:
    """``, N drills`` for a job some drills preempted, else ''."""
    return f", {plural(report.drills, 'drill')}" if report.drills else ""


def _simulated(report: JobReport) -> str:
    if not report.simulated:
        return ""
    return f", simulated on a {report.simulation or 'replayed market'}"


def _bids(bids: tuple[tuple[str, float], ...]) -> str:
    """Each pool's bids in launch order, a bid made at several launches said once with their
    count: ``pool-a $3.900/h (2 launches), pool-b $1.200/h``."""
    launches: dict[str, dict[float, int]] = {}
    for pool, bid in bids:
        per_bid = launches.setdefault(pool, {})
        per_bid[bid] = per_bid.get(bid, 0) + 1
    return ", ".join(
        f"{pool} "
        + " / ".join(
            f"${bid:,.3f}/h" + (f" ({n} launches)" if n > 1 else "") for bid, n in per_bid.items()
        )
        for pool, per_bid in launches.items()
    )

"""One supervised job from a run request: what ``spotwise run`` does once its flags are parsed.

It mints the job's id (the ledger's, and the cloud's tags, storage prefix and secrets'), builds
the launcher, prices the job from the store (each price with its source), checks that its
deadline can be met, and supervises it to its end in the ledger.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from spotwise.core.progress import Progress, silent
from spotwise.executor.errors import ExecutorError
from spotwise.executor.launchers.registry import LAUNCHERS, LaunchSettings
from spotwise.executor.ledger.ledger import new_job_id
from spotwise.executor.ledger.prices import price_book
from spotwise.executor.supervise.elastic import NodePlan
from spotwise.executor.supervise.supervised import SupervisedJob, client_factory, supervise
from spotwise.executor.supervise.supervisor import SupervisorConfig
from spotwise.policy.service.schemas import JobTerms
from spotwise.pricing.quotes import (
    REFERENCE_INSTANCE_TYPE,
    REFERENCE_ON_DEMAND_USD,
    REFERENCE_SPOT_USD,
)
from spotwise.pricing.store import MarketStore


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRequest:
    """A job to run, as ``spotwise run``'s flags give it."""

    command: tuple[str, ...]
    name: str
    launcher: str
    launch: LaunchSettings
    """The launcher's settings (its ``job_id`` is minted here)."""
    config: SupervisorConfig
    """The supervisor's settings. Its job's work and deadline are the request's; the job's
    prices and the price book are the store's (:func:`~executor.ledger.prices.price_book`),
    or ``spot_price`` and ``on_demand_price`` where given."""
    spot_price: float | None = None
    on_demand_price: float | None = None
    nodes: NodePlan | None = None
    policy_url: str = "inproc"
    api_token: str | None = None


def run_job(
    request: RunRequest,
    store: Callable[[], Path],
    *,
    progress: Progress = silent,
    warn: Progress = silent,
) -> SupervisedJob:
    """Run ``request`` to its end (completed, failed or cancelled) in the ledger of the store
    that ``store`` makes ready and names, once the launcher is built (a launcher refused, for
    want of credentials or settings, leaves no store behind); ``warn`` gets what a real-money
    run should know first (stale quotes).

    Raises:
        ExecutorError: for a launcher that does not exist, a deadline no schedule meets, or
            what the supervisor gives up on.
        Cancelled: when a signal cancelled it (recorded in the ledger).
    """
    kind = LAUNCHERS.get(request.launcher)
    if kind is None:
        raise ExecutorError(
            f"--launcher must be one of {', '.join(LAUNCHERS)}, got {request.launcher[:40]!r}"
        )
    job_id = new_job_id()  # the ledger's, the instances' tags', the storage prefix's
    launch = replace(request.launch, job_id=job_id)
    launcher = kind.build(launch)
    command = list(request.command)
    if request.nodes is None:  # with nodes, every node's command is wrapped as it is launched
        command = kind.wrap(command, launch)
    target = launch.cloud
    store_path = store()
    with MarketStore.open(store_path, read_only=True) as market:
        prices = price_book(
            market,
            launcher.pools,
            instance_type=target.instance_type if target else REFERENCE_INSTANCE_TYPE,
            home_region=target.home_region if target else None,
            spot_price=request.spot_price,
            on_demand_price=request.on_demand_price,
        )
    if not launcher.simulated:  # real money: what it is quoted on, as plan flags it
        for line in prices.stale_lines():
            warn(f"warning: {line}")
    job = request.config.job.model_copy(
        update={
            "spot_price": prices.typical_spot(),
            "on_demand_price": prices.on_demand_quote().usd_per_hour,
        }
    )
    if not job.feasible:
        raise ExecutorError(
            f"--deadline-hours {job.deadline_hours} is shorter than --compute-hours "
            f"{job.compute_hours} plus one changeover ({job.changeover_hours} h): no "
            "schedule fits"
        )
    return supervise(
        command,
        store_path=store_path,
        launcher=launcher,
        config=replace(request.config, job=job, prices=prices),
        client_for=client_factory(request.policy_url, request.api_token),
        name=request.name,
        progress=progress,
        job_id=job_id,
        nodes=request.nodes,
    )


def job_name(command: Sequence[str]) -> str:
    """The script a command runs: ``python train.py`` → ``train.py``, ``python -m pkg.mod`` →
    ``pkg.mod``, ``torchrun ... train.py`` → ``train.py``; else the program."""
    for i, arg in enumerate(command):
        if arg == "-m" and i + 1 < len(command):
            return command[i + 1]
        if arg.endswith(".py") or arg.endswith(".sh"):
            return Path(arg).name
    return Path(command[0]).name if command else "job"


def job_terms(compute_hours: float, deadline_hours: float) -> JobTerms:
    """A job's work and deadline, at the reference prices until :func:`run_job` prices it."""
    return JobTerms(
        compute_hours=compute_hours,
        deadline_hours=deadline_hours,
        spot_price=REFERENCE_SPOT_USD,
        on_demand_price=REFERENCE_ON_DEMAND_USD,
    )

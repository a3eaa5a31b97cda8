"""One supervised job: the supervisor, its policy client and its ledger, wired together for
``spotwise run`` and the demo."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spotwise.core.progress import Progress
from spotwise.executor.errors import ExecutorError
from spotwise.executor.launchers.base import Launcher
from spotwise.executor.ledger.ledger import JobInfo, JobReport, Ledger, storage_rate
from spotwise.executor.ledger.prices import PriceBook
from spotwise.executor.supervise.elastic import NodePlan, NodeSupervisor, SpendGate
from spotwise.executor.supervise.job_log import JobLog, log_folder
from spotwise.executor.supervise.price_cap import StoredPriceForecasts
from spotwise.executor.supervise.supervisor import (
    ClientFor,
    EventWatcher,
    Supervisor,
    SupervisorConfig,
)
from spotwise.policy.service.client import HttpClient, PolicyClient, in_process_for


def client_factory(policy_url: str | None, token: str | None) -> ClientFor:
    """In-process decisions over the launcher's history, or the policy API at ``policy_url``."""
    if policy_url in (None, "inproc"):
        return in_process_for
    http = HttpClient(str(policy_url), token)

    def remote(*_: Any) -> PolicyClient:
        return http

    return remote


@dataclass(frozen=True, slots=True, kw_only=True)
class SupervisedJob:
    """A supervised job: the ledger's report, and the run's own account of it."""

    report: JobReport
    progress_hours: float
    cloud_hours: float
    """The launcher's hours from the job's start to its end (a replay's simulated hours)."""
    steps_lost: int
    """Training steps done again after relaunches (see :class:`RunReport`)."""
    placements: tuple[str, ...]
    events: tuple[dict[str, Any], ...]
    """The command's JSON events, every instance's in turn."""

    def to_dict(self) -> dict[str, Any]:
        """The report with progress and placements, JSON-ready (without the events)."""
        return {
            **self.report.to_dict(),
            "progress_hours": self.progress_hours,
            "steps_lost": self.steps_lost,
            "placements": list(self.placements),
        }


def price_outlook(store_path: Path, launcher: Launcher, prices: PriceBook) -> StoredPriceForecasts:
    """The stored price forecasts of the job's pools: its cloud's, or AWS's for replayed
    traces (the bundled ones are AWS pools)."""
    from spotwise.executor.clouds.registry import CLOUDS

    provider = launcher.name if launcher.name in CLOUDS else "aws"
    return StoredPriceForecasts(store_path, provider=provider, instance_type=prices.instance_type)


def supervise(
    command: Sequence[str],
    *,
    store_path: Path,
    launcher: Launcher,
    config: SupervisorConfig,
    client_for: ClientFor,
    name: str,
    progress: Progress,
    job_id: str | None = None,
    sweep: str | None = None,
    trial: int | None = None,
    on_event: EventWatcher | None = None,
    nodes: NodePlan | None = None,
    fleet: str | None = None,
    tier: str | None = None,
    gate: SpendGate | None = None,
) -> SupervisedJob:
    """Run ``command`` under the supervisor on ``launcher``, to its end in the ledger (as job
    ``job_id``, a new id by default; of ``sweep``'s ``trial`` when given); with ``nodes``, as an
    elastic job on that many nodes (:mod:`spotwise.executor.supervise.elastic`), its spend granted
    by ``gate``. A launcher of a cloud job carries the job's id (its tags, its S3 prefix): the
    ledger records the job under that id.

    Raises:
        ExecutorError: when ``job_id`` and the launcher's differ.
    """
    tagged = getattr(launcher, "job_id", None)
    if tagged is not None:
        if job_id is not None and job_id != tagged:
            raise ExecutorError(
                f"job {job_id}: its launcher tags its resources as job {tagged}; give both "
                "the id of new_job_id()"
            )
        job_id = str(tagged)
    job = config.job
    prices = config.prices or PriceBook.flat(launcher.pools, job.spot_price, job.on_demand_price)
    config = dataclasses.replace(config, prices=prices)
    ledger = Ledger(
        store_path,
        JobInfo(
            name=name,
            command=" ".join(command),
            launcher=launcher.name,
            simulated=launcher.simulated,
            simulation=launcher.simulation,
            compute_hours=config.job.compute_hours,
            deadline_hours=config.job.deadline_hours,
            on_demand_price=config.job.on_demand_price,
            prices=prices,
            checkpoint_usd_per_gb_month=storage_rate(launcher.name),
            sweep=sweep,
            trial=trial,
            fleet=fleet,
            tier=tier,
        ),
        job_id=job_id,
    )
    progress(f"job {ledger.job_id}: `spotwise jobs logs {ledger.job_id} --follow` follows it")
    # a fleet's jobs print side by side: each line names its job
    log = JobLog(log_folder(store_path, ledger.job_id), label=name if fleet else None)
    supervisor: Supervisor | NodeSupervisor
    if nodes is None:
        supervisor = Supervisor(
            launcher,
            client_for,
            config,
            ledger,
            progress,
            log=log,
            on_event=on_event,
            outlook=price_outlook(store_path, launcher, prices),
        )
    else:
        supervisor = NodeSupervisor(
            launcher, client_for, config, ledger, nodes, progress, log=log, gate=gate
        )
    try:
        run = supervisor.run(command)
        cloud_hours = launcher.now_hours()
    finally:
        launcher.close()
        log.close()
    return SupervisedJob(
        report=ledger.report(),
        progress_hours=round(run.progress_hours, 4),
        cloud_hours=round(cloud_hours, 4),
        steps_lost=run.steps_lost,
        placements=tuple(run.placements),
        events=tuple(run.events),
    )

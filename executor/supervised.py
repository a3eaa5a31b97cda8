"""One supervised job: the supervisor, its policy client and its ledger, wired together for
``spotwise run`` and the demo."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from executor.launchers.base import Launcher
from executor.ledger import JobInfo, Ledger, job_report
from executor.supervisor import ClientFor, Supervisor, SupervisorConfig
from policy.client import HttpClient, PolicyClient, in_process_for
from pricing.store import MarketStore
from spotwise.progress import Progress


def client_factory(policy_url: str | None, token: str | None) -> ClientFor:
    """In-process decisions over the launcher's history, or the policy API at ``policy_url``."""
    if policy_url in (None, "inproc"):
        return in_process_for
    http = HttpClient(str(policy_url), token)

    def remote(*_: Any) -> PolicyClient:
        return http

    return remote


def supervise(
    command: Sequence[str],
    *,
    store_path: Path,
    launcher: Launcher,
    config: SupervisorConfig,
    client_for: ClientFor,
    name: str,
    progress: Progress,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run ``command`` under the supervisor on ``launcher``; the ledger report and the
    command's events."""
    ledger = Ledger(
        store_path,
        JobInfo(
            name=name,
            command=" ".join(command),
            launcher=launcher.name,
            compute_hours=config.job.compute_hours,
            deadline_hours=config.job.deadline_hours,
            on_demand_price=config.job.on_demand_price,
        ),
    )
    supervisor = Supervisor(launcher, client_for, config, ledger, progress)
    try:
        run = supervisor.run(command)
    finally:
        launcher.close()
    with MarketStore.open(store_path, read_only=True) as store:
        report = job_report(store, ledger.job_id)
    report["progress_hours"] = round(run.progress_hours, 4)
    report["placements"] = run.placements
    return report, run.events

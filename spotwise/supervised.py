"""Wiring the supervisor: launchers, policy clients and the ledger for ``spotwise run`` and the
end-to-end demo."""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from executor.launchers.base import Launcher
from executor.launchers.local import LocalLauncher
from executor.ledger import JobInfo, Ledger, job_report
from executor.supervisor import ClientFor, Supervisor, SupervisorConfig
from policy.client import HttpClient, PolicyClient, in_process_for
from policy.job import REFERENCE
from policy.schemas import JobTerms
from policy.traces import TraceSet
from pricing.store import MarketStore

Progress = Callable[[str], None]


def client_factory(policy_url: str | None, token: str | None) -> ClientFor:
    """In-process decisions over the launcher's history, or the policy API at ``policy_url``."""
    if policy_url in (None, "inproc"):
        return in_process_for
    http = HttpClient(str(policy_url), token)

    def remote(*_: Any) -> PolicyClient:
        return http

    return remote


@dataclass(frozen=True, slots=True, kw_only=True)
class Replay:
    """The local launcher's simulated market: real traces from ``start_hours``, ``scale``× fast."""

    traces: TraceSet
    start_hours: float
    scale: float

    def launcher(self, job: JobTerms) -> LocalLauncher:
        return LocalLauncher(
            self.traces,
            start_tick=round(self.start_hours * 3600 / self.traces.gap_seconds),
            scale=self.scale,
            spot_prices=dict.fromkeys(self.traces.names, job.spot_price),
            on_demand_price=job.on_demand_price,
        )


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


DEMO_POOLS = ("us-east-1c_v100_1", "us-east-1d_v100_1", "us-east-1f_v100_1", "us-east-2b_v100_1")
DEMO_START_HOURS = 200.0
DEMO_SCALE = 1000.0
DEMO_EPOCHS = 4


def example_command(ckpt: Path, epochs: int) -> list[str]:
    """The bundled example training (``executor.examples.train_mlp``)."""
    return [
        sys.executable,
        "-m",
        "executor.examples.train_mlp",
        "--epochs",
        str(epochs),
        "--step-sleep-s",
        "0.03",
        "--ckpt",
        str(ckpt),
    ]


def run_example(
    store_path: Path, traces: TraceSet, progress: Progress, *, migrate_risk: float = 0.4
) -> dict[str, Any]:
    """The example training uninterrupted (the reference), then supervised on replayed real
    traces of four V100 pools; the demo JSON plus the ledger report."""
    from executor.replay import run_under_replay

    with tempfile.TemporaryDirectory() as tmp:
        progress("reference run: the example training, uninterrupted")
        began = time.monotonic()
        plain = run_under_replay(
            example_command(Path(tmp) / "plain", DEMO_EPOCHS), [], lead_s=2, grace_s=5
        )
        plain_wall = time.monotonic() - began
        reference = plain.launches[-1].event("done")
        compute_hours = plain_wall * DEMO_SCALE / 3600
        job = JobTerms(
            compute_hours=compute_hours,
            deadline_hours=1.6 * compute_hours + 1.0,
            changeover_hours=0.2,
            spot_price=REFERENCE.spot_price,
            on_demand_price=REFERENCE.on_demand_price,
        )
        ckpt = Path(tmp) / "supervised"
        progress(
            f"supervised run: {len(DEMO_POOLS)} pools replayed from hour {DEMO_START_HOURS:.0f} "
            f"of the bundled aws-02-15-2023 traces, clock ×{DEMO_SCALE:.0f}"
        )
        report, events = supervise(
            example_command(ckpt, DEMO_EPOCHS),
            store_path=store_path,
            launcher=Replay(
                traces=traces.subset(list(DEMO_POOLS)),
                start_hours=DEMO_START_HOURS,
                scale=DEMO_SCALE,
            ).launcher(job),
            config=SupervisorConfig(job=job, migrate_risk=migrate_risk, ckpt_dirs=(ckpt,)),
            client_for=in_process_for,
            name="demo: executor.examples.train_mlp",
            progress=progress,
        )
    done = next((e for e in reversed(events) if e.get("event") == "done"), None)
    identical = bool(reference and done and reference["digest"] == done["digest"])
    summary = {
        "completed": report["status"] == "completed",
        "preemptions": report["preemptions"],
        "migrations": report["migrations"],
        "bitwise_identical": identical,
        "cost_usd": report["cost_usd"],
        "on_demand_cost_usd": report["on_demand_cost_usd"],
    }
    return {**summary, "job_id": report["job_id"], "ledger": report}

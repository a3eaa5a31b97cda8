"""The demo's job: the bundled example training, first uninterrupted (the reference), then
under the supervisor on four replayed real V100 pools, with preemptions, a migration and a
bit-exact resume.

The replay is paced by the job's steps (:class:`~executor.launchers.local.StepPace`), so the
run meets the same stretch of trace, and shows the same preemptions and migration, on an idle
machine and under load.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spotwise.core.progress import Progress
from spotwise.executor.checkpoint.places import LocalFolder
from spotwise.executor.example_runs import example_command, reference_run
from spotwise.executor.launchers.local import Replay
from spotwise.executor.ledger.ledger import JobStatus
from spotwise.executor.ledger.prices import price_book
from spotwise.executor.supervise.supervised import SupervisedJob, supervise
from spotwise.executor.supervise.supervisor import SupervisorConfig
from spotwise.policy.service.client import in_process_for
from spotwise.policy.service.schemas import JobTerms
from spotwise.policy.traces import TraceSet
from spotwise.pricing.quotes import REFERENCE_INSTANCE_TYPE
from spotwise.pricing.store import MarketStore

DEMO_POOLS = ("us-east-1c_v100_1", "us-east-1d_v100_1", "us-east-1f_v100_1", "us-east-2b_v100_1")
DEMO_START_HOURS = 208.0
DEMO_SCALE = 1000.0
"""Cloud seconds per wall second while the job waits, and for the notice's lead."""
DEMO_STEP_S = 36.0
"""Cloud seconds per training step (512 steps: a 5.1-hour job)."""
DEMO_BOOT_S = 1800.0
"""Cloud seconds an instance takes to start and resume."""
DEMO_EPOCHS = 4
DEMO_STEP_SLEEP_S = 0.03


@dataclass(frozen=True, slots=True, kw_only=True)
class DemoResult:
    """What the demo shows: the supervised run against the reference, and its ledger."""

    completed: bool
    preemptions: int
    migrations: int
    bitwise_identical: bool
    """The supervised run's final model and optimizer state equal the reference run's."""
    cost_usd: float
    on_demand_cost_usd: float
    job_id: str
    ledger: SupervisedJob

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with the ledger report under ``ledger``."""
        return {
            **{f: getattr(self, f) for f in self.__dataclass_fields__ if f != "ledger"},
            "ledger": self.ledger.to_dict(),
        }


def run_example(store_path: Path, traces: TraceSet, progress: Progress) -> DemoResult:
    """The reference run, then the supervised run."""
    with tempfile.TemporaryDirectory() as tmp:
        progress("reference run: the example training, uninterrupted")
        # (unpaced: the pause per step only paces the replay, and changes no number)
        reference = reference_run(
            Path(tmp) / "plain",
            epochs=DEMO_EPOCHS,
            step_sleep_s=0.0,
            progress=lambda line: progress(f"reference run: {line}"),
        ).done
        compute_hours = int(reference["step"]) * DEMO_STEP_S / 3600
        with MarketStore.open(store_path, read_only=True) as store:
            prices = price_book(store, DEMO_POOLS, instance_type=REFERENCE_INSTANCE_TYPE)
        job = JobTerms(
            compute_hours=compute_hours,
            deadline_hours=1.6 * compute_hours + 1.0,
            changeover_hours=0.2,
            spot_price=prices.typical_spot(),
            on_demand_price=prices.on_demand_quote().usd_per_hour,
        )
        ckpt = Path(tmp) / "supervised"
        progress(
            f"supervised run: {len(DEMO_POOLS)} pools replayed from hour {DEMO_START_HOURS:.0f} "
            f"of the bundled aws-02-15-2023 traces, {DEMO_STEP_S:.0f} cloud seconds a step"
        )
        replay = Replay(
            traces=traces.subset(list(DEMO_POOLS)),
            start_hours=DEMO_START_HOURS,
            scale=DEMO_SCALE,
            step_s=DEMO_STEP_S,
            boot_s=DEMO_BOOT_S,
        )
        supervised = supervise(
            example_command(ckpt, epochs=DEMO_EPOCHS, step_sleep_s=DEMO_STEP_SLEEP_S),
            store_path=store_path,
            launcher=replay.launcher(),
            config=SupervisorConfig(
                job=job,
                checkpoints=(LocalFolder(ckpt),),
                prices=prices,
            ),
            client_for=in_process_for,
            name="demo: spotwise.executor.examples.train_mlp",
            progress=progress,
        )
    done = next((e for e in reversed(supervised.events) if e.get("event") == "done"), None)
    report = supervised.report
    return DemoResult(
        completed=report.status is JobStatus.COMPLETED,
        preemptions=report.preemptions,
        migrations=report.migrations,
        bitwise_identical=bool(done and reference["digest"] == done["digest"]),
        cost_usd=report.cost_usd,
        on_demand_cost_usd=report.on_demand_cost_usd,
        job_id=report.job_id,
        ledger=supervised,
    )

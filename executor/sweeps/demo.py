"""The sweep demo: 8 trials of the example training (peak learning rate × width) on two
workers, each trial a supervised job on four V100 pools replayed from real AWS availability
traces (paced by the job's steps, so the same trials meet the same preemptions on any machine),
then the best trial's params run again uninterrupted and compared bit for bit."""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spotwise.core.clock import SYSTEM_CLOCK
from spotwise.core.progress import Progress
from spotwise.executor.demo import DEMO_POOLS
from spotwise.executor.example_runs import example_command
from spotwise.executor.supervise.replay import run_under_replay
from spotwise.executor.sweeps.report import SweepReport, sweep_report
from spotwise.executor.sweeps.sweep import ReplayMarket, SweepConfig, SweepSource, default_storage
from spotwise.executor.sweeps.workers import run_workers

DEMO_LRS = (0.001, 0.003, 0.01, 0.03)
DEMO_WIDTHS = (32, 128)
DEMO_EPOCHS = 2
DEMO_SAMPLES = 2048
"""64 steps an epoch at the example's batch of 32."""
DEMO_STEP_S = 120.0
"""Cloud seconds per training step: a trial is 4.3 cloud hours of work."""
DEMO_BOOT_S = 1800.0
DEMO_STEP_SLEEP_S = 0.02
DEMO_START_HOURS = 200.0
"""Where in the traces the trials start (its own stretch: the main demo's moved)."""


def trial_command() -> list[str]:
    """The example training with the sweep's placeholders."""
    return [
        *example_command("{ckpt}", epochs=DEMO_EPOCHS, step_sleep_s=DEMO_STEP_SLEEP_S),
        "--samples",
        str(DEMO_SAMPLES),
        "--lr",
        "{lr}",
        "--hidden",
        "{hidden}",
    ]


def demo_spec(name: str, lrs: tuple[float, ...], widths: tuple[int, ...]) -> str:
    """The demo's spec, as a user would write it (TOML)."""
    command = ", ".join(f'"{arg}"' for arg in trial_command())
    return f"""name = "{name}"
direction = "minimize"
compute_hours = {DEMO_EPOCHS * DEMO_SAMPLES / 32 * DEMO_STEP_S / 3600:.4f}
command = [{command}]

[sampler]
type = "grid"

[params]
lr = {{ type = "categorical", choices = [{", ".join(map(str, lrs))}] }}
hidden = {{ type = "categorical", choices = [{", ".join(map(str, widths))}] }}
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepDemoResult:
    """The demo's outcome."""

    report: SweepReport
    best_rerun_identical: bool
    """The best trial's params, run again uninterrupted, give the same final value and the
    same model and optimizer state, bit for bit."""
    wall_s: float

    def to_dict(self) -> dict[str, Any]:
        """The demo's summary for JSON: trials, preemptions, best, costs and timing."""
        r = self.report
        return {
            "sweep": r.sweep,
            "trials": len(r.trials),
            "completed": r.completed,
            "preempted_trials": sum(t.preemptions > 0 for t in r.trials),
            "preemptions": sum(t.preemptions for t in r.trials),
            "steps_lost": sum(t.steps_lost for t in r.trials),
            "best": r.best,
            "best_rerun_identical": self.best_rerun_identical,
            "cost_usd": r.cost_usd,
            "on_demand_cost_usd": r.on_demand_cost_usd,
            "savings_pct": r.savings_pct,
            "simulated": r.simulated,
            "prices": r.prices,
            "wall_s": round(self.wall_s, 1),
        }


def run_sweep_demo(
    store_path: Path,
    traces: Path,
    progress: Progress,
    *,
    lrs: tuple[float, ...] = DEMO_LRS,
    widths: tuple[int, ...] = DEMO_WIDTHS,
    start_hours: float = DEMO_START_HOURS,
    spot_price: float | None = None,
    on_demand_price: float | None = None,
) -> SweepDemoResult:
    """Run the demo sweep into ``store_path``'s ledger (a new sweep each time; a smaller grid
    or another stretch of the traces when asked)."""
    from spotwise.executor.sweeps.sweep import sweep_folder

    began = SYSTEM_CLOCK.monotonic()
    name = time.strftime("demo-%Y%m%d-%H%M%S", time.localtime(SYSTEM_CLOCK.time()))
    folder = sweep_folder(store_path, name)
    spec_file = folder / "sweep.toml"
    spec_file.write_text(demo_spec(name, lrs, widths))
    config = SweepConfig(
        source=SweepSource(spec_file=str(spec_file)),
        store=str(store_path),
        storage=default_storage(folder),
        root=str(folder),
        market=ReplayMarket(
            traces=str(traces),
            pools=DEMO_POOLS,
            start_hours=start_hours,
            scale=1000.0,
            step_s=DEMO_STEP_S,
            boot_s=DEMO_BOOT_S,
        ),
        workers=2,
        heartbeat_s=5,
        spot_price=spot_price,
        on_demand_price=on_demand_price,
    )
    trials = len(lrs) * len(widths)
    progress(
        f"sweep {name}: {trials} trials on 2 workers over {len(DEMO_POOLS)} replayed V100 pools"
    )
    ended = run_workers(config, progress)
    if ended.interrupted is not None or any(ended.exit_codes):
        progress(f"the workers ended with {list(ended.exit_codes)}")
    report = sweep_report(config.storage, name, store_path)
    identical = False
    if report.best is not None:
        progress(f"best trial {report.best['trial']}: run again uninterrupted")
        identical = _rerun_matches(config, report.best)
    return SweepDemoResult(
        report=report, best_rerun_identical=identical, wall_s=SYSTEM_CLOCK.monotonic() - began
    )


def _rerun_matches(config: SweepConfig, best: dict[str, Any]) -> bool:
    """Run the best trial's params once more, uninterrupted, and compare its final value and
    state digest with the sweep's."""
    import optuna
    from optuna.trial import TrialState

    from spotwise.executor.sweeps.sweep import original_number, storage_url

    study = optuna.load_study(
        study_name=Path(config.root).name, storage=storage_url(config.storage)
    )
    trial = [
        t
        for t in study.get_trials(deepcopy=False)
        if original_number(t) == best["trial"] and t.state is TrialState.COMPLETE
    ][-1]
    spec = config.source.load()
    with tempfile.TemporaryDirectory() as tmp:
        command = spec.render({**best["params"], "trial": -1, "ckpt": tmp, "sweep": spec.name})
        run = run_under_replay(command, [], lead_s=2, grace_s=5)
    done = run.launches[-1].event("done") or {}
    return bool(
        done.get("value") == best["value"]
        and done.get("digest") is not None
        and done.get("digest") == trial.user_attrs.get("digest")
    )

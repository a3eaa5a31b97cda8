"""The ``spotwise policy`` group: learned policies (``policy train``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from spotwise.console import (
    ChangeoverHours,
    ComputeHours,
    DeadlineHours,
    OnDemandPrice,
    SpotPrice,
    TracesOption,
    err,
    fail,
    traces_folder,
)
from spotwise.core import settings
from spotwise.policy.errors import PolicyError
from spotwise.policy.job import REFERENCE, JobSpec
from spotwise.policy.rl.model_files import ENCODERS

if TYPE_CHECKING:
    from spotwise.policy.rl.env import Scenario


policy_app = typer.Typer(help="Learned policies.", no_args_is_help=True, rich_markup_mode=None)


@policy_app.command("train")
def train(
    algo: Annotated[str, typer.Option("--algo", help="Algorithm (ppo).")] = "ppo",
    encoder: Annotated[
        str,
        typer.Option(
            "--encoder",
            help="set: one shared network per pool, pooled; plays any number of pools and may "
            "move a running job. mlp: a fixed number of pool slots, a spot instance runs "
            "until preempted.",
        ),
    ] = "set",
    out_dir: Annotated[
        Path, typer.Option("--out", help="Folder for ppo.pt, ppo.json and TensorBoard logs.")
    ] = Path("models"),
    timesteps: Annotated[
        int, typer.Option("--timesteps", min=1, help="PPO steps after imitation.")
    ] = 100_000,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of every random draw (same seed, same weights).")
    ] = 0,
    imitate: Annotated[
        str,
        typer.Option(
            "--imitate",
            help="Warm-start by cloning this policy's choices before PPO (none: from scratch).",
        ),
    ] = "risk_aware",
    imitation_episodes: Annotated[
        int,
        typer.Option(
            "--imitation-episodes", min=1, help="Training jobs the expert plays for cloning."
        ),
    ] = 1000,
    imitation_epochs: Annotated[
        int, typer.Option("--imitation-epochs", min=1, help="Passes over the expert's choices.")
    ] = 30,
    dagger_rounds: Annotated[
        int,
        typer.Option(
            "--dagger-rounds",
            min=0,
            help="After cloning, rounds of playing jobs itself with the expert labelling them.",
        ),
    ] = 0,
    suite_classes: Annotated[
        bool,
        typer.Option(
            "--suite",
            help="Train on every class of the scenario suite (every bundled trace set, job "
            "shape, changeover, observation mode and history; jobs that end before each set's "
            "held-back cut) instead of one trace set and job shape.",
        ),
    ] = False,
    synthetic: Annotated[
        str,
        typer.Option(
            "--synthetic",
            help="With --suite, also train on synthetic markets fitted on each set's training "
            "part, in these regimes (comma-separated names, all, or none).",
        ),
    ] = "all",
    until_hours: Annotated[
        float,
        typer.Option(
            "--train-until-hours",
            help="Train only on jobs whose deadline falls before this hour of the traces.",
        ),
    ] = 480.0,
    traces: TracesOption = None,
    compute_hours: ComputeHours = REFERENCE.compute_hours,
    deadline_hours: DeadlineHours = REFERENCE.deadline_hours,
    changeover_hours: ChangeoverHours = REFERENCE.changeover_hours,
    spot_price: SpotPrice = REFERENCE.spot_price,
    on_demand_price: OnDemandPrice = REFERENCE.on_demand_price,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="Show progress bars.")
    ] = True,
) -> None:
    """Train a learned policy on the traces' past (progress bar; TensorBoard logs in --out)."""
    from spotwise.policy.rl.train import trace_scenarios, train_ppo
    from spotwise.policy.traces import load_traces

    if algo != "ppo":
        fail(f"--algo {algo!r} is not supported; use ppo")
    if encoder not in ENCODERS:
        fail(f"--encoder {encoder!r} is not supported; use one of {', '.join(ENCODERS)}")
    try:
        if suite_classes:
            scenarios, trained = _suite_training(synthetic, seed)
        else:
            spec = JobSpec(
                compute_hours=compute_hours,
                deadline_hours=deadline_hours,
                changeover_hours=changeover_hours,
                spot_price=spot_price,
                on_demand_price=on_demand_price,
            )
            scenarios = trace_scenarios(load_traces(traces_folder(traces)), spec, until_hours)
            trained = {"until_hours": until_hours}
        began = time.perf_counter()  # benchmark timing: how long training took, reported
        target = train_ppo(
            scenarios,
            out=out_dir,
            timesteps=timesteps,
            seed=seed,
            imitate=None if imitate == "none" else imitate,
            imitation_episodes=imitation_episodes,
            imitation_epochs=imitation_epochs,
            dagger_rounds=dagger_rounds,
            progress_bar=progress,
            trained=trained,
            encoder=encoder,
        )
    except (PolicyError, ValueError) as exc:
        fail(str(exc))
    err.print(
        f"trained in {time.perf_counter() - began:.0f} s: {target} (+ .json); bench it with "
        f"--models {out_dir} --policies {target.stem}; TensorBoard: tensorboard --logdir {out_dir}"
    )


def _suite_training(synthetic: str, seed: int) -> tuple[list[Scenario], dict[str, object]]:
    """``train --suite``: every class of the scenario suite and the synthetic markets of the
    ``synthetic`` regimes (names, all or none), with what the model's card says of them."""
    from spotwise.policy.lab.scenarios import REGIMES, synthetic_markets
    from spotwise.policy.lab.suite import suite_markets
    from spotwise.policy.lab.trace_sets import suite_sets
    from spotwise.policy.rl.train import suite_scenarios

    data = settings.bundled_data_dir()
    bundled = suite_sets(data)
    regimes = [r for r in REGIMES if synthetic and r.name in synthetic.split(",")]
    if synthetic == "all":
        regimes = list(REGIMES)
    markets = synthetic_markets(bundled, regimes, seed=seed)
    sets = {s.name: s.traces for s in bundled}
    priced = suite_markets(sets, data, quick=False)
    scenarios = suite_scenarios(sets, synthetic=markets, markets=priced)
    trained: dict[str, object] = {
        "suite": "every class (the priced markets' too), training jobs",
        "synthetic_regimes": [r.name for r in regimes],
    }
    return scenarios, trained

"""Training a learned policy with stable-baselines3 on past jobs: optionally warm-started by
cloning a rule policy's decisions (:mod:`spotwise.policy.rl.imitation`), then PPO.

Jobs come from scenarios: one trace set and job shape (:func:`trace_scenarios`), or every
class of the scenario suite on its training jobs (:func:`suite_scenarios`: every bundled trace
set, job shape, changeover, observation mode and history, jobs ending before each set's
held-back cut), so one model serves them all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from spotwise import policy
from spotwise.policy.job import JobSpec
from spotwise.policy.rl.agent import save_model
from spotwise.policy.rl.augment import Storms, stormier
from spotwise.policy.rl.env import CHECKPOINT_MINUTES, Scenario, SpotJobEnv
from spotwise.policy.rl.features import HALF_LIFE_HOURS
from spotwise.policy.rl.imitation import clone, demonstrations
from spotwise.policy.rl.model_files import NET_ARCH, SET_ARCH, AgentConfig
from spotwise.policy.simulate import Visibility, job_starts
from spotwise.policy.traces import TraceSet
from spotwise.pricing.forecast.prior import PoolPrior

if TYPE_CHECKING:
    from spotwise.policy.lab.suite import Markets, SuiteClass


def training_starts(traces: TraceSet, spec: JobSpec, until_hours: float) -> list[int]:
    """Every hourly job start whose deadline falls before ``until_hours`` (0 = the trace end)."""
    job = spec.ticks(traces.gap_seconds)
    cutoff = traces.n_ticks if until_hours <= 0 else round(until_hours * 3600 / traces.gap_seconds)
    starts = job_starts(traces.n_ticks, traces.gap_seconds, job.deadline, 0.0, 1.0)
    return [s for s in starts if s + job.deadline <= cutoff]


def trace_scenarios(traces: TraceSet, spec: JobSpec, until_hours: float) -> list[Scenario]:
    """One trace set and job shape, every pool visible, jobs ending before ``until_hours``."""
    return [Scenario(traces, spec, training_starts(traces, spec, until_hours))]


def suite_scenarios(
    sets: dict[str, TraceSet],
    start_every_hours: float = 3.0,
    stormy_copies: int = 0,
    synthetic: Sequence[TraceSet] = (),
    markets: Markets | None = None,
) -> list[Scenario]:
    """Every class of the scenario suite on its training jobs (those that end before each
    set's held-back cut), with the suite's priors (leave one set out); the same on
    ``stormy_copies`` rougher copies of each set, the k-th k times as stormy
    (:func:`spotwise.policy.rl.augment.stormier`); and on each ``synthetic`` market
    (:mod:`spotwise.policy.lab.scenarios`), whose every job trains (none is held back: nothing of
    it is a claim)."""
    from spotwise.policy.lab.suite import classes, set_prior

    copies = list(sets.items())
    for copy in range(1, stormy_copies + 1):
        storms = Storms(outages_per_day=copy * 1.0, storms_per_day=copy * 0.3)
        copies += [(name, stormier(t, seed=copy, storms=storms)) for name, t in sets.items()]
    priors = {name: set_prior(name, sets) for name in sets}
    scenarios = []
    for name, traces in copies:
        for c in classes({name: traces}, quick=False):
            scenarios += _class_scenarios(c, traces, priors[name], start_every_hours)
    for c in classes(sets, quick=False, markets=markets or {}):
        if c.market and markets:
            _, priced = markets[c.market]
            scenarios += _class_scenarios(c, priced, priors[c.trace_set], start_every_hours)
    for market in synthetic:
        prior = set_prior("", {**sets})
        for c in classes({"synthetic": market}, quick=False):
            spec = c.spec()
            starts = job_starts(
                market.n_ticks,
                market.gap_seconds,
                spec.ticks(market.gap_seconds).deadline,
                c.history_hours or 0.0,
                start_every_hours,
            )
            seen = Visibility(observe=c.observe, history_hours=c.history_hours, prior=prior)
            pools = [None] if c.pools == "every" else list(market.names)
            for pool in pools:
                part = market if pool is None else market.subset([pool])
                if starts:
                    scenarios.append(Scenario(part, spec, starts, seen))
    return scenarios


def _class_scenarios(
    c: SuiteClass, traces: TraceSet, prior: PoolPrior, start_every_hours: float
) -> list[Scenario]:
    """A class's training jobs: on the set's pools together, or on each pool alone."""
    from spotwise.policy.lab.suite import TRAIN, window_starts

    spec = c.spec()
    seen = Visibility(observe=c.observe, history_hours=c.history_hours, prior=prior)
    every = start_every_hours * c.scale
    starts = window_starts(traces, spec, TRAIN, every)
    if not starts:
        return []
    if c.pools == "every":
        return [Scenario(traces, spec, starts, seen, c.provider)]
    return [Scenario(traces.subset([pool]), spec, starts, seen) for pool in traces.names]


def _describe(scenarios: Sequence[Scenario]) -> dict[str, Any]:
    first = scenarios[0]
    return {
        "pools": sorted({name for s in scenarios for name in s.traces.names}),
        "scenarios": len(scenarios),
        "n_starts": int(sum(len(s.starts) for s in scenarios)),
        "job": {
            "compute_hours": first.spec.compute_hours,
            "deadline_hours": first.spec.deadline_hours,
            "changeover_hours": first.spec.changeover_hours,
            "spot_price": first.spec.spot_price,
            "on_demand_price": first.spec.on_demand_price,
        }
        if len(scenarios) == 1
        else "every shape of the suite",
        "gap_seconds": sorted({s.traces.gap_seconds for s in scenarios}),
    }


def train_ppo(
    scenarios: Sequence[Scenario],
    *,
    out: Path,
    timesteps: int,
    seed: int,
    imitate: str | None = "risk_aware",
    imitation_episodes: int = 1000,
    imitation_epochs: int = 30,
    dagger_rounds: int = 0,
    single_share: float = 0.2,
    progress_bar: bool = False,
    trained: dict[str, Any] | None = None,
    encoder: str = "set",
) -> Path:
    """Train PPO on jobs of ``scenarios``; write ``out/ppo.pt`` (weights) + ``.json`` (config
    and weights hash) and TensorBoard logs under ``out/tensorboard``. Returns the .pt path.

    With ``imitate``, the policy network first clones that policy's choices on
    ``imitation_episodes`` training jobs, then ``dagger_rounds`` times plays as many jobs
    itself, has the expert label the choices it met and clones them all again (DAgger); PPO
    then fine-tunes it at a lower learning rate.
    ``encoder``: ``set`` (:mod:`~spotwise.policy.rl.set_network`: plays any number of pools) or
    ``mlp`` (a fixed number of pool slots, the most any scenario has).
    ``trained`` adds to what the config says of the training.
    """
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(1)
    max_pools = max(len(s.traces.pools) for s in scenarios)
    first = scenarios[0]
    env_kwargs = {
        "traces": first.traces,
        "spec": first.spec,
        "max_pools": max_pools,
        "starts": first.starts,
        "single_share": single_share,
        "scenarios": list(scenarios),
        "moves": encoder == "set",
    }
    env = make_vec_env(SpotJobEnv, n_envs=4, seed=seed, env_kwargs=env_kwargs)
    net_arch = SET_ARCH if encoder == "set" else NET_ARCH
    network: Any = "MlpPolicy"
    policy_kwargs: dict[str, Any] = {"net_arch": list(net_arch)}
    if encoder == "set":
        from spotwise.policy.rl.set_network import SetActorCritic

        network, policy_kwargs = SetActorCritic, {"encoding": net_arch[0], "trunk": net_arch[1]}
    elif encoder != "mlp":
        raise ValueError(f"encoder {encoder!r}: use set or mlp")
    model = PPO(
        network,
        env,
        n_steps=1024,
        batch_size=512,
        n_epochs=5,
        gamma=0.999,
        gae_lambda=0.95,
        ent_coef=0.003,
        learning_rate=3e-5 if imitate else 3e-4,
        policy_kwargs=policy_kwargs,
        tensorboard_log=str(out / "tensorboard"),
        seed=seed,
        device="cpu",
        verbose=0,
    )
    imitation: dict[str, object] = {}
    if imitate:
        demo_env = SpotJobEnv(**env_kwargs)  # type: ignore[arg-type]
        features, actions = demonstrations(
            demo_env, imitate, imitation_episodes, seed, progress=progress_bar
        )
        loss = clone(model, features, actions, epochs=imitation_epochs, seed=seed)
        for round_ in range(1, dagger_rounds + 1):
            more_features, more_actions = demonstrations(
                demo_env,
                imitate,
                imitation_episodes,
                seed + round_ * imitation_episodes,
                progress=progress_bar,
                learner=model,
            )
            features = np.concatenate([features, more_features])
            actions = np.concatenate([actions, more_actions])
            loss = clone(model, features, actions, epochs=imitation_epochs, seed=seed + round_)
        imitation = {
            "expert": imitate,
            "expert_params": _params_of(imitate),
            "episodes": imitation_episodes,
            "dagger_rounds": dagger_rounds,
            "epochs": imitation_epochs,
            "choices": len(actions),
            "final_nll": round(loss, 4),
        }
    if timesteps:
        model.learn(total_timesteps=timesteps, progress_bar=progress_bar, tb_log_name="ppo")
    config = AgentConfig(
        algo="ppo",
        max_pools=max_pools,
        weights_sha256="",  # save_model records it
        checkpoint_minutes=CHECKPOINT_MINUTES,
        half_life_hours=HALF_LIFE_HOURS,
        net_arch=net_arch,
        encoder=encoder,
        moves=encoder == "set",
        trained={
            **_describe(scenarios),
            **(trained or {}),
            "timesteps": timesteps,
            "seed": seed,
            "single_share": single_share,
            "imitation": imitation,
            "mean_start_hour": float(
                np.mean([t * s.traces.gap_seconds / 3600 for s in scenarios for t in s.starts])
            ),
        },
    )
    return save_model(model.policy, config, out, "ppo")


def _params_of(name: str) -> dict[str, object]:
    """The expert's thresholds, so a model says which version of the rules it copied."""
    params = getattr(policy.load(name), "params", None)
    return asdict(params) if is_dataclass(params) and not isinstance(params, type) else {}

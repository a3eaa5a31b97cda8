"""Training a learned policy with stable-baselines3 on the jobs of a trace's past: optionally
warm-started by cloning a rule policy's decisions (:mod:`spotwise.policy.rl.imitation`), then
PPO."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from spotwise.policy.job import JobSpec
from spotwise.policy.rl.agent import save_model
from spotwise.policy.rl.env import CHECKPOINT_MINUTES, SpotJobEnv
from spotwise.policy.rl.features import HALF_LIFE_HOURS
from spotwise.policy.rl.imitation import clone, demonstrations
from spotwise.policy.rl.model_files import NET_ARCH, AgentConfig
from spotwise.policy.simulate import job_starts
from spotwise.policy.traces import TraceSet


def training_starts(traces: TraceSet, spec: JobSpec, until_hours: float) -> list[int]:
    """Every hourly job start whose deadline falls before ``until_hours`` (0 = the trace end)."""
    job = spec.ticks(traces.gap_seconds)
    cutoff = traces.n_ticks if until_hours <= 0 else round(until_hours * 3600 / traces.gap_seconds)
    starts = job_starts(traces.n_ticks, traces.gap_seconds, job.deadline, 0.0, 1.0)
    return [s for s in starts if s + job.deadline <= cutoff]


def train_ppo(
    traces: TraceSet,
    spec: JobSpec,
    *,
    out: Path,
    timesteps: int,
    seed: int,
    until_hours: float,
    imitate: str | None = "risk_aware",
    imitation_episodes: int = 1000,
    imitation_epochs: int = 30,
    progress_bar: bool = False,
) -> Path:
    """Train PPO on jobs that end before ``until_hours``; write ``out/ppo.pt`` (weights) +
    ``.json`` (config and weights hash) and TensorBoard logs under ``out/tensorboard``. Returns
    the .pt path.

    With ``imitate``, the policy network first clones that policy's choices on
    ``imitation_episodes`` training jobs, and PPO then fine-tunes it at a lower learning rate.
    """
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(1)
    starts = training_starts(traces, spec, until_hours)
    max_pools = len(traces.pools)
    env = make_vec_env(
        SpotJobEnv,
        n_envs=4,
        seed=seed,
        env_kwargs={"traces": traces, "spec": spec, "max_pools": max_pools, "starts": starts},
    )
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=1024,
        batch_size=512,
        n_epochs=5,
        gamma=0.999,
        gae_lambda=0.95,
        ent_coef=0.003,
        learning_rate=1e-4 if imitate else 3e-4,
        policy_kwargs={"net_arch": list(NET_ARCH)},
        tensorboard_log=str(out / "tensorboard"),
        seed=seed,
        device="cpu",
        verbose=0,
    )
    imitation: dict[str, object] = {}
    if imitate:
        demo_env = SpotJobEnv(traces, spec, max_pools=max_pools, starts=starts)
        features, actions = demonstrations(
            demo_env, imitate, imitation_episodes, seed, progress=progress_bar
        )
        loss = clone(model, features, actions, epochs=imitation_epochs, seed=seed)
        imitation = {
            "expert": imitate,
            "episodes": imitation_episodes,
            "epochs": imitation_epochs,
            "choices": len(actions),
            "final_nll": round(loss, 4),
        }
    model.learn(total_timesteps=timesteps, progress_bar=progress_bar, tb_log_name="ppo")
    config = AgentConfig(
        algo="ppo",
        max_pools=max_pools,
        weights_sha256="",  # save_model records it
        checkpoint_minutes=CHECKPOINT_MINUTES,
        half_life_hours=HALF_LIFE_HOURS,
        trained={
            "pools": list(traces.names),
            "until_hours": until_hours,
            "n_starts": len(starts),
            "timesteps": timesteps,
            "seed": seed,
            "imitation": imitation,
            "job": {
                "compute_hours": spec.compute_hours,
                "deadline_hours": spec.deadline_hours,
                "changeover_hours": spec.changeover_hours,
                "spot_price": spec.spot_price,
                "on_demand_price": spec.on_demand_price,
            },
            "gap_seconds": traces.gap_seconds,
            "mean_start_hour": float(np.mean(starts)) * traces.gap_seconds / 3600,
        },
    )
    return save_model(model.policy, config, out, "ppo")

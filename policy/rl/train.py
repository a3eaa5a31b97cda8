"""Training a learned policy with stable-baselines3 on the jobs of a trace's past."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from policy.job import JobSpec
from policy.rl.agent import AgentConfig
from policy.rl.env import SpotJobEnv
from policy.simulate import job_starts
from policy.traces import TraceSet


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
    progress_bar: bool = False,
) -> Path:
    """Train PPO on jobs that end before ``until_hours``; write ``out/ppo.zip`` + ``.json`` and
    TensorBoard logs under ``out/tensorboard``. Returns the .zip path."""
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
        learning_rate=3e-4,
        policy_kwargs={"net_arch": [64, 64]},
        tensorboard_log=str(out / "tensorboard"),
        seed=seed,
        device="cpu",
        verbose=0,
    )
    model.learn(total_timesteps=timesteps, progress_bar=progress_bar, tb_log_name="ppo")
    out.mkdir(parents=True, exist_ok=True)
    target = out / "ppo.zip"
    model.save(target)
    AgentConfig(
        algo="ppo",
        max_pools=max_pools,
        trained={
            "pools": list(traces.names),
            "until_hours": until_hours,
            "n_starts": len(starts),
            "timesteps": timesteps,
            "seed": seed,
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
    ).write(target.with_suffix(".json"))
    return target

"""The policy registry: every policy by name, ``best``, and the learned models."""

from __future__ import annotations

import pytest

from spotwise import policy
from spotwise.policy import load
from spotwise.policy.errors import UnknownPolicy
from spotwise.policy.registry import SPECS, names, reads_future, register


def test_unknown_policy_names_the_registered_ones() -> None:
    names = (
        "best, core, core_flat, greedy, omniscient, on_demand, ppo, risk_aware, uniform_progress"
    )
    with pytest.raises(UnknownPolicy, match=names):
        load("cheapest")


def test_best_is_the_recommended_policy_and_load_is_the_entry_point() -> None:
    assert type(policy.load("best")).name == "core"
    assert type(policy.load("ppo")).name == "ppo"


def test_causal_names_leave_out_the_bound_and_only_the_bound_reads_the_future() -> None:
    assert names(causal=True) == [
        "best",
        "core",
        "core_flat",
        "greedy",
        "on_demand",
        "ppo",
        "risk_aware",
        "uniform_progress",
    ]
    assert "omniscient" in names()
    assert reads_future("omniscient")
    assert not any(reads_future(n) for n in ("best", "greedy", "ppo", "cheapest"))


def test_a_name_is_registered_once_and_best_never() -> None:
    for name in ("greedy", "best"):
        with pytest.raises(ValueError, match=f"policy '{name}' is registered already"):
            register(name, "spotwise.policy.policies.on_demand:OnDemand")
    assert SPECS["greedy"].entry_point == "spotwise.policy.policies.greedy:Greedy"
    assert "best" not in SPECS


def test_load_builds_a_fresh_policy_each_time() -> None:
    first, second = load("greedy"), load("greedy")
    assert type(first) is type(second) and type(first).__name__ == "Greedy"
    assert first is not second

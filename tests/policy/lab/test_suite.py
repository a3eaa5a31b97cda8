"""The scenario suite's classes, priors, material classes and verdict."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from spotwise.policy.lab import suite
from spotwise.policy.lab.markets import MarketSpec
from spotwise.policy.traces import Pool, TraceSet
from spotwise.pricing.forecast.prior import DEFAULT_PRIOR
from tests.policy.helpers import traces


def market(hours: int, seed: int, pools: int = 2) -> TraceSet:
    """Hourly pools that come and go in runs of a few hours."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(pools):
        row, up = "", True
        while len(row) < hours:
            row += ("1" if up else "0") * int(rng.integers(1, 12 if up else 6))
            up = not up
        rows.append(row[:hours])
    return traces(*rows)


def test_classes_hold_tight_shapes_pools_one_at_a_time_and_shrunk_shapes_for_short_sets() -> None:
    sets = {"long": market(600, 1), "short": market(30, 2), "one": market(600, 3, pools=1)}
    classes = suite.classes(sets, quick=False)
    long = [c for c in classes if c.trace_set == "long"]
    assert {(c.compute_hours, c.deadline_hours) for c in long} == set(suite.SHAPES)
    assert {c.pools for c in long} == {"every", "each"}
    assert all(c.observe == "probe" and c.history_hours == 0 for c in long if c.pools == "each")
    assert sum(c.tight for c in long) == len(suite.TIGHT) * len(suite.CHANGEOVERS) * 5
    assert {c.pools for c in classes if c.trace_set == "one"} == {"each"}
    short = [c for c in classes if c.trace_set == "short"]
    assert short and all(c.scale < 1 for c in short)
    held = suite.held_back_hours(sets["short"])
    assert all(abs(c.deadline_hours - held / 2) < 1e-9 for c in short)
    assert all(c.deadline_hours - c.compute_hours >= 3 * c.changeover_hours for c in short)
    assert suite.skipped(sets, quick=False)  # 48 h in 52 h shrunk to 5 h leaves no slack


def test_a_cold_start_prior_comes_only_from_the_other_sets() -> None:
    up, down = traces("1" * 90), traces("0" * 60 + "1" * 30)
    prior = suite.set_prior("up", {"up": up, "down": down})
    assert prior.available_share == 0.0  # the training part of "down" only
    assert "down" in prior.source and "up" not in prior.source.split("(")[1]
    assert suite.set_prior("up", {"up": up}) is DEFAULT_PRIOR


def test_the_summary_marks_material_classes_and_the_verdict_reads_every_target() -> None:
    sets = {"a": market(400, 4), "b": market(400, 5)}
    run = suite.run_suite(
        sets,
        policies=("greedy", "uniform_progress", "risk_aware", "omniscient"),
        quick=True,
        start_every_hours=48.0,
    )
    summary = run.summary()
    for row in summary.classes:
        assert row.gap is not None and row.material == (row.gap >= suite.MATERIAL_GAP)
        assert all(s.misses == 0 for s in row.policies.values())
        if row.scenario.pools == "each":
            assert row.per_pool is not None and set(row.per_pool) == {"z0", "z1"}
    overall = summary.overall["risk_aware"]
    material = [r for r in summary.classes if r.material and r.scenario.observe == "probe"]
    assert overall.material_probe_classes == len(material)
    verdict = suite.verdict(summary, learned="uniform_progress")
    assert verdict.no_missed_deadline
    assert {
        "within_greedy_and_uniform_progress_plus_0.005_everywhere",
        "probe_gap_share_at_least_0.45",
        "every_material_probe_class_at_least_0.25",
        "single_pool_tight_within_0.005_of_the_best_rival",
        "no_pool_above_1.005",
        "learned_within_0.01_of_best",
    } <= set(verdict.to_dict())


def test_market_classes_report_the_gap_to_the_bound_requests_moves_and_the_ablation(
    tmp_path: Path,
) -> None:
    hours = 400
    base = market(hours, 6)
    priced = replace(
        base,
        pools=(
            Pool(name="z0", cloud="aws", region="us-east-1", on_demand_price=3.0),
            Pool(name="z1", cloud="aws", region="us-west-2", on_demand_price=3.0),
        ),
        prices=np.array([[2.5] * hours, [0.6] * hours]),
    )
    spec = MarketSpec(trace_set="a", pools=("z0", "z1"), pricing="spread", checkpoint_gb=50.0)
    markets = {spec.name: (spec, priced)}
    sets = {"a": base, "b": market(hours, 7)}
    classes = suite.classes(sets, quick=True, markets=markets)
    priced_classes = [c for c in classes if c.market]
    assert priced_classes and all(c.checkpoint_gb == 50.0 for c in priced_classes)
    assert all(c.observe == "probe" and c.history_hours == 0 for c in priced_classes)
    run = suite.run_suite(
        sets,
        policies=("greedy", "core", "core_flat", "omniscient"),
        quick=True,
        start_every_hours=48.0,
        markets=markets,
    )
    summary = run.summary()
    rows = [r for r in summary.classes if r.scenario.market]
    assert rows and all(spec.name in r.scenario.key for r in rows)
    for row in rows:
        bound = row.policies["omniscient"]
        assert bound.gap_to_bound == 0.0
        for stats in row.policies.values():
            assert stats.gap_to_bound is not None and stats.gap_to_bound >= -1e-9
            assert stats.requests_per_hour >= 0 and stats.moves_per_job >= 0
    line = summary.overall["core"]
    material = [r for r in rows if r.material]
    assert line.market_classes == len(material)
    assert (line.market_gap_to_bound is None) == (not material)
    verdict = suite.verdict(summary, best="core")
    doc = verdict.to_dict()
    assert "markets_within_0.10_of_the_bound_and_0.15_in_each" in doc
    assert doc["forecast_worth"] is not None  # the flat-prior ablation ran beside it
    suite.plot_suite(summary, tmp_path / "suite.png")
    assert (tmp_path / "suite.png").read_bytes()[:4] == b"\x89PNG"

"""`spotwise plan --skypilot`: the plan's pools in forecast-cost order as a SkyPilot task on spot,
checked against SkyPilot's own task schema."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import yaml

from spotwise.policy.market import PoolTerms, Risk
from spotwise.policy.plan import PlanInputs, plan_job
from spotwise.policy.service.skypilot import skypilot_task, write_task
from spotwise.pricing.quotes import Quote


def pool(provider: str, region: str, zone: str, kind: str, spot: float, mtbf: float) -> PoolTerms:
    return PoolTerms(
        provider=provider,
        region=region,
        zone=zone,
        instance_type=kind,
        spot=Quote(usd_per_hour=spot, source="test", as_of="2024-01-01T00:00:00+00:00"),
        on_demand=Quote(usd_per_hour=3.06, source="test"),
        risk=Risk(mtbf_hours=mtbf, kind="trace", source="test"),
    )


POOLS = [
    pool("aws", "us-east-1", "us-east-1a", "p3.2xlarge", 1.2, 3.0),
    pool("aws", "us-east-2", "us-east-2b", "p3.2xlarge", 0.9, 20.0),
    pool("gcp", "us-central1", "", "n1-standard-8", 0.8, 10.0),
]


def test_the_task_lists_the_plan_pools_in_its_order_on_spot(tmp_path: Path) -> None:
    plan = plan_job(PlanInputs(gpu_hours=20, deadline_hours=60), POOLS)
    path = tmp_path / "task.yaml"
    write_task(skypilot_task(plan, run="python train.py --ckpt s3://b/ck", top=2), plan, path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    text = path.read_text()
    assert text.startswith("# Written by `spotwise plan --skypilot`")
    task = yaml.safe_load(text)
    ordered = task["resources"]["ordered"]
    assert task["resources"]["use_spot"] is True
    ranked = [p.pool for p in plan.pools[:2]]
    assert [(r["cloud"], r["region"], r.get("zone", "")) for r in ordered] == [
        (p.provider, p.region, p.zone) for p in ranked
    ]
    assert task["envs"]["SPOTWISE_MTBF_S"] == str(round(plan.best.pool.mtbf_hours * 3600))
    assert task["run"] == "python train.py --ckpt s3://b/ck"


def test_skypilot_accepts_the_task_by_its_own_schema() -> None:
    sky_schemas = pytest.importorskip("sky.utils.schemas")
    from sky.utils import common_utils

    plan = plan_job(PlanInputs(gpu_hours=20, deadline_hours=60), POOLS)
    task = skypilot_task(plan, run="python train.py", top=3)
    common_utils.validate_schema(task, sky_schemas.get_task_schema(), "Invalid task YAML: ")
    assert {r["cloud"] for r in task["resources"]["ordered"]} == {"aws", "gcp"}
    assert task["envs"]["SPOTWISE_NOTICES"] == "aws,gcp"
    broken = {**task, "envs": {"SPOTWISE_MTBF_S": [7200]}}  # the check can fail
    with pytest.raises(Exception, match="Invalid task YAML"):
        common_utils.validate_schema(broken, sky_schemas.get_task_schema(), "Invalid task YAML: ")

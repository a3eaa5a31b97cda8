"""Each cloud's profile: its registry key is its name, its zones name their regions, its
launch form's bucket gives the checkpoint URL's container, and its collector is declared as
data with its run in its own folder."""

from __future__ import annotations

import importlib

import pytest

from spotwise.pricing.clouds.profile import (
    CollectOption,
    Collector,
    CollectorModule,
    CollectValues,
)
from spotwise.pricing.clouds.registry import PROFILES


def test_each_profile_is_registered_by_its_own_name_and_launch_form() -> None:
    assert PROFILES and all(p.name == name == p.launch.cloud for name, p in PROFILES.items())
    assert len({p.launch.scheme for p in PROFILES.values()}) == len(PROFILES)
    for profile in PROFILES.values():
        assert profile.storage.source.startswith("https://") and profile.storage.as_of


def test_each_profile_names_its_price_grid_and_its_gpu_prefixes_in_lower_case() -> None:
    assert {name: p.price_grid for name, p in PROFILES.items()} == {
        "aws": "h",  # a spot history that changes within the hour
        "gcp": "D",
        "azure": "D",
        "huawei": "D",  # list prices read once a day
    }
    assert all(p.gpu_prefixes for p in PROFILES.values())
    assert all(x == x.lower() for p in PROFILES.values() for x in p.gpu_prefixes)


@pytest.mark.parametrize(
    ("cloud", "zone", "region"),
    [
        ("aws", "us-east-1a", "us-east-1"),
        ("aws", "us-east-1", "us-east-1"),
        ("gcp", "us-central1-a", "us-central1"),
        ("gcp", "europe-west4-b", "europe-west4"),
    ],
)
def test_a_zone_names_its_region_by_its_clouds_rule(cloud: str, zone: str, region: str) -> None:
    assert PROFILES[cloud].region_of(zone) == region


def test_an_azure_bucket_is_an_account_and_a_container_and_urls_name_the_container() -> None:
    assert PROFILES["azure"].launch.container("acct/box") == "box"
    assert PROFILES["gcp"].launch.container("my-bucket") == "my-bucket"


def test_each_clouds_collector_runs_the_collector_module_of_its_own_folder() -> None:
    for name, profile in PROFILES.items():
        run = profile.collector.run
        assert isinstance(run, CollectorModule)
        assert run.module == f"spotwise.pricing.clouds.{name}.collector"
        assert callable(importlib.import_module(run.module).collect)


def test_a_collect_option_is_read_by_its_first_flags_words() -> None:
    switch = CollectOption(flag="--placement-scores/--no-placement-scores", type=bool, help="h")
    assert switch.name == "placement_scores"
    assert switch.flags == ("--placement-scores", "--no-placement-scores")
    values = CollectValues({"since": None, "region": "r1", "max_attempts": 3, "on": True})
    assert values.optional_text("since") is None and values.text("region") == "r1"
    assert values.number("max_attempts") == 3 and values.switch("on")
    with pytest.raises(TypeError, match="'on' is True, not a number"):
        values.number("on")


def test_a_collector_must_take_the_flags_its_collect_lines_name() -> None:
    options = (CollectOption(flag="--zone", type=str, help="h"),)
    with pytest.raises(ValueError, match="names --kinds but has no such option"):
        Collector(
            help="h",
            options=options,
            run=CollectorModule("x"),
            region_flag="--zone",
            shape_flag="--kinds",
            per_region=False,
            needs_region=None,
            gpu_flag=None,
        )
    with pytest.raises(ValueError, match="--store is every command's"):
        Collector(
            help="h",
            options=(*options, CollectOption(flag="--store", type=str, help="h")),
            run=CollectorModule("x"),
            region_flag="--zone",
            shape_flag="--zone",
            per_region=False,
            needs_region=None,
            gpu_flag=None,
        )

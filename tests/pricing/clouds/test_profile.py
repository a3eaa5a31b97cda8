"""Each cloud's profile: its registry key is its name, its zones name their regions, and its
launch form's bucket gives the checkpoint URL's container."""

from __future__ import annotations

import pytest

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

"""The clouds Spotwise knows, by name: a provider name in a store row, a flag or a request only
ever selects an entry here, never code to load. A cloud is its profile here (one line) and its
folder under ``executor/clouds/`` (one line in that registry); docs/clouds.md."""

from __future__ import annotations

from spotwise.pricing.clouds import aws, azure, gcp, huawei
from spotwise.pricing.clouds.profile import CloudProfile

PROFILES: dict[str, CloudProfile] = {
    p.name: p for p in (aws.PROFILE, gcp.PROFILE, azure.PROFILE, huawei.PROFILE)
}
"""Each cloud's profile, by provider name."""

"""The GCP settings of a job: what the shared options may name, each refusal one line."""

from __future__ import annotations

import pytest

from spotwise.executor.clouds.gcp.cloud import GcpCloud
from spotwise.executor.clouds.gcp.fake.compute import GcpLocal
from spotwise.executor.errors import ExecutorError
from tests.executor.clouds.gcp.conftest import options


def test_a_bid_a_bad_shape_and_a_bad_project_are_refused_in_one_line(gcp: GcpLocal) -> None:
    cloud = GcpCloud()
    with pytest.raises(ExecutorError, match=r"^--max-price: GCP Spot VMs take no bid"):
        cloud.target(options(gcp, max_price=1.0))
    with pytest.raises(ExecutorError, match="is not a GCE machine type"):
        cloud.target(options(gcp, instance_type="p3.2xlarge"))
    with pytest.raises(ExecutorError, match="is not a GCP project id"):
        cloud.target(options(gcp, project="My Project"))

"""The reference price is the reference shape's only: another shape's missing price names the
flag that gives it and the ``collect`` command of the cloud that owns the shape."""

from __future__ import annotations

import pytest

from spotwise.pricing import gpus
from spotwise.pricing.collect_commands import COLLECTORS
from spotwise.pricing.quotes import REFERENCE_SOURCE, reference
from tests.fakes import toy_collector


def _refused(market: str, shape: str, region: str | None = None) -> str:
    with pytest.raises(ValueError) as caught:
        reference(market, shape, f"{market} price of {shape}", "--price", region)
    return str(caught.value)


def test_the_reference_shape_is_quoted_the_labelled_reference_price() -> None:
    assert reference("spot", "P3.2xlarge", "spot price", "--spot-price").source == REFERENCE_SOURCE


def test_an_aws_shape_names_collect_aws_as_before() -> None:
    assert _refused("spot", "g5.xlarge") == (
        "no spot price of g5.xlarge in the store: give it with --price, or collect it "
        "(spotwise collect aws --instance-types g5.xlarge)"
    )
    assert _refused("on_demand", "g5.xlarge", "us-west-2").endswith(
        "(spotwise collect aws --on-demand --region us-west-2 --instance-types g5.xlarge)"
    )


def test_a_gcp_or_azure_shape_names_its_clouds_collect_not_aws() -> None:
    assert _refused("spot", "a2-highgpu-1g", "us-central1").endswith(
        "(spotwise collect gcp --regions us-central1 --shapes a2-highgpu-1g)"
    )
    assert _refused("on_demand", "Standard_NC6s_v3", "eastus").endswith(
        "(spotwise collect azure --regions eastus --vm-sizes Standard_NC6s_v3)"
    )


def test_a_shape_no_cloud_owns_names_every_clouds_collect() -> None:
    said = _refused("spot", "x9", "r1")
    assert all(f"{cloud}: spotwise collect {cloud} " in said for cloud in COLLECTORS)


def test_a_fourth_clouds_shape_names_that_clouds_collect(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(COLLECTORS, "toy", toy_collector.COLLECTOR)
    monkeypatch.setattr(gpus, "cloud_of", lambda shape, path=None: "toy")
    assert _refused("spot", "toy.gpu1", "r1").endswith(
        "(spotwise collect toy --zone r1 --kinds toy.gpu1)"
    )

"""What a plan knows of each cloud beside compute prices: its storage list, its launch form,
and whether a checkpoint fits its notice."""

from __future__ import annotations

from spotwise.executor.clouds.registry import CLOUDS
from spotwise.policy.pools import clouds as plan_clouds
from spotwise.pricing.clouds.registry import PROFILES

NOTICES = {name: cloud.notice_s for name, cloud in CLOUDS.items() if name in PROFILES}
"""The notices of the clouds a plan ranks: those with prices (a pricing profile)."""


def test_every_launch_form_is_the_clouds_own() -> None:
    """The plan's next step writes each cloud's storage URL and flags as the launchers and
    `spotwise run` know them; the notice windows are the launchers' (one definition)."""
    from spotwise.executor.clouds.aws import setup as aws_setup
    from spotwise.executor.clouds.azure import storage as azure_storage
    from spotwise.executor.clouds.gcp import setup as gcp_setup
    from spotwise.executor.clouds.huawei import setup as huawei_setup

    assert set(plan_clouds.LAUNCH_FORMS) == set(PROFILES) == set(plan_clouds.STORAGE_LISTS)
    assert set(PROFILES) <= set(CLOUDS)
    for name, form in plan_clouds.LAUNCH_FORMS.items():
        assert form.scheme == CLOUDS[name].storage_scheme
    for module in (aws_setup, gcp_setup, azure_storage, huawei_setup):
        assert module.CHECKPOINT_PREFIX == plan_clouds.CHECKPOINT_PREFIX
    assert NOTICES == {"aws": 120.0, "gcp": 30.0, "azure": 30.0, "huawei": 120.0}


def test_the_notice_line_names_the_clouds_whose_notice_a_checkpoint_outlasts() -> None:
    notices = {"gcp": 30.0, "aws": 120.0, "azure": 30.0}
    assert plan_clouds.notice_line(notices, 30) == (
        "the last checkpoint (30 s to write) fits every notice (aws 120 s, azure 30 s, gcp 30 s)"
    )
    assert plan_clouds.notice_line(notices, 45.4) == (
        "the last checkpoint takes 45 s to write, longer than the notice of azure, gcp (aws "
        "120 s, azure 30 s, gcp 30 s): there a preemption loses the work since the previous "
        "checkpoint; a smaller or incremental checkpoint, or a faster store, makes it fit"
    )

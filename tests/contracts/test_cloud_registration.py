"""A fourth cloud registered at run time (a toy: its profile in PROFILES, with its declared
collector, and its Cloud in CLOUDS) reaches the surfaces that read the registries when they are
used: `spotwise check toy` runs its check, `spotwise run --launcher toy` its settings,
`spotwise collect toy` its collector's run (its flags from the declaration),
``SPOTWISE_NOTICES=toy`` builds its notice source, and pricing reads its profile (its GPU
shapes, its zones). The ``setup``, ``check``, ``gc`` and ``collect`` commands are made when the
CLI is imported: a cloud registered later has them once ``cloud_commands._register`` and
``collect_commands._register`` make them, as the import does for each cloud."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from spotwise.core.settings import CloudEndpoint
from spotwise.executor.clouds.base import Check, CloudOptions, CloudTarget, Say, SetUp, Sweep
from spotwise.executor.clouds.code_bundle import Code, ShippedCode
from spotwise.executor.clouds.registry import CLOUDS, sources_from_env
from spotwise.executor.errors import ExecutorError
from spotwise.executor.launchers.base import Launcher
from spotwise.executor.notices import MetadataSource, Notice
from spotwise.pricing.clouds.registry import PROFILES
from spotwise.pricing.store import MarketStore
from tests.conftest import CliRun
from tests.fakes import toy_collector

TOY = toy_collector.TOY


class ToyNotice(MetadataSource):
    name = TOY
    notice_s = 42.0
    endpoint = CloudEndpoint("SPOTWISE_TOY_METADATA_URL", "http://169.254.169.254", https=False)

    def poll(self) -> Notice | None:
        return None


@dataclass(frozen=True, slots=True)
class ToyTarget:
    cloud: str = TOY
    workdir: str = "."
    instance_type: str = "toy.gpu1"
    zones_or_default: tuple[str, ...] = ("toy-1-a",)
    home_region: str = "toy-1"

    def require_complete(self) -> None:
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"cloud": self.cloud, "instance_type": self.instance_type}


class ToyCloud:
    """The members a `check` and a `run` up to its launch read; the others are not reached."""

    name = TOY
    storage_scheme = TOY
    notice_kind = ToyNotice
    notice_s = ToyNotice.notice_s
    docs = "docs/toy.md"

    def target(self, options: CloudOptions) -> ToyTarget:
        if options.instance_type == "toy.refused":
            raise ExecutorError("--instance-type toy.refused: the toy cloud refuses it")
        return ToyTarget(instance_type=options.instance_type or "toy.gpu1")

    def check(self, target: CloudTarget) -> Iterator[Check]:
        yield Check("credentials", "ok", f"the toy account, {target.instance_type}")

    def target_from_dict(self, data: Mapping[str, Any]) -> CloudTarget:
        raise NotImplementedError

    def ship_code(
        self, target: CloudTarget, *, ignore_file: Path | None = None, wheel: Path | None = None
    ) -> ShippedCode:
        raise NotImplementedError

    def launcher(
        self,
        target: CloudTarget,
        code: Code,
        secrets: dict[str, str] | None = None,
        *,
        job_id: str,
    ) -> Launcher:
        raise NotImplementedError

    def job_instances(self, target: CloudTarget, job_id: str) -> list[str]:
        raise NotImplementedError

    def checkpoint_url(self, target: CloudTarget, run: str) -> str:
        raise NotImplementedError

    def checkpoint_bytes(self, target: CloudTarget, url: str) -> int:
        raise NotImplementedError

    def set_up(self, target: CloudTarget, say: Say) -> SetUp:
        raise NotImplementedError

    def sweep(self, target: CloudTarget) -> Sweep:
        raise NotImplementedError


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> Iterator[ToyCloud]:
    """The toy in both registries, and its setup/check/gc/collect commands, for this test
    only; the stores take its rows (their providers are read from PROFILES at import)."""
    from spotwise import cloud_commands, collect_commands
    from spotwise.pricing import frames

    cloud = ToyCloud()
    monkeypatch.setitem(CLOUDS, TOY, cloud)
    monkeypatch.setitem(
        PROFILES,
        TOY,
        replace(
            PROFILES["gcp"],
            name=TOY,
            title="Toy Cloud",
            collector=toy_collector.COLLECTOR,
            launch=replace(PROFILES["gcp"].launch, cloud=TOY, scheme=TOY),
            skypilot=None,
            gpu_prefixes=("toy.gpu",),
        ),
    )
    monkeypatch.setattr(frames, "PROVIDERS", frames.PROVIDERS | {TOY})
    for commands in (
        cloud_commands.setup_app,
        cloud_commands.check_app,
        cloud_commands.gc_app,
        collect_commands.collect_app,
    ):
        monkeypatch.setattr(commands, "registered_commands", list(commands.registered_commands))
    cloud_commands._register(cloud)
    collect_commands._register(TOY, PROFILES[TOY].collector)
    yield cloud


def test_check_toy_runs_the_toys_check(toy: ToyCloud, cli_in_process: CliRun) -> None:
    result = cli_in_process("check", TOY, "--instance-type", "toy.gpu8")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["✓ credentials: the toy account, toy.gpu8", "ready"]


def test_run_launcher_toy_reaches_the_toys_settings(toy: ToyCloud, cli_in_process: CliRun) -> None:
    result = cli_in_process(
        "run", "--launcher", TOY, "--instance-type", "toy.refused", "--", "python", "-c", "1"
    )
    assert result.returncode == 1
    assert "the toy cloud refuses it" in result.stderr  # the name was taken, the toy asked


def test_spotwise_notices_names_the_toys_notice_source(
    toy: ToyCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPOTWISE_NOTICES", f"aws,{TOY}")
    monkeypatch.setenv("SPOTWISE_TOY_METADATA_URL", "http://127.0.0.1:9/")
    monkeypatch.setenv("SPOTWISE_AWS_IMDS_URL", "http://127.0.0.1:9")
    first, source = sources_from_env()
    assert first.name == "aws" and isinstance(source, ToyNotice)
    assert source.base_url == "http://127.0.0.1:9"
    assert source.notice_s == toy.notice_s == 42.0


def test_pricing_reads_the_toys_profile(toy: ToyCloud) -> None:
    from spotwise.pricing.frames import region_of_zone
    from spotwise.pricing.views import is_gpu

    assert is_gpu("toy.gpu1") and not is_gpu("toy.cpu1")
    assert region_of_zone(TOY, "toy-1-a") == "toy-1"


def test_collect_toy_takes_the_flags_its_collector_declares(
    toy: ToyCloud, cli_in_process: CliRun
) -> None:
    result = cli_in_process("collect", "--help")
    assert "Collect the toy cloud's made-up prices." in result.stdout
    result = cli_in_process("collect", TOY, "--help")
    assert result.returncode == 0, result.stderr
    for flag in ("--zone", "--kinds", "--gpu", "--hours", "--spot / --no-spot", "--store"):
        assert flag in result.stdout
    assert "[required]" in result.stdout and "x>=1" in result.stdout
    result = cli_in_process("collect", TOY, "--kinds", "toy.gpu1")
    assert result.returncode == 2 and "Missing option '--zone'" in result.stderr


def test_collect_toy_runs_its_collector_into_the_store(
    toy: ToyCloud, cli_in_process: CliRun, store_file: Path
) -> None:
    args = ("collect", TOY, "--zone", "toy-1-a", "--kinds", "toy.gpu1,toy.gpu8", "--hours", "3")
    first = cli_in_process(*args)
    assert first.returncode == 0, first.stderr
    assert first.stderr.splitlines() == ["read 2 kinds", "collected toy: 6 prices (6 new)"]
    again = cli_in_process(*args, "--no-spot")
    assert again.returncode == 0, again.stderr
    with MarketStore.open(store_file, read_only=True) as store:
        stored = store.query(
            "SELECT provider, region, market, count(*) AS n, max(price) AS price FROM prices "
            "GROUP BY ALL ORDER BY market"
        )
    assert stored.to_dict("records") == [
        {"provider": TOY, "region": "toy-1", "market": "on_demand", "n": 6, "price": 1.0},
        {"provider": TOY, "region": "toy-1", "market": "spot", "n": 6, "price": 0.25},
    ]


def test_collect_toy_refuses_a_bad_flag_in_one_line_before_making_the_store(
    toy: ToyCloud, cli_in_process: CliRun, store_file: Path
) -> None:
    result = cli_in_process("collect", TOY, "--zone", "toy-1-a", "--kinds", "toy gpu")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "error: --kinds: 'toy gpu' is not a name (letters, digits, '.', '_', '+' and '-')"
    ]
    assert not store_file.exists()

"""The ``spotwise collect`` line that stores a cloud's prices: the one home of what every message
about a missing or stale price tells a user to run."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from spotwise.pricing.clouds.profile import Collector
from spotwise.pricing.clouds.registry import PROFILES

COLLECTORS: dict[str, Collector] = {name: p.collector for name, p in PROFILES.items()}
"""Each cloud with a ``spotwise collect`` command, by name."""


def collect_command(
    cloud: str,
    *,
    regions: Sequence[str] = (),
    shapes: Sequence[str] = (),
    gpu: str | None = None,
    on_demand: bool = False,
) -> str:
    """The command that stores ``cloud``'s prices of ``shapes`` (or of ``gpu``'s shapes) in
    ``regions``; ``on_demand``: its on-demand prices, where a separate run stores them."""
    collector = COLLECTORS[cloud]
    if len(regions) > 1 and not collector.region_flag.endswith("s"):
        raise ValueError(f"collect {cloud} takes one region a run, not {len(regions)}")
    words = ["spotwise", "collect", cloud]
    if on_demand and collector.on_demand_flag:
        words.append(collector.on_demand_flag)
    if regions:
        words += [collector.region_flag, ",".join(regions)]
    if shapes:
        words += [collector.shape_flag, ",".join(shapes)]
    if gpu and collector.gpu_flag:
        words += [collector.gpu_flag, gpu]
    return " ".join(words)


def collect_each(clouds: Iterable[str]) -> str:
    """Each of ``clouds``'s plain ``spotwise collect`` command, once, in order, quoted as code
    and ``/``-separated: what a message about stale or missing prices of those clouds names."""
    return " / ".join(f"`{collect_command(cloud)}`" for cloud in dict.fromkeys(clouds))


def collect_all(cloud: str, *, shapes: Sequence[str], gpu: str) -> str:
    """The command(s) that store ``cloud``'s spot and on-demand prices of ``gpu``'s ``shapes``,
    in the region the command needs where it needs one."""
    collector = COLLECTORS[cloud]
    regions = [collector.needs_region] if collector.needs_region else []
    if collector.gpu_flag is None:  # named by shape
        spot = collect_command(cloud, regions=regions, shapes=shapes)
    else:
        spot = collect_command(cloud, regions=regions, gpu=gpu)
    if collector.on_demand_flag is None:
        return spot
    on_demand = collect_command(cloud, regions=regions, shapes=shapes, on_demand=True)
    return f"{spot}, then {on_demand}"


def for_shape(shape: str, command: Callable[[str], str]) -> str:
    """``command`` of the cloud that owns ``shape`` in the GPU table
    (:func:`spotwise.pricing.gpus.cloud_of`), else each cloud's (``CLOUD: command``,
    ``;``-separated): what a message about ``shape``'s prices tells a user to run."""
    from spotwise.pricing.gpus import cloud_of

    owner = cloud_of(shape)
    if owner is not None:
        return command(owner)
    return "; ".join(f"{cloud}: {command(cloud)}" for cloud in COLLECTORS)


def collect_shape(shape: str) -> str:
    """The command that stores ``shape``'s spot prices: its cloud's where the GPU table has the
    shape, else each cloud's (:func:`for_shape`), in the region each needs."""

    def command(cloud: str) -> str:
        region = COLLECTORS[cloud].needs_region
        return collect_command(cloud, regions=[region] if region else [], shapes=[shape])

    return for_shape(shape, command)

"""A cloud's profile: the facts about a cloud that pricing, the plan and the dashboard read
(the executor's side of the cloud is its folder under ``executor/clouds/``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

OptionValue = str | int | bool | None
"""A value of a ``collect`` flag, as the command line parsed it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectOption:
    """One flag of a cloud's ``spotwise collect`` command, as plain data: the CLI makes the
    option from it (its help as ``--help`` prints it), the run reads its value by :attr:`name`."""

    flag: str
    """``--region``; a switch with its negation: ``--placement-scores/--no-placement-scores``."""
    type: type[str] | type[int] | type[bool]
    help: str
    default: OptionValue = None
    required: bool = False
    """No default: the command refuses to run without it."""
    show_default: bool = True
    """``--help`` prints the default (never a None one)."""
    min: int | None = None
    """The least value of an ``int`` option."""

    @property
    def name(self) -> str:
        """The value's name: the first flag's words in snake case (``placement_scores``)."""
        return self.flag.split("/")[0].removeprefix("--").replace("-", "_")

    @property
    def flags(self) -> tuple[str, ...]:
        """Every flag it takes (a switch's two)."""
        return tuple(self.flag.split("/"))


@dataclass(frozen=True, slots=True)
class CollectValues:
    """The parsed values of a ``collect`` command's options, by :attr:`CollectOption.name`."""

    given: Mapping[str, OptionValue]

    def text(self, name: str) -> str:
        """A text option with a text default."""
        value = self.given[name]
        if not isinstance(value, str):
            raise TypeError(f"collect option {name!r} is {value!r}, not text")
        return value

    def optional_text(self, name: str) -> str | None:
        """A text option whose default is None."""
        return None if self.given[name] is None else self.text(name)

    def number(self, name: str) -> int:
        """An ``int`` option."""
        value = self.given[name]
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"collect option {name!r} is {value!r}, not a number")
        return value

    def switch(self, name: str) -> bool:
        """A ``bool`` option (a flag or a switch)."""
        value = self.given[name]
        if not isinstance(value, bool):
            raise TypeError(f"collect option {name!r} is {value!r}, not true or false")
        return value


@dataclass(frozen=True, slots=True)
class Line:
    """One line a collection prints on stderr: ``lead`` (what was collected, highlighted) then
    ``text``; without a lead, ``text`` as it is (a source skipped, and why)."""

    text: str
    lead: str = ""


@dataclass(frozen=True, slots=True)
class Collected:
    """What a collection ran into, as the lines the command prints."""

    lines: tuple[Line, ...]


CollectRun = Callable[[Callable[[], Path], CollectValues, Callable[[str], None]], Collected]
"""A cloud's collection: given the store (a call that makes it ready and returns its path, made
once the options are checked: a refused flag leaves no store behind), the options' values and a
progress callback (a short line: what is being read, how far), it stores what it collected and
says what in lines. It refuses in one line, a :class:`~spotwise.pricing.errors.PricingError`
(what, where, what to do), never a traceback."""


@dataclass(frozen=True, slots=True)
class CollectorModule:
    """A cloud's collection run: ``collect`` (a :data:`CollectRun`) of ``module``, its folder's
    ``collector.py``, imported only when it runs. What a run imports (its sources, the store,
    the frames' checks) reads the registry, which imports the profiles: a profile that imported
    its run would tie the two in a cycle."""

    module: str
    """``f"{__name__}.collector"`` in the cloud's package."""

    def __call__(
        self, store: Callable[[], Path], values: CollectValues, progress: Callable[[str], None]
    ) -> Collected:
        from importlib import import_module

        run: CollectRun = import_module(self.module).collect
        return run(store, values, progress)


@dataclass(frozen=True, slots=True, kw_only=True)
class Collector:
    """A cloud's ``spotwise collect NAME`` command: its flags and its run, and how the lines that
    tell a user to run it are written."""

    help: str
    """The command's help (``spotwise collect NAME --help``)."""
    options: tuple[CollectOption, ...]
    """Its flags in the order ``--help`` lists them (``--store`` is every command's, last)."""
    run: CollectRun
    """What ``spotwise collect NAME`` runs (a cloud's: :class:`CollectorModule`)."""
    region_flag: str
    """``--region`` (one region a run) or ``--regions`` (comma-separated)."""
    shape_flag: str
    """The flag that names instance types, machine shapes or VM sizes."""
    per_region: bool
    """Its catalog prices a shape per region, not per zone."""
    needs_region: str | None
    """A region to name where the command needs one and the caller has none (None: optional)."""
    on_demand_flag: str | None = None
    """The flag of a separate run for on-demand prices (None: one run stores both)."""
    gpu_flag: str | None = "--gpu"
    """The flag that picks shapes by GPU model (None: none)."""

    def __post_init__(self) -> None:
        names = [option.name for option in self.options]
        if len(set(names)) < len(names) or "store" in names:
            raise ValueError(f"collect options {names}: each once, and --store is every command's")
        taken = {flag for option in self.options for flag in option.flags}
        named = (self.region_flag, self.shape_flag, self.on_demand_flag, self.gpu_flag)
        missing = [flag for flag in named if flag is not None and flag not in taken]
        if missing:
            raise ValueError(f"collect command names {', '.join(missing)} but has no such option")


@dataclass(frozen=True, slots=True, kw_only=True)
class StorageList:
    """A cloud's object-store list prices as the plan and the ledger charge a job's
    checkpoints: read from the provider's pricing page (``source``) on ``as_of``, the first
    tier of a US region, no free tier counted; not collected into the store, and labelled so."""

    usd_per_gb_month: float
    usd_per_1k_writes: float
    egress_usd_per_gb: float
    """Internet egress, first tier: the final checkpoint leaving the cloud once, or a
    checkpoint moving to another cloud."""
    inter_region_usd_per_gb: float
    """A checkpoint read by an instance in another region of the same continent."""
    inter_continent_usd_per_gb: float
    """A checkpoint read by an instance in a region on another continent."""
    source: str
    as_of: str
    """The day the figures were read from ``source`` (ISO date)."""

    def describe(self) -> str:
        """One line: the figures, their page and the day they were read."""
        return (
            f"${self.usd_per_gb_month}/GB-month, ${self.usd_per_1k_writes}/1k writes, egress "
            f"${self.egress_usd_per_gb}/GB (between regions ${self.inter_region_usd_per_gb}/GB, "
            f"continents ${self.inter_continent_usd_per_gb}/GB; list prices of {self.source}, "
            f"read {self.as_of}; not a quote)"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchForm:
    """How ``spotwise run --launcher CLOUD`` is written: its account flags in order, each with
    the placeholder printed when the plan was not given its value, and where it checkpoints."""

    cloud: str
    flags: tuple[tuple[str, str, str], ...]
    """(the setting's name, the flag as this cloud's users know it, its placeholder)."""
    scheme: str
    """The object store's URL scheme (``s3``, ``gs``, ``az``)."""
    bucket_is_account_container: bool = False
    """``--bucket`` is ``ACCOUNT/CONTAINER`` and a URL names the container only (Azure)."""

    def container(self, bucket: str) -> str:
        """The part of ``--bucket`` a checkpoint URL starts with."""
        return bucket.rsplit("/", 1)[-1] if self.bucket_is_account_container else bucket


@dataclass(frozen=True, slots=True, kw_only=True)
class CloudProfile:
    """One cloud as pricing, the plan and the dashboard know it."""

    name: str
    """The provider name of store rows, ``collect NAME`` and ``--launcher NAME``."""
    title: str
    """How people write it (``AWS``, ``Azure``): the dashboard's headings."""
    collector: Collector
    storage: StorageList
    launch: LaunchForm
    zone_separator: str | None
    """What ends a region's name in a zone's (``-`` in ``us-central1-a``); None: a zone is its
    region and one letter (``us-east-1a``)."""
    skypilot: str | None
    """Its name in a SkyPilot task (None: SkyPilot does not launch there)."""
    price_grid: str = "D"
    """The grid its stored prices are forecast on: ``h`` for a spot history that changes within
    a day, ``D`` for a catalog read once a day."""
    gpu_prefixes: tuple[str, ...] = ()
    """Lower-case starts of its shapes' names that carry accelerators (``p3`` of ``p3.2xlarge``),
    beside the GPU table's shapes."""
    hourly_bands: bool = False
    """Whether its stored interruption bands count evictions an hour (on a running VM's scale:
    a plan turns them into an MTBF), not a month (shown beside the risk only)."""

    def region_of(self, zone: str) -> str:
        """The region of an availability zone (``us-east-1a`` → ``us-east-1``, ``us-central1-a``
        → ``us-central1``)."""
        if self.zone_separator is not None:
            return zone.rsplit(self.zone_separator, 1)[0]
        return zone[:-1] if zone and zone[-1].isalpha() else zone

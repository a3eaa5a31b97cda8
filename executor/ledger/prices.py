"""The prices a supervised job pays and is compared against, each with where it came from and
when it held (docs/design.md, "Money is real or labelled").

Per spot pool: the price given with ``--spot-price``, else the newest spot price of its zone
and instance type in the store. Per region: the on-demand price of the same instance type given
with ``--on-demand-price``, else from the store, else estimated from the region's Spot Advisor
saving of the same era as its spot prices. What is known from nowhere is the reference
p3.2xlarge price, labelled as not a quote. The ledger's on-demand baseline is the hours the job
needed, each priced at the on-demand rate of the region it ran in. A quote older than a week
when the book was made is flagged stale, by the rule ``spotwise plan`` flags its inputs with
(:func:`spotwise.pricing.quotes.is_stale`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.pricing.collect_commands import COLLECTORS, collect_command, for_shape
from spotwise.pricing.errors import StoreError
from spotwise.pricing.frames import region_of_zone
from spotwise.pricing.quotes import (
    REFERENCE_INSTANCE_TYPE,
    REFERENCE_SOURCE,
    STALE_AFTER_DAYS,
    Quote,
    given,
    is_stale,
    on_demand_quote,
    reference,
    store_quote,
)
from spotwise.pricing.sources.traces import cbl_pool
from spotwise.pricing.store import MarketStore


@dataclass(frozen=True, slots=True, kw_only=True)
class PriceBook:
    """Spot quotes per pool and on-demand quotes per region, for one instance type."""

    instance_type: str
    home_region: str
    """Where an on-demand instance of the job runs."""
    spot: dict[str, Quote] = field(default_factory=dict)
    on_demand: dict[str, Quote] = field(default_factory=dict)
    region_of: dict[str, str] = field(default_factory=dict)
    """Each pool's region."""
    priced_at: str | None = None
    """When the book was made (ISO 8601, UTC): what its quotes' age is judged against (None:
    a book from before, or a flat one)."""

    def spot_quote(self, pool: str) -> Quote:
        """The spot price of ``pool``."""
        return self.spot[pool]

    def on_demand_quote(self, pool: str | None = None) -> Quote:
        """The on-demand price of the instance type in ``pool``'s region (None: the home one)."""
        region = self.region_of.get(pool, self.home_region) if pool else self.home_region
        return self.on_demand.get(region) or self.on_demand[self.home_region]

    def used_by(self, pools: Sequence[str]) -> PriceBook:
        """The book of a job that ran in ``pools``: their spot quotes, and the on-demand
        quotes of their regions and the home one (what its report shows)."""
        regions = {self.home_region, *(self.region_of.get(p, self.home_region) for p in pools)}
        return replace(
            self,
            spot={p: q for p, q in self.spot.items() if p in pools},
            on_demand={r: q for r, q in self.on_demand.items() if r in regions},
        )

    def quote_lines(self) -> list[str]:
        """One line per distinct quote: the pools (or regions) it prices, the price, its
        source and time, and whether it was stale when the book was made."""
        lines = []
        for market, by_place in (("spot", self.spot), ("on-demand", self.on_demand)):
            groups: dict[Quote, list[str]] = {}
            for place, quote in by_place.items():
                groups.setdefault(quote, []).append(place or "every pool")
            for quote, places in groups.items():
                stale = stale_mark(quote, self.priced_at)
                lines.append(f"{market} {', '.join(places)}: {quote.describe()}{stale}")
        return lines

    def has_references(self) -> bool:
        """Whether any of its prices is the reference one, not a quote."""
        quotes = [*self.spot.values(), *self.on_demand.values()]
        return any(q.source == REFERENCE_SOURCE for q in quotes)

    def typical_spot(self) -> float:
        """The median spot price over the pools (upper median): the job's terms for a policy
        that takes one spot price."""
        prices = sorted(q.usd_per_hour for q in self.spot.values())
        return prices[len(prices) // 2]

    def to_dict(self) -> dict[str, Any]:
        """The book as plain JSON-ready values."""
        return asdict(self)

    @classmethod
    def from_dict(cls, doc: object, where: str) -> PriceBook:
        """A book read back from :meth:`to_dict`'s JSON.

        Raises:
            StoreError: naming ``where`` and the field, when ``doc`` is no price book.
        """
        if not isinstance(doc, dict):
            raise StoreError(f"{where}: not a price book: {_short(doc)}")
        priced_at = doc.get("priced_at")
        if priced_at is not None and not isinstance(priced_at, str):
            raise StoreError(f"{where}: priced_at must be a time, got {_short(priced_at)}")
        region_of = _mapping(doc, "region_of", where)
        if not all(isinstance(r, str) for r in region_of.values()):
            raise StoreError(f"{where}: region_of must map pools to regions")
        return cls(
            instance_type=_text(doc, "instance_type", where),
            home_region=_text(doc, "home_region", where),
            spot=_quotes(doc, "spot", where),
            on_demand=_quotes(doc, "on_demand", where),
            region_of={str(pool): str(region) for pool, region in region_of.items()},
            priced_at=priced_at,
        )

    def stale_lines(self) -> list[str]:
        """What of the book was stale when it was made: one line per market, naming the places
        and the newest such price, and what to do."""
        lines = []
        for market, by_place in (("spot", self.spot), ("on-demand", self.on_demand)):
            stale = {
                p or "every pool": q for p, q in by_place.items() if stale_mark(q, self.priced_at)
            }
            if stale:
                newest = max(str(q.as_of) for q in stale.values())[:10]
                collect = _stale_collect(self, market, [p for p in by_place if p in stale])
                lines.append(
                    f"stale {market} prices ({', '.join(stale)}; the newest of {newest}), older "
                    f"than {STALE_AFTER_DAYS} days: `{collect}` stores fresh ones"
                )
        return lines

    @staticmethod
    def flat(pools: Sequence[str], spot_price: float, on_demand_price: float) -> PriceBook:
        """One spot and one on-demand price for every pool, labelled as reference prices
        (what a test or a job with no store knows)."""
        spot = Quote(usd_per_hour=spot_price, source=REFERENCE_SOURCE)
        return PriceBook(
            instance_type=REFERENCE_INSTANCE_TYPE,
            home_region="",
            spot=dict.fromkeys(pools, spot),
            on_demand={"": Quote(usd_per_hour=on_demand_price, source=REFERENCE_SOURCE)},
        )


def _quotes(doc: dict[str, object], key: str, where: str) -> dict[str, Quote]:
    """``doc[key]``: quotes by place, each checked."""
    quotes = {}
    for place, quote in _mapping(doc, key, where).items():
        at = f"{where}: {key}[{place!r}]"
        if not isinstance(quote, dict):
            raise StoreError(f"{at}: not a quote: {_short(quote)}")
        price, as_of = quote.get("usd_per_hour"), quote.get("as_of")
        if isinstance(price, bool) or not isinstance(price, int | float):
            raise StoreError(f"{at}: usd_per_hour must be a number, got {_short(price)}")
        if as_of is not None and not isinstance(as_of, str):
            raise StoreError(f"{at}: as_of must be a time, got {_short(as_of)}")
        quotes[str(place)] = Quote(
            usd_per_hour=price, source=_text(quote, "source", at), as_of=as_of
        )
    return quotes


def _mapping(doc: dict[str, object], key: str, where: str) -> dict[str, object]:
    """``doc[key]`` as a mapping (missing: empty)."""
    value = doc.get(key, {})
    if not isinstance(value, dict):
        raise StoreError(f"{where}: {key} must be a mapping, got {_short(value)}")
    return value


def _text(doc: dict[str, object], key: str, where: str) -> str:
    """``doc[key]`` as text."""
    value = doc.get(key)
    if not isinstance(value, str):
        raise StoreError(f"{where}: {key} must be text, got {_short(value)}")
    return value


def _short(value: object) -> str:
    """``value`` for an error message, cut to a line."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def stale_mark(quote: Quote, priced_at: str | None) -> str:
    """`` (stale: ...)`` for a quote older than a week when its book was made, else ''."""
    import pandas as pd

    if priced_at is None or not is_stale(quote.as_of, pd.Timestamp(priced_at)):
        return ""
    return f" (stale: older than {STALE_AFTER_DAYS} days when the job was priced)"


def _stale_collect(book: PriceBook, market: str, places: list[str]) -> str:
    """The command that collects fresh ``market`` prices of a book's ``places`` (pools or
    regions): that of the cloud that owns the book's shape, else each cloud's (:func:`for_shape`);
    a cloud whose catalog prices per region collects the shape in those places' regions, one
    priced zone by zone a region R."""
    instance_type = book.instance_type
    region_of = book.region_of
    regions = sorted({region_of.get(p, p) for p in places if region_of.get(p, p)}) or ["R"]

    def command(cloud: str) -> str:
        if COLLECTORS[cloud].per_region:
            return collect_command(cloud, regions=regions, shapes=[instance_type])
        return collect_command(cloud, regions=["R"], on_demand=market == "on-demand")

    return for_shape(instance_type, command)


def requoted(book: PriceBook, store: MarketStore, pools: Sequence[str]) -> PriceBook:
    """``book`` with each reference price of ``pools`` (spot) and of their regions (on-demand)
    replaced by the store's newest quote of its place, where the store has one now (prices
    collected after the job was priced); the book itself when it has none."""
    spot = dict(book.spot)
    for pool in pools:
        if pool in spot and spot[pool].source == REFERENCE_SOURCE:
            zone, pool_type = pool_zone_type(pool, book.instance_type)
            spot[pool] = store_quote(store, "spot", "zone", zone, pool_type) or spot[pool]
    on_demand = dict(book.on_demand)
    regions = {book.home_region, *(book.region_of.get(p, book.home_region) for p in pools)}
    for region in regions:
        quote = on_demand.get(region)
        if region and quote is not None and quote.source == REFERENCE_SOURCE:
            stored = store_quote(store, "on_demand", "region", region, book.instance_type)
            on_demand[region] = stored or quote
    return replace(book, spot=spot, on_demand=on_demand)


def pool_zone_type(pool: str, instance_type: str) -> tuple[str, str]:
    """Zone and instance type of a launcher's pool: a replayed trace's name
    (``us-east-1a_v100_1``) names both; a cloud pool is a zone of ``instance_type``."""
    if "_" in pool:
        return cbl_pool(pool)
    return pool, instance_type


def price_book(
    store: MarketStore,
    pools: Sequence[str],
    *,
    instance_type: str,
    home_region: str | None = None,
    spot_price: float | None = None,
    on_demand_price: float | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> PriceBook:
    """The quotes of ``pools`` (see the module docstring); ``home_region`` defaults to the first
    pool's; the book is stamped with ``clock``'s time."""
    spot: dict[str, Quote] = {}
    region_of: dict[str, str] = {}
    types = set()
    regional = _regional_cloud(instance_type)
    for pool in pools:
        zone, pool_type = pool_zone_type(pool, instance_type)
        types.add(pool_type)
        region_of[pool] = _pool_region(pool, zone, pool_type, home_region)
        spot[pool] = _spot_quote(
            store, pool, zone, region_of[pool], pool_type, regional, spot_price
        )
    the_type = types.pop() if len(types) == 1 else instance_type
    home = home_region or (region_of[pools[0]] if pools else "")
    on_demand = {
        region: _on_demand_in(
            store,
            region,
            the_type,
            regional,
            on_demand_price,
            [spot[p] for p in pools if region_of[p] == region],
        )
        for region in {home, *region_of.values()}
    }
    return PriceBook(
        instance_type=the_type,
        home_region=home,
        spot=spot,
        on_demand=on_demand,
        region_of=region_of,
        priced_at=datetime.fromtimestamp(clock.time(), UTC).isoformat(),
    )


def _pool_region(pool: str, zone: str, pool_type: str, home_region: str | None) -> str:
    """The region of a pool: the home region for a cloud's pools, which are zones of it (an
    Azure zone is "1"), else the zone's region by the rule of the cloud that owns the pool's
    instance type (:func:`~spotwise.pricing.frames.region_of_zone`'s for an unowned one)."""
    from spotwise.pricing.gpus import cloud_of

    in_region = home_region if home_region and "_" not in pool else None
    return in_region or region_of_zone(cloud_of(pool_type) or "", zone)


def _on_demand_in(
    store: MarketStore,
    region: str,
    instance_type: str,
    regional: str | None,
    given_price: float | None,
    spot_here: list[Quote],
) -> Quote:
    """The on-demand quote of one region: the regional catalog's for a GCP or Azure shape
    (unless a price is given), else :func:`on_demand_quote`'s."""
    if regional and given_price is None:
        return _regional_quote(store, "on_demand", regional, region, instance_type)
    return on_demand_quote(store, region, instance_type, spot_here, given_price=given_price)


def _spot_quote(
    store: MarketStore,
    pool: str,
    zone: str,
    region: str,
    instance_type: str,
    regional: str | None,
    spot_price: float | None,
) -> Quote:
    """A pool's spot quote: given, else its region's (a ``regional`` cloud's) or its zone's
    newest in the store, else the reference price."""
    if spot_price is not None:
        return given(spot_price, "--spot-price")
    if regional:
        return _regional_quote(store, "spot", regional, region, instance_type)
    return store_quote(store, "spot", "zone", zone, instance_type) or reference(
        "spot", instance_type, f"spot price of {pool}", "--spot-price"
    )


def _regional_cloud(instance_type: str) -> str | None:
    """The cloud that owns ``instance_type`` when its catalog prices it per region (GCP,
    Azure), else None."""
    from spotwise.pricing.gpus import cloud_of

    cloud = cloud_of(instance_type)
    return cloud if cloud is not None and COLLECTORS[cloud].per_region else None


def _regional_quote(
    store: MarketStore, market: str, cloud: str, region: str, instance_type: str
) -> Quote:
    """The newest ``market`` price of a GCP or Azure shape in ``region``.

    Raises:
        ValueError: when the store has none, naming the flag and the command that collects it.
    """
    quote = store_quote(store, market, "region", region, instance_type)
    if quote is not None:
        return quote
    spot = market == "spot"
    what, flag = ("spot", "--spot-price") if spot else ("on-demand", "--on-demand-price")
    collect = collect_command(cloud, regions=[region], shapes=[instance_type])
    raise ValueError(
        f"no {what} price of {instance_type} in {region} in the store: give it with {flag}, or "
        f"collect it ({collect})"
    )

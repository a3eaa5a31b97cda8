"""The cost ledger: every instance, preemption, notice, migration, lost work and checkpoint of a
supervised job, written to the store as it happens (tables ``jobs`` and ``ledger``).

Hours are the cloud's hours: under the local launcher's replayed traces they are trace hours
(wall time × the replay's clock scale), so costs read as they would have on the real pools.
"""

from __future__ import annotations

import enum
import json
import logging
import os
import socket
import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

import spotwise.executor.ledger.schema  # noqa: F401  (the store holds the executor's tables)
from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.executor.ledger.journal import (
    ENTRY_COLUMNS,
    JOB_COLUMNS,
    Journal,
    LedgerWrite,
    Write,
    apply_writes,
    journal_path,
    pending_writes,
    replay_orphans,
)
from spotwise.executor.ledger.liveness import process_started
from spotwise.executor.ledger.prices import PriceBook
from spotwise.policy.cost import StorageTerms
from spotwise.policy.pools.clouds import STORAGE_LISTS
from spotwise.pricing.errors import PricingError, StoreError
from spotwise.pricing.operational import OperationalStore, open_operational

log = logging.getLogger(__name__)


def new_job_id() -> str:
    """A new job's id: the one id of its ledger rows, log folder, cloud tags, S3 prefix and
    secrets (minted once, before its launcher is built)."""
    return uuid.uuid4().hex[:12]


class EntryKind(enum.StrEnum):
    """What a ledger entry records."""

    LAUNCH = "launch"
    """An instance started (its id in ``detail``, a spot launch's bid in ``price``); its
    ``instance`` entry follows at its end."""
    INSTANCE = "instance"
    NOTICE = "notice"
    PREEMPTION = "preemption"
    MIGRATION = "migration"
    LOST_WORK = "lost_work"
    CHECKPOINT = "checkpoint"
    FAILURE = "failure"
    ON_DEMAND = "on_demand"
    """Why the job goes on demand (the policy's reason, or the preemptions that reached
    ``--on-demand-after``), in ``detail``."""
    DAMAGED_CHECKPOINT = "damaged_checkpoint"
    """A damaged checkpoint copy the guard passed over on resume (its path and step, and the
    step resumed from, in ``detail``)."""


DRILL_DETAIL = "drill (--preempt-after)"
"""The ``detail`` of a drill's notice and preemption: a rehearsal, not the cloud's."""


class JobStatus(enum.StrEnum):
    """Where a supervised job stands."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    PRUNED = "pruned"
    """Stopped for good by a sweep's pruner."""


USD_PER_GB_MONTH = StorageTerms().usd_per_gb_month


def storage_rate(launcher: str) -> float:
    """USD per GB-month of a job's checkpoints: its cloud's object-store list price
    (:data:`~policy.pools.clouds.STORAGE_LISTS`, as the plan charges), else the cost model's."""
    listed = STORAGE_LISTS.get(launcher)
    return listed.usd_per_gb_month if listed else USD_PER_GB_MONTH


@dataclass(frozen=True, slots=True, kw_only=True)
class JobInfo:
    """What the ledger keeps about a job besides its entries."""

    name: str
    command: str
    launcher: str
    compute_hours: float
    deadline_hours: float
    on_demand_price: float
    simulated: bool
    """Run on a replayed market: its hours and dollars are simulated."""
    simulation: str | None = None
    """What the replay was and how fast it ran."""
    checkpoint_usd_per_gb_month: float = USD_PER_GB_MONTH
    prices: PriceBook | None = None
    """The job's price book, sources included."""
    sweep: str | None = None
    """The sweep this job is a trial of (None: a job of its own)."""
    trial: int | None = None
    """The trial's number in its sweep (a retry keeps the number of the trial it retries)."""
    fleet: str | None = None
    """The fleet this job ran in (None: a job of its own)."""
    tier: str | None = None
    """Its priority tier in the fleet: high, normal or low."""


class Ledger:
    """Writes one job's entries to the store as they happen (opening it per write, so others
    can use it in between).

    A write the store cannot take within :attr:`write_wait_s` (another process holds it, or it
    fails) waits, in memory and in the job's pending journal
    (:mod:`spotwise.executor.ledger.journal`), and goes in, in order, at the next try: once a
    second at most, on the next write or on :meth:`retry`, each waiting :attr:`busy_wait_s` for
    the store. The supervisor never stops or dies for the store.
    """

    write_wait_s = 2.0
    """How long one write waits for a busy store before it is kept pending: a store's calls
    hold it for milliseconds, so this covers a host busy enough to stretch them."""
    busy_wait_s = 0.5
    """How long a try of the pending writes waits for the store (at most one try a second):
    long enough to get past the other writers' transactions of the moment, short enough that a
    store held for minutes costs the supervisor at most this each second. (Tried without
    waiting, the writes found the file in another process's transaction of milliseconds and
    stayed pending.)"""
    retry_every_s = 1.0

    def __init__(
        self,
        store_path: Path,
        info: JobInfo,
        job_id: str | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.store_path = store_path
        self._clock = clock
        self.job_id = job_id or new_job_id()
        self._seq = 0
        self._writes: list[LedgerWrite] = []
        self._pending: list[LedgerWrite] = []
        self._journaled = 0
        self._journal = Journal(journal_path(store_path, self.job_id))
        self._last_try = 0.0
        self._busy_since: float | None = None
        self._submit(
            Write.START,
            job_id=self.job_id,
            name=info.name,
            command=info.command,
            launcher=info.launcher,
            started=self._now(),
            status=JobStatus.RUNNING.value,
            compute_hours=info.compute_hours,
            deadline_hours=info.deadline_hours,
            on_demand_price=info.on_demand_price,
            checkpoint_usd_per_gb_month=info.checkpoint_usd_per_gb_month,
            host=socket.gethostname(),
            supervisor_pid=os.getpid(),
            supervisor_started=process_started(os.getpid()),
            simulated=info.simulated,
            prices=json.dumps(info.prices.to_dict()) if info.prices is not None else None,
            simulation=info.simulation,
            sweep=info.sweep,
            trial=info.trial,
            fleet=info.fleet,
            tier=info.tier,
        )

    @property
    def pending(self) -> int:
        """Writes not yet in the store."""
        return len(self._pending)

    def record(
        self,
        kind: EntryKind,
        *,
        pool: str | None = None,
        market: str | None = None,
        hours: float | None = None,
        price: float | None = None,
        cost_usd: float | None = None,
        nbytes: int | None = None,
        detail: str | None = None,
        on_demand_price: float | None = None,
        node: str | None = None,
    ) -> None:
        """Append one entry (``on_demand_price``: the baseline's rate for its hours; ``node``:
        which node of a multi-node job it is about)."""
        self._seq += 1
        self._submit(
            Write.ENTRY,
            job_id=self.job_id,
            seq=self._seq,
            ts=self._now(),
            kind=kind.value,
            pool=pool,
            market=market,
            hours=hours,
            price=price,
            cost_usd=cost_usd,
            bytes=nbytes,
            detail=detail,
            on_demand_price=on_demand_price,
            node=node,
        )

    def running_in(self, process_group: int | None) -> None:
        """Record the local process group the job's command runs in now (None: none here)."""
        self._submit(Write.PROCESS_GROUP, worker_pgid=process_group, job_id=self.job_id)

    def finish(self, status: JobStatus) -> None:
        """Mark the job ``completed``, ``failed`` or ``cancelled``, with its end time, and wait
        (up to the store's wait) for the pending writes to go in; what still cannot is left in
        the journal, which any later ``spotwise jobs`` command or job writes."""
        self._submit(Write.FINISH, ended=self._now(), status=status.value, job_id=self.job_id)
        if self._pending:
            from spotwise.core.settings import current

            self._flush(current().store_wait_s)
        if self._pending:
            log.warning(
                "the store %s stayed busy: %d ledger writes of job %s are pending in %s; "
                "`spotwise jobs show %s` writes them once it is free",
                self.store_path,
                len(self._pending),
                self.job_id,
                self._journal.path,
                self.job_id,
            )
        self._journal.close()

    def retry(self) -> None:
        """Try the pending writes again, waiting briefly for the store (at most once a
        second)."""
        now = self._clock.monotonic()
        if self._pending and now - self._last_try >= self.retry_every_s:
            self._flush(self.busy_wait_s)

    def report(self) -> JobReport:
        """The job's report from what this ledger wrote, whether or not the store has it yet."""
        jobs, entries = _apply(_empty(JOB_FRAME_COLUMNS), _empty(ENTRY_COLUMNS), self._writes)
        return _report(jobs.iloc[0], entries, pending=len(self._pending))

    def _submit(self, write: Write, **values: Any) -> None:
        item = LedgerWrite(write, values)
        self._writes.append(item)
        self._pending.append(item)
        if self._busy_since is None:
            self._flush(self.write_wait_s)
            return
        # writes are pending already: the supervisor has a job to watch, so this one goes in
        # with their next try (a brief wait, at most once a second)
        self.retry()
        if self._pending:
            self._journal_new()

    def _flush(self, wait_s: float) -> None:
        """Write the pending writes in one transaction, or keep them in the journal."""
        self._last_try = self._clock.monotonic()
        try:
            with open_operational(self.store_path, wait_s=wait_s) as store:
                if self._writes[0] in self._pending:  # the job's first write: tidy up first
                    replay_orphans(store)
                apply_writes(store, self._pending)
        except (PricingError, OSError) as exc:
            self._keep(exc)
            return
        self._pending.clear()
        self._journaled = 0
        self._journal.discard()
        if self._busy_since is not None:
            log.warning(
                "the ledger's pending writes are in the store (after %.0f s)",
                self._clock.monotonic() - self._busy_since,
            )
            self._busy_since = None

    def _keep(self, exc: Exception) -> None:
        if self._busy_since is None:
            self._busy_since = self._clock.monotonic()
            log.warning(
                "the ledger keeps writes in %s until the store is free: %s",
                self._journal.path,
                str(exc).splitlines()[0],
            )
        self._journal_new()

    def _journal_new(self) -> None:
        """Add the pending writes not in the journal yet to it."""
        if self._journaled == len(self._pending):
            return
        try:
            self._journal.append(self._pending[self._journaled :])
            self._journaled = len(self._pending)
        except OSError as error:  # kept in memory still
            log.error("cannot write the pending journal %s: %s", self._journal.path, error)

    def _now(self) -> str:
        """The clock's time as the ISO timestamp the ledger's rows carry."""
        return datetime.fromtimestamp(self._clock.time(), UTC).isoformat()


JOB_FRAME_COLUMNS = (*JOB_COLUMNS, "ended", "worker_pgid")


def _empty(columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})


def _apply(
    jobs: pd.DataFrame, entries: pd.DataFrame, writes: list[LedgerWrite]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ``jobs`` and ``ledger`` rows with pending ``writes`` made, as the store will make
    them (a job or entry already there is kept)."""
    job_rows = {row["job_id"]: row for row in jobs.to_dict("records")}
    entry_rows = entries.to_dict("records")
    seen = {(row["job_id"], int(row["seq"])) for row in entry_rows}
    for item in writes:
        if item.write is Write.ENTRY:
            _apply_entry(entry_rows, seen, item)
        else:
            _apply_job_write(job_rows, item)
    return _typed(job_rows, entry_rows)


def _apply_entry(
    entry_rows: list[dict[str, Any]], seen: set[tuple[str, int]], item: LedgerWrite
) -> None:
    """Add an entry the rows do not hold yet (by job and sequence number)."""
    key = (item.job_id, int(item.values["seq"]))
    if key not in seen:
        entry_rows.append(item.values)
        seen.add(key)


def _apply_job_write(job_rows: dict[str, dict[str, Any]], item: LedgerWrite) -> None:
    """Make a job's start (unless it is there), process group or finish in its row."""
    values, job = item.values, job_rows.get(item.job_id)
    if item.write is Write.START and job is None:
        job_rows[item.job_id] = {**values, "ended": None, "worker_pgid": None}
    elif job is None:
        return
    elif item.write is Write.PROCESS_GROUP:
        job["worker_pgid"] = values["worker_pgid"]
    elif item.write is Write.FINISH:
        job.update(ended=values["ended"], status=values["status"])


def _typed(
    job_rows: dict[str, dict[str, Any]], entry_rows: list[dict[str, Any]]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows as frames with numbers and times typed, entries in job and sequence order."""
    merged_jobs = pd.DataFrame(list(job_rows.values()), columns=list(JOB_FRAME_COLUMNS))
    merged_entries = pd.DataFrame(entry_rows, columns=list(ENTRY_COLUMNS))
    for column in ("hours", "price", "cost_usd", "bytes", "on_demand_price", "seq"):
        merged_entries[column] = pd.to_numeric(merged_entries[column], errors="coerce")
    for column in ("started", "ended"):
        merged_jobs[column] = pd.to_datetime(merged_jobs[column], utc=True, format="ISO8601")
    return merged_jobs, merged_entries.sort_values(["job_id", "seq"], ignore_index=True)


def _frames(
    store: OperationalStore, job_id: str | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, int]]:
    """The store's ``jobs`` and ``ledger`` rows (of ``job_id``, or all) with the pending
    journals' writes made, and the pending writes per job."""
    where, params = (" WHERE job_id = ?", [job_id]) if job_id is not None else ("", [])
    jobs = store.query(f"SELECT {', '.join(JOB_FRAME_COLUMNS)} FROM jobs{where}", params)
    entries = store.query(f"SELECT {', '.join(ENTRY_COLUMNS)} FROM ledger{where}", params)
    pending = pending_writes(store.path, job_id)
    writes = [w for per_job in pending.values() for w in per_job]
    jobs, entries = _apply(jobs, entries, writes)
    return jobs, entries, {job: len(w) for job, w in pending.items()}


@dataclass(frozen=True, slots=True)
class JobState:
    """How a job stands and what runs it, from its row of ``jobs``."""

    job_id: str
    status: str
    host: str | None
    """The machine its supervisor runs on."""
    supervisor_pid: int | None
    supervisor_started: int | None
    """When its supervisor's process started (the kernel's start time; None: not recorded)."""
    worker_pgid: int | None
    """The process group of the command its supervisor runs locally (None: none)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the fields by name, in order."""
        return asdict(self)


def job_state(store: OperationalStore, job_id: str) -> JobState | None:
    """``job_id``'s state from its row of ``jobs``, pending writes included (None: no such
    job)."""
    jobs, _, _ = _frames(store, job_id)
    if jobs.empty:
        return None
    row = jobs.iloc[0]
    return JobState(
        job_id=str(row["job_id"]),
        status=str(row["status"]),
        host=_text_or_none(row["host"]),
        supervisor_pid=_int_or_none(row["supervisor_pid"]),
        supervisor_started=_int_or_none(row["supervisor_started"]),
        worker_pgid=_int_or_none(row["worker_pgid"]),
    )


@dataclass(frozen=True, slots=True)
class JobLine:
    """One job as :func:`list_jobs` gives it: what it is, how it stands, and its entries'
    sums so far."""

    job_id: str
    name: str
    launcher: str
    status: str
    sweep: str | None
    trial: int | None
    fleet: str | None
    tier: str | None
    simulated: bool
    started: datetime
    ended: datetime | None
    cost_usd: float
    preemptions: int
    migrations: int
    on_demand_hours: float
    pending: int
    """Its writes still waiting in its journal for the store."""

    def to_dict(self) -> dict[str, Any]:
        """The fields by name, in order (``jobs list --json`` writes the times ISO 8601)."""
        return asdict(self)


def list_jobs(store: OperationalStore) -> list[JobLine]:
    """Every job with its status, cost so far, preemptions, migrations (moves, back to spot
    among them), hours on on-demand and pending writes (newest first)."""
    jobs, entries, pending = _frames(store)
    per_job = _sums_per_job(entries)
    return [
        _listed(job, per_job.loc[job.job_id] if job.job_id in per_job.index else None, pending)
        for job in jobs.sort_values("started", ascending=False).itertuples()
    ]


def _sums_per_job(entries: pd.DataFrame) -> pd.DataFrame:
    """Cost, preemptions, migrations and on-demand hours of each job's entries."""
    kind = entries["kind"]
    on_demand = (kind == EntryKind.INSTANCE) & (entries["market"] == "on-demand")
    return (
        entries.assign(
            cost_usd=entries["cost_usd"].where(kind == EntryKind.INSTANCE, 0.0),
            preemptions=kind == EntryKind.PREEMPTION,
            migrations=kind == EntryKind.MIGRATION,
            on_demand_hours=entries["hours"].where(on_demand, 0.0).fillna(0.0),
        )
        .groupby("job_id")[["cost_usd", "preemptions", "migrations", "on_demand_hours"]]
        .sum()
    )


def _listed(job: Any, sums: pd.Series | None, pending: dict[str, int]) -> JobLine:
    """One job's line of :func:`list_jobs` (``sums``: its entries' sums, None without any)."""
    return JobLine(
        job_id=str(job.job_id),
        name=str(job.name),
        launcher=str(job.launcher),
        status=str(job.status),
        sweep=_text_or_none(job.sweep),
        trial=_int_or_none(job.trial),
        fleet=_text_or_none(job.fleet),
        tier=_text_or_none(job.tier),
        simulated=bool(job.simulated) if not pd.isna(job.simulated) else False,
        started=job.started.to_pydatetime(),
        ended=None if pd.isna(job.ended) else job.ended.to_pydatetime(),
        cost_usd=float(sums["cost_usd"]) if sums is not None else 0.0,
        preemptions=int(sums["preemptions"]) if sums is not None else 0,
        migrations=int(sums["migrations"]) if sums is not None else 0,
        on_demand_hours=float(sums["on_demand_hours"]) if sums is not None else 0.0,
        pending=pending.get(str(job.job_id), 0),
    )


def _text_or_none(value: Any) -> str | None:
    """A stored text, None where the store has none."""
    return None if pd.isna(value) else str(value)


def _int_or_none(value: Any) -> int | None:
    """A stored whole number, None where the store has none."""
    return None if pd.isna(value) else int(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class MarketUse:
    """Hours and cost in one market (spot or on-demand)."""

    hours: float
    cost_usd: float


@dataclass(frozen=True, slots=True, kw_only=True)
class CostBreakdown:
    """The cost model's terms: compute, checkpoint storage and recovery (lost work)."""

    compute: float
    storage: float
    recovery: float


@dataclass(frozen=True, slots=True, kw_only=True)
class JobReport:
    """One job's cost so far against on-demand, and what happened to it."""

    job_id: str
    name: str
    launcher: str
    status: JobStatus
    simulated: bool
    """Hours and dollars of a replayed market, not a bill."""
    simulation: str | None
    """What the replay was and how fast it ran."""
    cost_usd: float
    hours_needed: float
    """Instance hours less the work lost and redone: what the job took."""
    on_demand_cost_usd: float
    """The baseline: the hours needed, each at the on-demand price of the same instance type
    in the region it ran in."""
    savings_usd: float
    savings_pct: float
    prices: PriceBook | None
    """The job's price book with every price's source and time (None: a job from before)."""
    breakdown: CostBreakdown
    markets: dict[str, MarketUse]
    instances: int
    preemptions: int
    notices: int
    migrations: int
    lost_work_hours: float
    checkpoint_bytes: int
    checkpoints_sized: bool
    drills: int = 0
    """Preemptions that were drills (``--preempt-after``), counted in ``preemptions``."""
    pools_used: tuple[str, ...] = ()
    """The spot pools its instances were launched in, in the order first used (its report
    prices these, not every pool of its book)."""
    damaged_checkpoints: tuple[str, ...] = ()
    """Damaged checkpoint copies passed over on resume: each one's path and step, and the step
    the job resumed from instead."""
    moves: tuple[str, ...] = ()
    """Why each move was made: the policy's reason, with the expected costs it compared."""
    on_demand_why: tuple[str, ...] = ()
    """Why the job ran on demand: each reason, in order (empty: it never chose it)."""
    bids: tuple[tuple[str, float], ...] = ()
    """Each capped spot launch: its pool and the bid, the most $/h it could cost (the price
    above which the policy moves it)."""
    """Whether its checkpoints were sized (a local ``--ckpt`` folder, when the job ended);
    if not, ``checkpoint_bytes`` and the storage cost are 0 for want of a size, not measured."""
    nodes: dict[str, dict[str, MarketUse]]
    """A multi-node job's hours and cost per node and market (empty for one node)."""
    entries: int
    """Ledger entries (instances, notices, preemptions, ... each one)."""
    pending_writes: int = 0
    """Ledger writes not yet in the store (its supervisor waits for the store to be free)."""
    sweep: str | None = None
    """The sweep this job is a trial of (None: a job of its own)."""
    trial: int | None = None
    fleet: str | None = None
    """The fleet this job ran in, and its tier there (None: a job of its own)."""
    tier: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values."""
        return {**asdict(self), "status": self.status.value}


def job_report(store: OperationalStore, job_id: str, prices: PriceBook | None = None) -> JobReport:
    """One job's cost so far, savings against on-demand and the cost model's breakdown
    (pending writes included, and counted in ``pending_writes``); with ``prices``, its hours
    priced by that book (the job's own, requoted: :func:`~executor.ledger.prices.requoted`).

    Raises:
        StoreError: for an unknown job (naming the known ones).
    """
    jobs, entries, pending = _frames(store, job_id)
    if jobs.empty:
        known = store.query("SELECT job_id FROM jobs ORDER BY started DESC LIMIT 5")["job_id"]
        raise StoreError(f"no job {job_id!r} in the ledger; recent jobs: {list(known)}")
    job = jobs.iloc[0]
    if prices is not None:
        entries = _repriced(entries, _book(job), prices)
        job = job.copy()
        job["prices"] = json.dumps(prices.to_dict())
    return _report(job, entries, pending=pending.get(job_id, 0))


def _book(job: pd.Series) -> PriceBook | None:
    """The price book a job was priced with (None: a job from before books)."""
    prices = job.get("prices")
    if not isinstance(prices, str):
        return None
    return PriceBook.from_dict(json.loads(prices), f"job {job.job_id}'s prices")


def _repriced(entries: pd.DataFrame, was: PriceBook | None, now: PriceBook) -> pd.DataFrame:
    """The entries with each price that changed from book ``was`` to ``now`` replaced: the
    spot price of a pool's instances and lost work, the on-demand price of on-demand
    instances, and the baseline's rate in each region (the instances' costs follow)."""
    if was is None:
        return entries
    entries = entries.copy()
    kind, pool = entries["kind"], entries["pool"]
    billed = kind.isin([EntryKind.INSTANCE, EntryKind.LOST_WORK])
    region = pool.map(
        lambda p: was.region_of.get(p, was.home_region) if isinstance(p, str) else None
    )
    changed = pd.Series(False, index=entries.index)
    for place, quote in now.spot.items():
        if was.spot.get(place) != quote:
            rows = billed & (pool == place)
            entries.loc[rows, "price"] = quote.usd_per_hour
            changed |= rows
    for place, quote in now.on_demand.items():
        if was.on_demand.get(place) == quote:
            continue
        in_place = region.fillna(was.home_region) == place
        entries.loc[in_place & entries["on_demand_price"].notna(), "on_demand_price"] = (
            quote.usd_per_hour
        )
        if place == was.home_region:
            rows = billed & (entries["market"] == "on-demand")
            entries.loc[rows, "price"] = quote.usd_per_hour
            changed |= rows
    rows = changed & (kind == EntryKind.INSTANCE)
    entries.loc[rows, "cost_usd"] = entries.loc[rows, "hours"] * entries.loc[rows, "price"]
    return entries


def _report(job: pd.Series, entries: pd.DataFrame, *, pending: int) -> JobReport:
    """A job's report from its ``jobs`` row and its ``ledger`` entries."""
    job_id = str(job.job_id)
    instances = entries[entries.kind == EntryKind.INSTANCE]
    lost = entries[entries.kind == EntryKind.LOST_WORK]
    lost_hours = float(lost.hours.sum()) if not lost.empty else 0.0
    recovery = float((lost.hours * lost.price).sum()) if not lost.empty else 0.0
    sized = entries[entries.kind == EntryKind.CHECKPOINT]
    checkpoint_bytes = int(sized.bytes.sum())
    storage = StorageTerms(
        checkpoint_gb=checkpoint_bytes / 1e9,
        usd_per_gb_month=float(job.checkpoint_usd_per_gb_month),
    ).cost()
    compute = float(instances.cost_usd.sum()) - recovery
    rate = entries.on_demand_price.fillna(float(job.on_demand_price))
    needed = float(instances.hours.sum()) - lost_hours
    on_demand = float((instances.hours * rate[instances.index]).sum())
    if not lost.empty:
        on_demand -= float((lost.hours * rate[lost.index]).sum())
    total = compute + recovery + storage
    return JobReport(
        job_id=job_id,
        name=str(job["name"]),
        launcher=str(job.launcher),
        status=JobStatus(job.status),
        simulated=bool(job.simulated),
        simulation=job.get("simulation") if isinstance(job.get("simulation"), str) else None,
        cost_usd=round(total, 4),
        hours_needed=round(needed, 4),
        on_demand_cost_usd=round(on_demand, 4),
        savings_usd=round(on_demand - total, 4),
        savings_pct=round(100 * (1 - total / on_demand), 2) if on_demand > 0 else 0.0,
        prices=_book(job),
        breakdown=CostBreakdown(
            compute=round(compute, 4), storage=round(storage, 4), recovery=round(recovery, 4)
        ),
        markets=_market_use(instances),
        # launched ones count from their launch: the running one has no ``instance`` entry yet
        instances=max(len(instances), int((entries.kind == EntryKind.LAUNCH).sum())),
        preemptions=int((entries.kind == EntryKind.PREEMPTION).sum()),
        drills=int(
            ((entries.kind == EntryKind.PREEMPTION) & (entries.detail == DRILL_DETAIL)).sum()
        ),
        notices=int((entries.kind == EntryKind.NOTICE).sum()),
        migrations=int((entries.kind == EntryKind.MIGRATION).sum()),
        moves=_details(entries, EntryKind.MIGRATION),
        damaged_checkpoints=_details(entries, EntryKind.DAMAGED_CHECKPOINT),
        pools_used=tuple(
            dict.fromkeys(
                str(pool)
                for pool in entries[entries.kind.isin([EntryKind.LAUNCH, EntryKind.INSTANCE])].pool
                if isinstance(pool, str) and pool
            )
        ),
        on_demand_why=_details(entries, EntryKind.ON_DEMAND),
        bids=tuple(
            (str(row.pool), round(float(row.price), 4))
            for row in entries[
                (entries.kind == EntryKind.LAUNCH) & entries.price.notna()
            ].itertuples()
        ),
        lost_work_hours=round(lost_hours, 4),
        checkpoint_bytes=checkpoint_bytes,
        checkpoints_sized=not sized.empty,
        nodes=_node_use(instances),
        entries=len(entries),
        pending_writes=pending,
        sweep=_text_or_none(job.get("sweep")),
        trial=_int_or_none(job.get("trial")),
        fleet=_text_or_none(job.get("fleet")),
        tier=_text_or_none(job.get("tier")),
    )


def _details(entries: pd.DataFrame, kind: EntryKind) -> tuple[str, ...]:
    """The ``detail`` of each entry of ``kind``, in order."""
    return tuple(str(d) for d in entries[entries.kind == kind].detail if isinstance(d, str))


def _use(group: pd.DataFrame) -> MarketUse:
    """Hours and cost of some ``instance`` entries."""
    return MarketUse(
        hours=round(float(group.hours.sum()), 4), cost_usd=round(float(group.cost_usd.sum()), 4)
    )


def _market_use(instances: pd.DataFrame) -> dict[str, MarketUse]:
    """Hours and cost per market."""
    return {str(market): _use(group) for market, group in instances.groupby("market")}


def _node_use(instances: pd.DataFrame) -> dict[str, dict[str, MarketUse]]:
    """Hours and cost per node and market (empty for a one-node job)."""
    nodes: dict[str, dict[str, MarketUse]] = {}
    for (node, market), group in instances.dropna(subset=["node"]).groupby(["node", "market"]):
        nodes.setdefault(str(node), {})[str(market)] = _use(group)
    return nodes

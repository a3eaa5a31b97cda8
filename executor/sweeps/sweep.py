"""Sweeps on spot: an Optuna study whose trials each run as a supervised job.

Workers (processes, on one machine or many) share one study in Optuna's storage: a SQLite file
by default, a database URL (PostgreSQL) across machines. Each worker asks the study for a
trial, runs its command under the supervisor (which relaunches it across preemptions, resuming
from the trial's checkpoint folder), forwards the command's intermediate values to the study
so its pruner can stop a trial (the instance is released at once), and tells the study the
result. A worker that dies stops beating its trial's heartbeat; once the grace period passes,
any worker fails the trial and Optuna's :class:`RetryHeartbeatStaleTrialCallback` queues it
again, with the same params and the same checkpoint folder, so it resumes rather than
restarts (the dead worker's command, if it outlived it here, is first given a notice to
checkpoint and stopped). A trial whose job fails or is cancelled is queued again the same way.

Each trial's job goes to the ledger with its sweep and trial, so cost per trial and per sweep,
and savings against on-demand, come from the same entries as every job's.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import math
import threading
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import optuna
from optuna.storages import RetryHeartbeatStaleTrialCallback
from optuna.trial import FrozenTrial, Trial, TrialState

from spotwise.core.clock import SYSTEM_CLOCK
from spotwise.core.progress import Progress
from spotwise.executor.clouds.base import CloudTarget
from spotwise.executor.errors import Cancelled, ExecutorError, Stopped
from spotwise.executor.ledger.ledger import new_job_id
from spotwise.executor.sweeps.spec import SweepSpec, definition_changes, grid_spec, load_spec
from spotwise.pricing.errors import PricingError

if TYPE_CHECKING:
    from spotwise.executor.clouds.code_bundle import Code
    from spotwise.executor.launchers.base import Launcher
    from spotwise.executor.supervise.supervised import SupervisedJob
    from spotwise.policy.traces import TraceSet

optuna.logging.set_verbosity(optuna.logging.WARNING)
# The heartbeat's stale-trial failing and retry have been "experimental" since Optuna 2.8/2.9.
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
# Its heartbeat is beaten here (_Heartbeat) for trials taken with ask(), not by optimize().
warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used")

SWEEPS_FOLDER = "sweeps"
"""Next to the store: one folder per sweep (its default study file, the trials' checkpoints,
the workers' logs)."""
DEFINITION = "definition"
"""The study's user attribute holding the spec's :meth:`SweepSpec.definition`."""
ONE_TRIAL_ATTEMPTS = "job_ids"
"""The trial's user attribute listing the ledger's job of each attempt (retries included)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepSource:
    """Where a sweep's spec comes from: a file, or a work queue's ``--grid`` and command."""

    spec_file: str | None = None
    name: str | None = None
    grid: tuple[str, ...] = ()
    command: tuple[str, ...] = ()

    def load(self) -> SweepSpec:
        """The checked spec.

        Raises:
            ExecutorError: naming the file or flag, and what to write instead.
        """
        if self.spec_file is not None:
            if self.grid or self.command:
                raise ExecutorError(
                    "a spec file names its own params and command: give it, or --grid with "
                    "the command after --, not both"
                )
            return load_spec(Path(self.spec_file))
        if not self.grid or not self.command:
            raise ExecutorError(
                "give a sweep spec file, or --grid NAME=0..N-1 with the command after --"
            )
        return grid_spec(self.name, self.grid, self.command)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplayMarket:
    """The local launcher's market: real availability traces replayed from ``start_hours``
    (every worker starts there; each moves on by the hours its trials took)."""

    traces: str
    pools: tuple[str, ...] = ()
    start_hours: float = 0.0
    scale: float = 1000.0
    step_s: float | None = None
    """Cloud seconds per training step (paces the replay by the guard's steps), or None for
    ``scale``× the wall clock."""
    boot_s: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepConfig:
    """Everything a sweep's worker needs; written as JSON for the worker processes."""

    source: SweepSource
    store: str
    storage: str
    """Optuna's storage URL (``sqlite:///...`` or ``postgresql://...``)."""
    root: str
    """This sweep's folder: trial checkpoints, worker logs, the lock."""
    market: ReplayMarket
    cloud: CloudTarget | None = None
    """Run the trials on a cloud instead of the replayed market; they checkpoint under the
    cloud's checkpoint prefix, e.g. ``s3://BUCKET/spotwise/checkpoints/sweeps/NAME/trial-N/ckpt``
    (:func:`cloud_checkpoint`)."""
    workers: int = 1
    deadline_hours: float | None = None
    budget_usd: float | None = None
    policy: str = "best"
    spot_price: float | None = None
    on_demand_price: float | None = None
    changeover_hours: float = 0.2
    moves: bool = True
    """Move a trial when the policy prices a move as paying (else only on a preemption)."""
    heartbeat_s: int = 10
    """Seconds between a running trial's heartbeats; a trial silent for three is stale."""
    max_retry: int = 3
    """Times one trial is queued again after its worker died or its job failed."""
    lead_s: float = 2.0

    def to_json(self) -> str:
        """The config as the workers read it (a cloud's settings as its plain values)."""
        cloud = None if self.cloud is None else self.cloud.to_dict()
        return json.dumps({**asdict(replace(self, cloud=None)), "cloud": cloud})

    @classmethod
    def from_json(cls, text: str) -> SweepConfig:
        """The config back from :meth:`to_json`."""
        from spotwise.executor.clouds.registry import cloud_named

        raw = json.loads(text)
        source, market, cloud = raw.pop("source"), raw.pop("market"), raw.pop("cloud")
        return cls(
            cloud=None if cloud is None else cloud_named(cloud["cloud"]).target_from_dict(cloud),
            source=SweepSource(
                spec_file=source["spec_file"],
                name=source["name"],
                grid=tuple(source["grid"]),
                command=tuple(source["command"]),
            ),
            market=ReplayMarket(**{**market, "pools": tuple(market["pools"])}),
            **raw,
        )


def sweep_folder(store_path: Path, name: str, *, make: bool = True) -> Path:
    """The sweep's folder next to the store (made private, 0700, unless ``make`` is False)."""
    folder = store_path.parent / SWEEPS_FOLDER / name
    if make:
        (store_path.parent / SWEEPS_FOLDER).mkdir(parents=True, exist_ok=True, mode=0o700)
        folder.mkdir(exist_ok=True, mode=0o700)
    return folder


def default_storage(folder: Path) -> str:
    """The embedded study storage: a SQLite file in the sweep's folder."""
    return f"sqlite:///{folder / STUDY_FILE}"


STUDY_FILE = "study.db"


def storage_url(url: str) -> str:
    """The SQLAlchemy URL of a study storage: ``postgresql://`` means psycopg 3 here, the driver
    ``spotwise[postgres]`` installs (SQLAlchemy's own default is psycopg2)."""
    scheme, sep, rest = url.partition("://")
    return f"postgresql+psycopg://{rest}" if sep and scheme in ("postgresql", "postgres") else url


def _storage(config: SweepConfig, *, tries: int = 4) -> optuna.storages.RDBStorage:
    """Optuna's storage with the heartbeat and retry. The first use of a new database makes
    Optuna's tables; workers that start at once on several machines race for that, and the
    losers try again (the tables are there by then)."""
    sqlite = config.storage.startswith("sqlite:")
    for attempt in range(tries):
        try:
            return optuna.storages.RDBStorage(
                storage_url(config.storage),
                engine_kwargs={"connect_args": {"timeout": 60}} if sqlite else None,
                heartbeat_interval=config.heartbeat_s,
                grace_period=3 * config.heartbeat_s,
                heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(
                    max_retry=config.max_retry, inherit_intermediate_values=True
                ),
            )
        except Exception as exc:  # sqlalchemy's: a bad URL, a server away, a creation race
            raced = "already exists" in str(exc) or "duplicate key" in str(exc)
            if raced and attempt + 1 < tries:
                SYSTEM_CLOCK.sleep(0.5 * (attempt + 1))
                continue
            where = config.storage.split("@")[-1]
            raise ExecutorError(
                f"sweep storage {where[:80]!r}: {str(exc).splitlines()[0]}"
            ) from exc
    raise AssertionError("unreachable")


def open_study(config: SweepConfig, spec: SweepSpec) -> optuna.Study:
    """The sweep's study, made by the first worker to arrive (which queues a grid's points)."""
    storage = _storage(config)
    try:
        study = optuna.create_study(
            study_name=spec.name,
            storage=storage,
            sampler=spec.build_sampler(),
            pruner=spec.build_pruner(),
            direction=spec.direction,
        )
    except optuna.exceptions.DuplicatedStudyError:
        study = optuna.load_study(
            study_name=spec.name,
            storage=storage,
            sampler=spec.build_sampler(),
            pruner=spec.build_pruner(),
        )
        _same_definition(study, spec, config)
        return study
    study.set_user_attr(DEFINITION, spec.definition())
    if spec.sampler == "grid":
        for point in spec.grid_points():
            study.enqueue_trial(point, skip_if_exists=True)
    study.set_user_attr("trials", spec.trials)
    study.set_user_attr("queue", spec.queue)
    study.set_user_attr("ready", True)
    return study


def _same_definition(study: optuna.Study, spec: SweepSpec, config: SweepConfig) -> None:
    """Refuse to run ``spec`` into a study made from another definition (its trials would be
    taken for this spec's: reported, resumed from their checkpoints, or counted as done)."""
    where = config.storage.split("@")[-1]
    if study.direction.name.lower() != spec.direction:
        raise ExecutorError(
            f"study {spec.name!r} in {where!r} is a {study.direction.name.lower()} study; the "
            f"spec says {spec.direction}"
        )
    stored = study.user_attrs.get(DEFINITION)
    if stored is None:
        if study.user_attrs.get("ready"):  # made before definitions were kept: adopted
            study.set_user_attr(DEFINITION, spec.definition())
        return  # (or its maker is still queueing it)
    changes = definition_changes(stored, spec.definition())
    if changes:
        rename = "give it another --name" if spec.queue else "give the spec another name"
        raise ExecutorError(
            f"{'work queue' if spec.queue else 'sweep'} {spec.name!r} in {where!r} was made "
            f"from another definition ({changes}): {rename}, or add --start-over to delete "
            "the stored one and its trials' checkpoints and run this one from the start"
        )


def start_over(config: SweepConfig, spec: SweepSpec) -> bool:
    """Delete the sweep's study and its trials' checkpoint folders here, so the next
    :func:`open_study` makes it afresh; whether there was one. (On AWS the trials'
    checkpoints are in the bucket: the CLI refuses this there.)

    Raises:
        ExecutorError: the storage cannot be reached.
    """
    import shutil

    try:
        optuna.delete_study(study_name=spec.name, storage=_storage(config))
        existed = True
    except KeyError:
        existed = False
    for trial in sorted(Path(config.root).glob("trial-*")):
        shutil.rmtree(trial, ignore_errors=True)
    return existed


@contextlib.contextmanager
def _sweep_lock(folder: Path) -> Iterator[None]:
    """One worker of this machine at a time takes a trial (workers on other machines may take
    one at the same moment: a sweep there can run up to workers - 1 trials past its count)."""
    with open(folder / ".lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def original_number(trial: FrozenTrial) -> int:
    """The number of the trial a retry repeats (its own number when it is no retry)."""
    first = RetryHeartbeatStaleTrialCallback.retried_trial_number(trial)
    return trial.number if first is None else int(first)


@dataclass(slots=True)
class WorkerClock:
    """A worker's hours on the replayed market: its trials run one after another."""

    hours: float = 0.0


class _Wait:
    """Nothing to take now, but a running trial may yet be retried."""


WAIT = _Wait()


class SweepWorker:
    """Takes trials from the study and runs each as a supervised job, until none are left."""

    def __init__(self, config: SweepConfig, progress: Progress) -> None:
        self.config, self.progress = config, progress
        self.spec = config.source.load()
        self.folder = Path(config.root)
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.study = open_study(config, self.spec)
        self.clock = WorkerClock()
        self.stop_reason: str | None = None

    def run(self) -> int:
        """Run trials until the sweep is done; how many this worker ran."""
        ran = 0
        while True:
            with _sweep_lock(self.folder):
                optuna.storages.fail_stale_trials(self.study)
                trial = self._next_trial()
            if trial is None:
                return ran
            if isinstance(trial, _Wait):
                SYSTEM_CLOCK.sleep(max(1.0, self.config.heartbeat_s / 2))
                continue
            self.run_trial(trial)
            ran += 1

    def _next_trial(self) -> Trial | _Wait | None:
        trials = self.study.get_trials(deepcopy=False)
        if not self.study.user_attrs.get("ready"):
            return WAIT  # its maker is still queueing the grid
        states = [t.state for t in trials]
        if self._over_budget() or self._past_deadline():
            return None
        originals = sum(
            RetryHeartbeatStaleTrialCallback.retried_trial_number(t) is None for t in trials
        )
        more = self.spec.sampler != "grid" and originals < self.spec.trials
        if TrialState.WAITING in states or more:
            return self.study.ask(self.spec.distributions)
        return WAIT if TrialState.RUNNING in states else None

    def _over_budget(self) -> bool:
        budget = self.config.budget_usd
        if budget is None:
            return False
        spent = sweep_cost_usd(Path(self.config.store), self.spec.name)
        if spent >= budget:
            self.stop_reason = f"budget reached: ${spent:,.2f} of ${budget:,.2f} spent"
            return True
        return False

    def _past_deadline(self) -> bool:
        deadline = self.config.deadline_hours
        if deadline is None or self.clock.hours < deadline:
            return False
        self.stop_reason = f"deadline reached: {self.clock.hours:.1f} h of {deadline:g} h"
        return True

    def trial_deadline_hours(self) -> float:
        """This trial's deadline: the sweep's time left shared among the trials this worker
        still has to run (so late trials with little slack fall back to on-demand, and early
        ones wait for spot); three times the compute without a sweep deadline."""
        compute = self.spec.compute_hours
        least = compute + self.config.changeover_hours
        if self.config.deadline_hours is None:
            return max(3 * compute, least * 1.001)
        done = sum(
            t.state in (TrialState.COMPLETE, TrialState.PRUNED)
            for t in self.study.get_trials(deepcopy=False)
        )
        share = math.ceil(max(1, self.spec.trials - done) / self.config.workers)
        left = self.config.deadline_hours - self.clock.hours
        return max(left / share, least * 1.001)

    def run_trial(self, trial: Trial) -> None:
        """Run one trial as a supervised job and tell the study how it ended."""
        frozen = self.study.get_trials(deepcopy=False)[trial.number]
        number = original_number(frozen)
        ckpt = self._checkpoint_folder(number)
        self._fence(frozen)
        job_id = new_job_id()
        attempts = [*frozen.user_attrs.get(ONE_TRIAL_ATTEMPTS, []), job_id]
        trial.set_user_attr(ONE_TRIAL_ATTEMPTS, attempts)
        values = {**trial.params, "trial": number, "ckpt": str(ckpt), "sweep": self.spec.name}
        command = self.spec.render(values)
        retry = f" (retry, as trial {trial.number})" if number != trial.number else ""
        attempt = f"trial {number}{retry}"
        self.progress(f"{attempt}: {' '.join(command)}")
        state, value, why = self._run_attempt(trial, command, ckpt, job_id, number)
        self._tell(trial, state, value, why, retry=state is TrialState.FAIL)
        self.progress(f"{attempt}: {self._outcome_text(state, value, why)}")

    def _run_attempt(
        self, trial: Trial, command: list[str], ckpt: str, job_id: str, number: int
    ) -> tuple[TrialState, float | None, str]:
        """Supervise one attempt under a heartbeat: its state, value and why it failed."""
        try:
            with _Heartbeat(self.study, trial, self.config.heartbeat_s):
                job = self._supervise(trial, command, ckpt, job_id, number)
            _record_job(trial, job)
            return self._job_outcome(job)
        except Stopped:
            return TrialState.PRUNED, None, ""
        except Cancelled:
            self._tell(trial, TrialState.FAIL, None, "cancelled", retry=True)
            raise
        except (ExecutorError, PricingError) as exc:
            return TrialState.FAIL, None, str(exc)

    def _job_outcome(self, job: SupervisedJob) -> tuple[TrialState, float | None, str]:
        """A finished job's state, value and why it failed (a queue's task needs no value)."""
        value = trial_value(job.events)
        if value is None and self.spec.queue:
            value = 0.0
        if value is None:
            return (
                TrialState.FAIL,
                None,
                'printed no value: print {"event": "result", "value": V} at its end',
            )
        return TrialState.COMPLETE, value, ""

    def _outcome_text(self, state: TrialState, value: float | None, why: str) -> str:
        """How an attempt ended, for the progress line: its state, value and why."""
        shown = f", value {value:.6g}" if value is not None and not self.spec.queue else ""
        return f"{state.name.lower()}{shown}" + (f" ({why})" if why else "")

    def _checkpoint_folder(self, number: int) -> str:
        """Trial ``number``'s checkpoint folder, the same for each of its retries: in the
        sweep's folder here, or under the cloud's checkpoint prefix."""
        if self.config.cloud is not None:
            return cloud_checkpoint(self.config.cloud, self.spec.name, number)
        ckpt = self.folder / f"trial-{number:05d}" / "ckpt"
        ckpt.parent.mkdir(exist_ok=True, mode=0o700)
        ckpt.mkdir(exist_ok=True, mode=0o700)
        return str(ckpt)

    def _tell(
        self, trial: Trial, state: TrialState, value: float | None, why: str, *, retry: bool
    ) -> None:
        if why:
            trial.set_user_attr("why", why[:500])
        if state is TrialState.COMPLETE:
            self.study.tell(trial, value)
        else:
            self.study.tell(trial, state=state)
        if retry:  # queued again with its params and checkpoint folder, as a stale one is
            frozen = self.study.get_trials(deepcopy=False)[trial.number]
            RetryHeartbeatStaleTrialCallback(
                max_retry=self.config.max_retry, inherit_intermediate_values=True
            )(self.study, frozen)

    def _fence(self, frozen: FrozenTrial) -> None:
        """Before a retry resumes: stop the command an earlier attempt's dead worker may have
        left running here (a notice first, so it checkpoints)."""
        from spotwise.executor.ledger.ledger import job_state
        from spotwise.executor.supervise.cancel import cancel_job
        from spotwise.pricing.operational import open_operational

        for job_id in frozen.user_attrs.get(ONE_TRIAL_ATTEMPTS, []):
            with open_operational(Path(self.config.store), read_only=True) as store:
                state = job_state(store, job_id)
            if state is None or state.status != "running":
                continue
            try:
                how = cancel_job(Path(self.config.store), job_id, wait_s=30, grace_s=30)
                self.progress(f"job {job_id} of an earlier attempt: {how}")
            except ExecutorError as exc:
                self.progress(f"job {job_id} left as it is: {exc}")

    def _supervise(
        self, trial: Trial, command: list[str], ckpt: str, job_id: str, number: int
    ) -> SupervisedJob:
        from spotwise.executor.clouds.registry import checkpoint_places
        from spotwise.executor.ledger.prices import price_book
        from spotwise.executor.supervise.supervised import supervise
        from spotwise.executor.supervise.supervisor import SupervisorConfig
        from spotwise.policy.service.client import in_process_for
        from spotwise.policy.service.schemas import JobTerms
        from spotwise.pricing.store import MarketStore

        launcher, instance_type, home = self._launcher(job_id)
        with MarketStore.open(Path(self.config.store), read_only=True) as store:
            prices = price_book(
                store,
                launcher.pools,
                instance_type=instance_type,
                home_region=home,
                spot_price=self.config.spot_price,
                on_demand_price=self.config.on_demand_price,
            )
        job = JobTerms(
            compute_hours=self.spec.compute_hours,
            deadline_hours=self.trial_deadline_hours(),
            changeover_hours=self.config.changeover_hours,
            spot_price=prices.typical_spot(),
            on_demand_price=prices.on_demand_quote().usd_per_hour,
        )

        def watch(event: dict[str, object]) -> bool:
            step, value = event.get("step"), event.get("value")
            if event.get("event") != "report" or not isinstance(step, int):
                return False
            if not isinstance(value, int | float) or not math.isfinite(value):
                return False
            if step not in trial.storage.get_trial(trial._trial_id).intermediate_values:
                trial.report(float(value), step)
            return trial.should_prune()

        try:
            return supervise(
                command,
                store_path=Path(self.config.store),
                launcher=launcher,
                config=SupervisorConfig(
                    job=job,
                    policy=self.config.policy,
                    lead_s=self.config.lead_s,
                    move_check_s=(60.0 if self.config.cloud else 0.2)
                    if self.config.moves
                    else None,
                    checkpoints=checkpoint_places((ckpt,), self.config.cloud),
                    prices=prices,
                    max_price=getattr(self.config.cloud, "max_price", None),
                ),
                client_for=in_process_for,
                name=f"{self.spec.name} trial {number}",
                progress=lambda m: self.progress(f"trial {number}: {m}"),
                job_id=job_id,
                sweep=self.spec.name,
                trial=number,
                on_event=watch,
            )
        finally:
            self.clock.hours += launcher.now_hours()

    @functools.cached_property
    def _traces(self) -> TraceSet:
        """The replayed pools' traces, read once per worker (not once per trial)."""
        from spotwise.policy.traces import load_traces

        market = self.config.market
        traces = load_traces(Path(market.traces))
        return traces.subset(list(market.pools)) if market.pools else traces

    @functools.cached_property
    def _shipped_code(self) -> Code:
        """The workdir and a Spotwise wheel in the sweep's bucket, shipped once per worker
        (not once per trial)."""
        from spotwise.executor.clouds.registry import cloud_named

        target = self.config.cloud
        if target is None:
            raise ExecutorError("only a sweep on a cloud ships its code")
        return cloud_named(target.cloud).ship_code(target)

    def _launcher(self, job_id: str) -> tuple[Launcher, str, str | None]:
        """This trial's launcher, the instance type its prices are of, and its home region:
        the replayed market from where this worker's clock stands, or a cloud."""
        from spotwise.executor.clouds.registry import cloud_named
        from spotwise.executor.launchers.local import Replay
        from spotwise.pricing.quotes import REFERENCE_INSTANCE_TYPE

        target = self.config.cloud
        if target is not None:
            cloud = cloud_named(target.cloud)
            launcher = cloud.launcher(target, self._shipped_code, job_id=job_id)
            return launcher, target.instance_type, target.home_region
        market = self.config.market
        replay = Replay(
            traces=self._traces,
            start_hours=market.start_hours + self.clock.hours,
            scale=market.scale,
            step_s=market.step_s,
            boot_s=market.boot_s,
        )
        return replay.launcher(), REFERENCE_INSTANCE_TYPE, None


def cloud_checkpoint(target: CloudTarget, sweep: str, number: int) -> str:
    """Trial ``number``'s checkpoint folder on ``target``'s cloud: under the prefix its
    instances' identity may write (:meth:`~executor.clouds.base.Cloud.checkpoint_url`)."""
    from spotwise.executor.clouds.registry import cloud_named

    run = f"sweeps/{sweep}/trial-{number:05d}/ckpt"
    return cloud_named(target.cloud).checkpoint_url(target, run)


class _Heartbeat:
    """Beats a running trial's heartbeat in Optuna's storage until the trial ends."""

    def __init__(self, study: optuna.Study, trial: Trial, every_s: int) -> None:
        self._storage = study._storage
        self._trial_id = trial._trial_id
        self._every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def _beat(self) -> None:
        while True:
            with contextlib.suppress(Exception):  # a missed beat is retried at the next
                self._storage.record_heartbeat(self._trial_id)  # type: ignore[attr-defined]
            if self._stop.wait(self._every_s):
                return

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def _record_job(trial: Trial, job: SupervisedJob) -> None:
    """Keep what a finished job tells about the trial: steps lost, its first step, its digest."""
    trial.set_user_attr("steps_lost", job.steps_lost)
    starts = [e for e in job.events if e.get("event") in ("fresh", "resumed")]
    trial.set_user_attr("started_at_step", starts[0].get("step") if starts else None)
    ends = [e for e in job.events if e.get("event") == "done"]
    if ends and isinstance(ends[-1].get("digest"), str):
        trial.set_user_attr("digest", ends[-1]["digest"])


def trial_value(events: tuple[dict[str, Any], ...] | list[dict[str, Any]]) -> float | None:
    """The trial's result: the ``value`` of the command's last ``done`` or ``result`` event."""
    for event in reversed(events):
        value = event.get("value")
        is_result = event.get("event") in ("done", "result")
        if is_result and isinstance(value, int | float) and math.isfinite(value):
            return float(value)
    return None


def sweep_cost_usd(store_path: Path, sweep: str) -> float:
    """What the sweep's jobs have cost so far, from the ledger."""
    from spotwise.executor.ledger.ledger import list_jobs
    from spotwise.pricing.operational import open_operational

    with open_operational(store_path, read_only=True) as store:
        return sum(j.cost_usd for j in list_jobs(store) if j.sweep == sweep)

"""An elastic job on many nodes: the rendezvous host and an on-demand floor, spot workers
around them, and only the node that is taken back replaced.

Every node runs the command under ``torchrun`` elastic (:mod:`~spotwise.executor.launchers.
torchrun`): node 0 hosts the c10d rendezvous on on-demand capacity, ``floor`` − 1 more nodes run
on-demand, and up to ``max_nodes`` − ``floor`` run on spot in the pools that promise the longest
runs. A spot node under a preemption notice gets SIGTERM: torchrun passes it to its workers,
the training guard makes every rank commit a torch.distributed.checkpoint together (its stop
flag is all-reduced), and the other nodes regroup without it and resume from that checkpoint.
When a pool is up again a new spot node joins; torchrun restarts the workers at the larger size
(the guard checkpoints on that SIGTERM too), so a resize loses no step. With ``floor`` None
(``auto``) the floor is the lab's ``best`` rule with the host on-demand
(:func:`~spotwise.policy.nodes.floor.deadline_floor`): ``min_nodes`` while the slack is ample,
then the job filled around the spot nodes it holds, then every node on-demand near the
deadline. A :class:`SpendGate` (a fleet's budget) may refuse a node the deadline does not
ask for; its slot then goes to spot. Every node's hours, cost, notice and preemption go to the
ledger under the node's name.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.core.progress import Progress, silent
from spotwise.executor.errors import (
    PREEMPTED_EXIT_CODE,
    Cancelled,
    ExecutorError,
    LaunchError,
    NoCapacity,
)
from spotwise.executor.launchers.base import Instance, Launcher, Placement, Preemption
from spotwise.executor.launchers.torchrun import Elastic, torchrun_command
from spotwise.executor.ledger.ledger import EntryKind, JobStatus, Ledger
from spotwise.executor.ledger.prices import PriceBook
from spotwise.executor.supervise.job_log import JobLog
from spotwise.executor.supervise.supervisor import (
    ClientFor,
    RunReport,
    SupervisorConfig,
    cancel_on_signals,
    size_checkpoints,
)
from spotwise.executor.supervise.watch import Notices, Watch
from spotwise.policy.nodes.floor import deadline_floor
from spotwise.policy.service.client import PolicyClient

Role = Literal["host", "floor", "spot"]


class SpendGate(Protocol):
    """What may grant or refuse an elastic job's spend, such as a fleet's budget."""

    def claim(self, usd_per_hour: float, *, market: str, needed: bool) -> bool:
        """May the job spend ``usd_per_hour`` in all (its nodes and one more in ``market``)?
        ``needed``: the rendezvous host, or a floor node the deadline asks for."""

    def record(self, usd_per_hour: float) -> None:
        """What the job's nodes cost now (after one ended or was refused)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NodePlan:
    """How many nodes an elastic job runs on, and how many of them on-demand."""

    min_nodes: int
    max_nodes: int
    floor: int | None
    """On-demand nodes, the rendezvous host among them (None: ``auto``)."""
    nproc_per_node: int = 1
    rdzv_endpoint: str = "127.0.0.1:29400"
    max_restarts: int = 1000
    """torchrun's restarts per node: a regroup after a lost node uses one on every survivor."""
    last_call_timeout_s: int = 2
    regroup_hours: float = 0.05
    """What a change of the node count costs, in hours (``auto``'s reserve is counted in
    these)."""

    @classmethod
    def parse(
        cls,
        nodes: str,
        floor: str = "auto",
        *,
        nproc_per_node: int = 1,
        rdzv_endpoint: str = "127.0.0.1:29400",
    ) -> NodePlan:
        """A plan from ``MIN:MAX`` (or ``N``) nodes and a floor of ``K`` or ``auto`` (as
        ``--nodes`` and ``--on-demand-floor``, or a fleet file's ``nodes`` and
        ``on_demand_floor``, give them).

        Raises:
            ValueError: saying what is wrong and what is expected.
        """
        low, _, high = nodes.partition(":")
        if not (low.isdigit() and (high.isdigit() or not high)):
            raise ValueError(f"nodes must be MIN:MAX or N (whole numbers), got {nodes[:40]!r}")
        if floor != "auto" and not floor.isdigit():
            raise ValueError(
                f"the on-demand floor must be a whole number or auto, got {floor[:40]!r}"
            )
        return cls(
            min_nodes=int(low),
            max_nodes=int(high or low),
            floor=None if floor == "auto" else int(floor),
            nproc_per_node=nproc_per_node,
            rdzv_endpoint=rdzv_endpoint,
        )

    def __post_init__(self) -> None:
        if not 1 <= self.min_nodes <= self.max_nodes:
            raise ValueError(f"nodes {self.min_nodes}:{self.max_nodes}: need 1 <= MIN <= MAX")
        if self.floor is not None and not self.min_nodes <= self.floor <= self.max_nodes:
            raise ValueError(
                f"on-demand floor {self.floor}: need MIN <= K <= MAX "
                f"({self.min_nodes}..{self.max_nodes}); the floor holds the rendezvous host, "
                "and below MIN the job would stop whenever spot is gone"
            )


@dataclass(slots=True, kw_only=True)
class Node:
    """One node of the job: its instance, followed on the supervisor's watch core
    (:class:`~executor.supervise.watch.Watch`), and its role."""

    name: str
    role: Role
    watch: Watch
    preempted: bool = False
    read: int = 0
    """Events of its instance already read."""

    @property
    def instance(self) -> Instance:
        """The node's instance."""
        return self.watch.instance

    @property
    def market(self) -> str:
        """Its instance's market."""
        return self.instance.placement.market

    @property
    def leaving(self) -> bool:
        """Given its notice (preempted or released): it checkpoints with the others and goes."""
        return self.watch.leaving

    @property
    def started(self) -> bool:
        """Its workers have joined a group (a ``fresh`` or ``resumed`` event)."""
        return self.watch.started

    def release(self) -> None:
        """Ask it to checkpoint with the others and go (once)."""
        if not self.leaving:
            self.watch.move()


@dataclass(slots=True)
class NodeRunReport(RunReport):
    """How the elastic run went, with the floor it kept and the world sizes it ran at."""

    floors: list[int] = field(default_factory=list)
    """The on-demand floor each time it changed (the first: at the start)."""
    world_sizes: list[int] = field(default_factory=list)
    """The world size at every start of the workers, in order."""


class NodeSupervisor:
    """Runs one command as an elastic job on ``plan``'s nodes of ``launcher``."""

    def __init__(
        self,
        launcher: Launcher,
        client_for: ClientFor,
        config: SupervisorConfig,
        ledger: Ledger,
        plan: NodePlan,
        progress: Progress = silent,
        clock: Clock = SYSTEM_CLOCK,
        log: JobLog | None = None,
        plan_every_s: float = 0.5,
        gate: SpendGate | None = None,
    ) -> None:
        self.launcher, self.client_for, self.config = launcher, client_for, config
        self.ledger, self.plan, self.progress, self.clock = ledger, plan, progress, clock
        self.log, self.plan_every_s, self.gate = log, plan_every_s, gate
        job = config.job
        self.prices = config.prices or PriceBook.flat(
            launcher.pools, job.spot_price, job.on_demand_price
        )
        self.report = NodeRunReport()
        self.nodes: list[Node] = []
        self._named = 0
        self._taken_until_hours: dict[str, float] = {}
        self._refused_until: dict[str, float] = {}
        self._cancel: int | None = None
        self._cancel_kill_at: float | None = None
        self._floor = plan.floor if plan.floor is not None else plan.min_nodes
        self._needed_floor = plan.min_nodes
        """On-demand nodes the deadline asks for (``auto``'s floor; at most a fixed floor)."""
        self._gate_refused: set[str] = set()
        """Markets the gate refused a node in, until it grants one again."""
        self._progress_at = launcher.now_hours()
        self._reached_step = 0
        """The furthest step the host's workers reached before their latest start."""
        self._finishing = False
        """A node not told to leave ended well: training is over, the host's end is near."""
        self._cached_client: tuple[tuple[object, ...], PolicyClient] | None = None
        self._notices = Notices(
            launcher,
            lead_s=config.lead_s,
            grace_s=config.grace_s,
            drill=None,
            noticed=self._noticed,
        )

    def cancel(self, signum: int = signal.SIGTERM) -> None:
        """Stop the job: every node gets a notice now and is killed after the grace."""
        self._cancel = signum

    def run(self, command: Sequence[str]) -> NodeRunReport:
        """Run ``command`` on the nodes until it completes; the job is never left ``running``.

        Raises:
            ExecutorError: after ``max_failures`` node exits that were not preemptions, or when
                a node cannot be started.
            Cancelled: on SIGTERM/SIGINT, after the nodes had their grace.
        """
        status = JobStatus.FAILED
        try:
            with cancel_on_signals(self.cancel):
                self._run(command)
            status = JobStatus.COMPLETED
        except Cancelled:
            status = JobStatus.CANCELLED
            raise
        finally:  # however it ended, its checkpoints cost storage
            if status is not JobStatus.COMPLETED:
                self._end_all()
            size_checkpoints(self.config.checkpoints, self.ledger, self.progress)
            self.ledger.finish(status)
        return self.report

    def _run(self, command: Sequence[str]) -> None:
        next_plan = self.clock.monotonic()
        while True:
            now = self.clock.monotonic()
            if self._cancel is not None:
                self._cancelling(now)
            self._count_progress()
            if self._watch_nodes():
                self.report.completed = True
                return
            if self._cancel is None and not self._finishing and now >= next_plan:
                next_plan = now + self.plan_every_s
                self._reconcile(command)
            self.ledger.retry()
            self.clock.sleep(self.config.poll_s)

    def _cancelling(self, now: float) -> None:
        """Cancelled: every node gets its notice, then the grace.

        Raises:
            Cancelled: once the grace is up, or no node is left.
        """
        assert self._cancel is not None
        if self._cancel_kill_at is None:
            self._cancel_kill_at = now + self.config.cancel_grace_s
            self.progress("cancelling: every node has its grace to checkpoint")
            for node in self.nodes:
                node.release()
        if now >= self._cancel_kill_at or not self.nodes:
            name = signal.Signals(self._cancel).name
            raise Cancelled(
                f"cancelled by {name}: the job was stopped", self._cancel, self.ledger.job_id
            )

    def _client(self) -> PolicyClient:
        history, gap = self.launcher.history()
        key = (history.shape, gap)
        if self._cached_client is None or self._cached_client[0] != key:
            self._cached_client = (key, self.client_for(history, gap, self.launcher.pools))
        return self._cached_client[1]

    def _count_progress(self) -> None:
        """Full-size hours of work: each hour counts the share of the nodes training in it."""
        now = self.launcher.now_hours()
        training = sum(1 for n in self.nodes if n.started and not n.leaving)
        self.report.progress_hours += (now - self._progress_at) * training / self.plan.max_nodes
        self._progress_at = now

    def _watch_nodes(self) -> bool:
        """Notices, kills and ends of the nodes; True once the job is done."""
        now = self.clock.monotonic()
        done = False
        for node in list(self.nodes):
            code = node.instance.poll()
            self._note_start(node, now)
            if code is None:
                if node.market == "spot" and not node.leaving:
                    self._notices.tick(node.watch, now)
                node.watch.kill_if_due(now)
                self._check_stall(node)
                continue
            self._end(node, code)
            done = done or (code == 0 and node.role == "host")
        if done:
            self._end_all(wait_s=self.config.cancel_grace_s)
        return done

    def _noticed(self, watch: Watch, coming: Preemption, drill: bool) -> None:
        """A spot node got the cloud's notice: its pool is taken, the ledger and the job told."""
        node = next(n for n in self.nodes if n.watch is watch)
        pool = watch.instance.placement.pool or ""
        self._taken_until_hours[pool] = coming.at_hours
        node.preempted = True
        self.ledger.record(EntryKind.NOTICE, pool=pool, market="spot", node=node.name)
        self.progress(f"{node.name}: preemption notice on {pool}")

    def _check_stall(self, node: Node) -> None:
        """The host's workers took no step for ``stall_timeout_s`` (hung, or torchrun
        restarting a command that fails at once): every node is killed, a failure."""
        limit = self.config.stall_timeout_s
        if node.role != "host" or node.leaving or limit is None:
            return
        quiet = node.instance.quiet_s()
        if quiet is not None and quiet > limit:
            self.progress(f"no training step for {quiet:.0f} s: ending every node (hung?)")
            node.watch.stalled = True
            for other in self.nodes:
                if other is not node:
                    other.watch.migrating = True  # leaving with the group
                other.instance.kill()

    def _note_start(self, node: Node, now: float) -> None:
        """Read the node's new events: its workers started; on the host, the world size of each
        start and the steps done again (between a resume point and the furthest step reached
        before it: none when every regroup had its checkpoint)."""
        events = node.instance.events
        fresh, node.read = events[node.read :], len(events)
        for event in fresh:
            kind, step = event.get("event"), event.get("step")
            if kind in ("fresh", "resumed") and not node.started:
                node.watch.started_at = now
            if node.role != "host" or not isinstance(step, int):
                continue
            if kind in ("fresh", "resumed"):
                size = event.get("world_size")
                if isinstance(size, int):
                    self.report.world_sizes.append(size)
                self.report.steps_lost += max(0, self._reached_step - step)
            elif kind in ("preempted", "done"):
                self._reached_step = max(self._reached_step, step)

    def _end(self, node: Node, code: int) -> None:
        """Bill an ended node and say how it ended."""
        self._bill(node)
        if code == 0:
            # a node not told to leave ends well only when training is over: no replacement
            self._finishing = self._finishing or not node.leaving
            return
        if node.leaving and self._cancel is not None:
            return
        if node.market == "spot" and code == PREEMPTED_EXIT_CODE and not node.leaving:
            self._taken_unannounced(node)
        if node.preempted:
            pool = node.instance.placement.pool
            self.report.preemptions += 1
            self.ledger.record(EntryKind.PREEMPTION, pool=pool, market="spot", node=node.name)
            self.progress(f"{node.name}: taken back on {pool}; the others regroup")
            return
        if not node.leaving:  # (a released node's place went to spot or the floor shrank)
            self._node_failed(node, code)

    def _bill(self, node: Node) -> None:
        """End the node's instance and bill its hours to the ledger."""
        instance = node.instance
        instance.terminate()
        self.nodes.remove(node)
        if self.gate is not None:
            self.gate.record(self._spend())
        placement = instance.placement
        hours = self.launcher.now_hours() - instance.started_hours
        cost = hours * placement.price
        self.report.cost_usd += cost
        self.report.events.extend({**e, "node": node.name} for e in instance.events)
        self.ledger.record(
            EntryKind.INSTANCE,
            pool=placement.pool,
            market=placement.market,
            hours=hours,
            price=placement.price,
            cost_usd=cost,
            on_demand_price=self.prices.on_demand_quote(placement.pool).usd_per_hour,
            node=node.name,
        )

    def _taken_unannounced(self, node: Node) -> None:
        """A spot node taken back without a word to the supervisor (a cloud's node heard the
        notice itself): its pool is left alone a while, as after a refused launch."""
        node.preempted = True
        pool = node.instance.placement.pool or ""
        self._refused_until[pool] = self.clock.monotonic() + self.config.no_capacity_s
        self.ledger.record(EntryKind.NOTICE, pool=pool, market="spot", node=node.name)

    def _node_failed(self, node: Node, code: int) -> None:
        """A node's exit that was not a preemption; a failed host restarts every node.

        Raises:
            ExecutorError: after ``max_failures`` node failures.
        """
        self.report.failures += 1
        why = (
            f"no training step for {self.config.stall_timeout_s:.0f} s (hung, or failing at "
            "every restart; --stall-timeout)"
            if node.watch.stalled
            else f"exit code {code}"
        )
        pool = node.instance.placement.pool
        self.ledger.record(EntryKind.FAILURE, pool=pool, detail=why, node=node.name)
        if self.report.failures >= self.config.max_failures:
            raise ExecutorError(
                f"{node.name}: {why} (not a preemption), {self.report.failures} node "
                "failures; fix the job and run again (its output is in the job's log)"
            )
        if node.role == "host":  # the rendezvous went with it: the group starts again
            self.progress(f"{node.name} (the rendezvous host) failed: restarting every node")
            for other in self.nodes:
                other.watch.migrating = True  # leaving with the group
                other.instance.kill()

    def _end_all(self, wait_s: float = 0.0) -> None:
        """End every node still running (after ``wait_s`` for them to finish on their own)."""
        until = self.clock.monotonic() + wait_s
        while self.nodes and self.clock.monotonic() < until:
            for node in list(self.nodes):
                if (code := node.instance.poll()) is not None:
                    self._end(node, code)
            self.clock.sleep(self.config.poll_s)
        for node in list(self.nodes):
            node.instance.kill()
            node.instance.poll()
            self._end(node, 0)

    def _reconcile(self, command: Sequence[str]) -> None:
        """Launch and release nodes toward the floor and a full job."""
        if not self._host_there(command):
            return
        floor = self._choose_floor()
        staying = [n for n in self.nodes if not n.leaving]
        spot = [n for n in staying if n.market == "spot"]
        on_demand = self._raise_floor(command, floor, spot)
        pools = self._pools_up()
        if len(on_demand) > floor and pools:
            self._lower_floor(on_demand)
        self._fill_with_spot(command, self.plan.max_nodes - len(on_demand) - len(spot), pools)

    def _host_there(self, command: Sequence[str]) -> bool:
        """Whether the job has its rendezvous host, launching one when no node is left (False
        after a host failure, until the others are gone)."""
        if any(n.role == "host" for n in self.nodes):
            return True
        if self.nodes:
            return False
        self._granted("on-demand", needed=True)
        self._launch(command, "host")
        return True

    def _on_demand_staying(self) -> list[Node]:
        return [n for n in self.nodes if not n.leaving and n.market == "on-demand"]

    def _raise_floor(self, command: Sequence[str], floor: int, spot: list[Node]) -> list[Node]:
        """On-demand nodes up to ``floor`` (a spot node released for each where the job is
        full), as the budget grants them; the on-demand nodes staying."""
        on_demand = self._on_demand_staying()
        for _ in range(floor - len(on_demand)):
            if not self._granted("on-demand", needed=len(on_demand) < self._needed_floor):
                break  # the slot stays with spot
            if len(on_demand) + len(spot) >= self.plan.max_nodes and spot:
                released = spot.pop()
                released.release()
                self.progress(f"{released.name}: released for an on-demand node (the floor rose)")
            self._launch(command, "floor")
            on_demand = self._on_demand_staying()
        return on_demand

    def _lower_floor(self, on_demand: list[Node]) -> None:
        """Release one on-demand floor node (spot is back and the floor fell)."""
        extra = next((n for n in reversed(on_demand) if n.role == "floor"), None)
        if extra is not None:
            extra.release()
            on_demand.remove(extra)
            self.progress(f"{extra.name}: on-demand released (spot is back, the floor fell)")

    def _fill_with_spot(self, command: Sequence[str], open_slots: int, pools: list[str]) -> None:
        """Spot nodes in the open slots, round the pools, as the budget grants them."""
        for i in range(max(0, open_slots)):
            if not pools or not self._granted("spot", needed=False, pool=pools[i % len(pools)]):
                break
            self._launch(command, "spot", pools[i % len(pools)])

    def _choose_floor(self) -> int:
        """The fixed floor, or ``auto``'s from the deadline and the spot nodes held; notes
        how much of it the deadline asks for (all of ``auto``'s)."""
        plan, job = self.plan, self.config.job
        needed = deadline_floor(
            plan,
            spot_held=sum(1 for n in self.nodes if n.market == "spot" and not n.leaving),
            time_left_hours=job.deadline_hours - self.launcher.now_hours(),
            work_left_hours=job.compute_hours - self.report.progress_hours,
        )
        floor = needed if plan.floor is None else plan.floor
        self._needed_floor = min(floor, needed)
        if floor != self._floor or not self.report.floors:
            self.report.floors.append(floor)
            if self.report.floors[:-1]:
                self.progress(f"on-demand floor now {floor} of {plan.max_nodes} nodes")
        self._floor = floor
        return floor

    def _spend(self) -> float:
        """What the job's nodes cost now ($/h), leaving ones until they are gone."""
        return sum(n.instance.placement.price for n in self.nodes)

    def _granted(self, market: str, *, needed: bool, pool: str | None = None) -> bool:
        """Whether the gate (if any) lets the job add a node in ``market`` (``pool``)."""
        if self.gate is None:
            return True
        price = (
            self.prices.spot_quote(pool).usd_per_hour
            if pool is not None
            else self.prices.on_demand_quote().usd_per_hour
        )
        granted = self.gate.claim(self._spend() + price, market=market, needed=needed)
        if granted == (market in self._gate_refused):
            self._gate_refused ^= {market}
            self.progress(
                f"the budget has room for {market} nodes again"
                if granted
                else f"the budget refuses another {market} node for now"
            )
        return granted

    def _endpoint(self, role: Role) -> str:
        """The rendezvous a node joins: the plan's own on the host (its store listens on every
        interface), the host's address on the others (another machine, on a cloud)."""
        host = next((n for n in self.nodes if n.role == "host"), None)
        if role == "host" or host is None or host.instance.address is None:
            return self.plan.rdzv_endpoint
        port = self.plan.rdzv_endpoint.rsplit(":", 1)[-1]
        return f"{host.instance.address}:{port}"

    def _pools_up(self) -> list[str]:
        """Pools spot nodes may go to now, longest expected run first."""
        hours, now = self.launcher.now_hours(), self.clock.monotonic()
        up = [
            p
            for p, available in self.launcher.available().items()
            if available
            and self._taken_until_hours.get(p, 0.0) <= hours
            and self._refused_until.get(p, 0.0) <= now
        ]
        if len(up) < 2:
            return up
        client = self._client()
        runs = {p: client.forecast(p).expected_hours_to_preemption or 0.0 for p in up}
        return sorted(up, key=lambda p: -runs[p])

    def _launch(self, command: Sequence[str], role: Role, pool: str | None = None) -> Node | None:
        """Start a node (its torchrun agent) on-demand, or on spot in ``pool`` (None: the pool
        had no capacity; it is left alone a while).

        Raises:
            ExecutorError: when the command cannot be started, or on-demand has no capacity.
        """
        plan = self.plan
        if pool is None:
            quote = self.prices.on_demand_quote()
            placement = Placement(market="on-demand", pool=None, price=quote.usd_per_hour)
        else:
            placement = Placement(
                market="spot", pool=pool, price=self.prices.spot_quote(pool).usd_per_hour
            )
        name = f"node-{self._named}"
        elastic = Elastic(
            min_nodes=plan.min_nodes,
            max_nodes=plan.max_nodes,
            nproc_per_node=plan.nproc_per_node,
            rdzv_endpoint=self._endpoint(role),
            rdzv_id=self.ledger.job_id,
            max_restarts=plan.max_restarts,
            last_call_timeout_s=plan.last_call_timeout_s,
            is_host=role == "host",
        )
        env = {
            **os.environ,
            "SPOTWISE_POOL": pool or "",
            "SPOTWISE_MARKET": placement.market,
            "SPOTWISE_NODE": name,
            # a new store address each round: with the shared store, a host that stays rank 0
            # does not publish it again, and a node that joins later waits for it forever
            "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1",
        }
        sink = self.log.for_instance(placement) if self.log else None
        self.progress(f"{name}: launching ({role}) {placement.describe()}")
        try:
            instance = self.launcher.launch(
                placement, torchrun_command(command, elastic, self.launcher.python), env, sink
            )
        except NoCapacity as exc:
            self._refused_until[pool or ""] = self.clock.monotonic() + self.config.no_capacity_s
            if self.gate is not None:
                self.gate.record(self._spend())  # the node it claimed for is not there
            if role != "spot":
                raise ExecutorError(f"no on-demand capacity for the {role} node: {exc}") from exc
            self.progress(f"{name}: no capacity in {pool} ({exc})")
            return None
        except LaunchError as exc:
            self.ledger.record(EntryKind.FAILURE, pool=pool, detail=str(exc), node=name)
            raise
        self._named += 1
        node = Node(
            name=name, role=role, watch=Watch(instance=instance, launched_at=self.clock.monotonic())
        )
        self.nodes.append(node)
        if role == "host":
            self.ledger.running_in(instance.process_group())
        self.report.instances += 1
        self.report.placements.append(f"{name}: {placement.describe()}")
        return node

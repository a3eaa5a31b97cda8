"""The state of a fake Huawei Cloud project behind the ECS operations Spotwise calls: servers
created as a job (``extendparam.marketType=spot`` with ``spotPrice`` and
``interruption_policy``), listed by tag, shown, tagged and deleted; the spot sell status per zone
and flavor (``flavor-sell-policies``); spot servers taken back on cue. Each answer is in the form
of the SDK's response model (checked by :mod:`.api`)."""

from __future__ import annotations

import itertools
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.executor.local_clouds.http import Answer

SOLD = "available"
SOLD_OUT = "sellout"


def error(status: int, code: str, message: str) -> Answer:
    """An ECS error body (the SDK reads ``error.code`` and ``error.message``)."""
    return Answer(status, {"error": {"code": code, "message": message}})


@dataclass(slots=True)
class Server:
    """One server: what its create request said, and where it is in its life."""

    id: str
    name: str
    flavor: str
    zone: str
    image: str
    created: str
    market: str
    bid: str | None
    interruption_policy: str | None
    user_data: str
    tags: dict[str, str]
    status: str = "ACTIVE"
    taken_back: bool = False

    def detail(self, project: str) -> dict[str, Any]:
        """The server as ``ServerDetail`` writes it."""
        return {
            "id": self.id,
            "name": self.name,
            "status": self.status,
            "created": self.created,
            "updated": self.created,
            "tenant_id": project,
            "flavor": {"id": self.flavor, "name": self.flavor},
            "image": {"id": self.image},
            "OS-EXT-AZ:availability_zone": self.zone,
            "tags": [f"{k}={v}" for k, v in self.tags.items()],
            "metadata": {"charging_mode": "2" if self.market == "spot" else "0"},
        }


@dataclass(slots=True)
class EcsProject:
    """The servers and jobs of one project; ``sell`` maps (zone, flavor) to the spot sell status
    (``available``/``sellout``); ``clock`` dates the servers and jobs."""

    project_id: str
    sell: dict[tuple[str, str], str]
    clock: Clock = SYSTEM_CLOCK
    servers: dict[str, Server] = field(default_factory=dict)
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    on_create: Callable[[Server], None] = field(default=lambda server: None)
    """Called with each server once it is created (the instance player boots it)."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def create_servers(self, body: dict[str, Any]) -> Answer:
        server = body["server"]
        extend = server.get("extendparam") or {}
        zone = server.get("availability_zone") or ""
        flavor = server["flavorRef"]
        market = extend.get("marketType") or "on_demand"
        job = self._job("createServer")
        if market == "spot" and self.sell.get((zone, flavor), SOLD_OUT) != SOLD:
            job.update(status="FAIL", fail_reason=f"spot {flavor} is sold out in {zone!r}")
            job["error_code"] = "Ecs.0000"
            return Answer(200, {"job_id": job["job_id"], "serverIds": []})
        made = []
        with self._lock:
            for _ in range(server.get("count") or 1):
                made.append(
                    Server(
                        id=str(uuid.uuid4()),
                        name=server["name"],
                        flavor=flavor,
                        zone=zone,
                        image=server["imageRef"],
                        created=self._now().strftime("%Y-%m-%dT%H:%M:%SZ"),
                        market=market,
                        bid=extend.get("spotPrice"),
                        interruption_policy=extend.get("interruption_policy"),
                        user_data=server.get("user_data") or "",
                        tags={
                            t["key"]: t.get("value", "") for t in server.get("server_tags") or ()
                        },
                    )
                )
            for made_server in made:
                self.servers[made_server.id] = made_server
        job.update(
            status="SUCCESS",
            entities={
                "sub_jobs_total": len(made),
                "sub_jobs": [
                    {
                        "status": "SUCCESS",
                        "job_type": "createSingleServer",
                        "entities": {"server_id": s.id},
                    }
                    for s in made
                ],
            },
        )
        for made_server in made:
            self.on_create(made_server)
        return Answer(200, {"job_id": job["job_id"], "serverIds": [s.id for s in made]})

    def list_servers(self, query: dict[str, str]) -> Answer:
        wanted = [t for t in (query.get("tags") or "").split(",") if t]
        with self._lock:
            found = [
                s
                for s in self.servers.values()
                if s.status != "DELETED"
                and all(t in (f"{k}={v}" for k, v in s.tags.items()) for t in wanted)
                and (not query.get("name") or query["name"] in s.name)
                and (not query.get("status") or s.status == query["status"])
            ]
        offset = int(query.get("offset") or 1)  # ECS pages count from 1
        limit = int(query.get("limit") or 25)
        page = found[(offset - 1) * limit : offset * limit]
        return Answer(
            200, {"count": len(found), "servers": [s.detail(self.project_id) for s in page]}
        )

    def show_server(self, server_id: str) -> Answer:
        server = self.servers.get(server_id)
        if server is None or (server.status == "DELETED" and not server.taken_back):
            return error(404, "Ecs.0114", f"the server {server_id[:40]} does not exist")
        return Answer(200, {"server": server.detail(self.project_id)})

    def delete_servers(self, body: dict[str, Any]) -> Answer:
        job = self._job("deleteServer")
        for entry in body.get("servers") or ():
            server = self.servers.get(entry["id"])
            if server is not None:
                server.status = "DELETED"
        job["status"] = "SUCCESS"
        return Answer(200, {"job_id": job["job_id"]})

    def add_tags(self, server_id: str, body: dict[str, Any]) -> Answer:
        if body.get("action") != "create":
            return error(400, "Ecs.0005", f"action: 'create', not {body.get('action')!r}")
        server = self.servers.get(server_id)
        if server is None:
            return error(404, "Ecs.0114", f"the server {server_id[:40]} does not exist")
        server.tags.update({t["key"]: t.get("value", "") for t in body.get("tags") or ()})
        return Answer(204)

    def show_tags(self, server_id: str) -> Answer:
        server = self.servers.get(server_id)
        if server is None:
            return error(404, "Ecs.0114", f"the server {server_id[:40]} does not exist")
        return Answer(200, {"tags": [{"key": k, "value": v} for k, v in server.tags.items()]})

    def sell_policies(self, query: dict[str, str]) -> Answer:
        rows: list[dict[str, Any]] = [
            {
                "id": n,
                "flavor_id": flavor,
                "availability_zone_id": zone,
                "sell_status": status,
                "sell_mode": "spot",
            }
            for n, ((zone, flavor), status) in enumerate(sorted(self.sell.items()), start=1)
            if query.get("flavor_id") in (None, flavor)
            and query.get("availability_zone_id") in (None, zone)
            and query.get("sell_status") in (None, status)
            and query.get("sell_mode") in (None, "spot")
        ]
        after = int(query.get("marker") or 0)
        page = [r for r in rows if r["id"] > after][: int(query.get("limit") or len(rows) or 1)]
        return Answer(200, {"count": len(rows), "sell_policies": page})

    def show_job(self, job_id: str) -> Answer:
        job = self.jobs.get(job_id)
        if job is None:
            return error(404, "Common.0024", f"the job {job_id[:40]} does not exist")
        return Answer(200, job)

    def take_back(self, server_id: str) -> Server:
        """Reclaim a spot server (its metadata notice is the player's to show)."""
        server = self.servers[server_id]
        server.status, server.taken_back = "DELETED", True
        return server

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.clock.time(), UTC)

    def _job(self, kind: str) -> dict[str, Any]:
        stamp = self._now().strftime("%Y-%m-%dT%H:%M:%S.000Z")
        job = {"job_id": f"ff80808{next(self._ids):025x}", "job_type": kind, "begin_time": stamp}
        job["end_time"] = stamp
        self.jobs[job["job_id"]] = job
        return job

"""A fake CSMS (Huawei Cloud's secret store, of Data Encryption Workshop): secrets created,
listed, read by their latest version and deleted, in the form of the SDK's response models."""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.executor.clouds.huawei.fake.ecs import error
from spotwise.executor.local_clouds.http import Answer


@dataclass(slots=True)
class SecretStore:
    """The secrets of one project by name; ``clock`` dates them."""

    clock: Clock = SYSTEM_CLOCK
    secrets: dict[str, dict[str, Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def create(self, body: dict[str, Any]) -> Answer:
        name = body["name"]
        with self._lock:
            if name in self.secrets:
                return error(400, "CSMS.0401", f"the secret {name[:60]} exists")
            secret = {
                "id": str(uuid.uuid4()),
                "name": name,
                "state": "ENABLED",
                "description": body.get("description", ""),
                "create_time": int(self.clock.time() * 1000),
                "secret_type": body.get("secret_type", "COMMON"),
            }
            self.secrets[name] = secret | {"_value": body.get("secret_string", "")}
        return Answer(200, {"secret": secret})

    def listed(self, query: dict[str, str]) -> Answer:
        with self._lock:
            every = [
                {k: v for k, v in s.items() if not k.startswith("_")} for s in self.secrets.values()
            ]
        after = query.get("marker")
        start = next((i + 1 for i, s in enumerate(every) if s["name"] == after), 0)
        limit = int(query.get("limit") or 50)
        page = every[start : start + limit]
        more = start + limit < len(every)
        info = {
            "next_marker": page[-1]["name"] if more and page else None,
            "current_count": len(page),
        }
        return Answer(200, {"secrets": page, "page_info": {k: v for k, v in info.items() if v}})

    def version(self, name: str, version: str) -> Answer:
        secret = self.secrets.get(name)
        if secret is None or version != "latest":
            return error(404, "CSMS.0207", f"no version {version[:20]} of {name[:60]}")
        return Answer(200, {"version": {"secret_string": secret["_value"]}})

    def delete(self, name: str) -> Answer:
        with self._lock:
            if self.secrets.pop(name, None) is None:
                return error(404, "CSMS.0207", f"the secret {name[:60]} does not exist")
        return Answer(204)

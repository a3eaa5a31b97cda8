"""A small fake of the AWS, GCP, Azure and Huawei Cloud instance metadata endpoints on
127.0.0.1: the spot notices an instance reads, given without a cloud (``spotwise try``, the
tests).

State is set by its user: ``aws_action`` / ``aws_rebalance`` (a dict, None for 404, or a str
served as a garbage body), ``instance_id`` (str), ``token_ttl_s`` (tokens expire; an expired or
missing token gets 401), ``gcp_preempted`` (body text), ``azure_events`` (dict or garbage
str), ``huawei_action`` (a dict, None for 404, or a garbage str), ``huawei_server`` (the
server's id in ``meta_data.json``) and ``huawei_keys`` (the agency's ``securitykey``).
"""

from __future__ import annotations

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from spotwise.core.clock import SYSTEM_CLOCK, Clock


class FakeMetadata:
    """Serve until :meth:`close`; counts requests per path."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self.aws_action: dict[str, Any] | str | None = None
        self.aws_rebalance: dict[str, Any] | str | None = None
        self.instance_id: str | None = None
        self.gcp_preempted = "FALSE"
        self.azure_events: dict[str, Any] | str = {"DocumentIncarnation": 1, "Events": []}
        self.huawei_action: dict[str, Any] | str | None = None
        self.huawei_server: str | None = None
        self.huawei_keys = {"access": "local", "secret": "local", "securitytoken": "local"}
        self.tokens: dict[str, float] = {}
        self.hits: dict[str, int] = {}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def reply(self, status: int, body: str | bytes = b"") -> None:
                data = body.encode() if isinstance(body, str) else body
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_PUT(self) -> None:
                fake.hits[self.path] = fake.hits.get(self.path, 0) + 1
                ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds")
                if self.path != "/latest/api/token" or ttl is None:
                    self.reply(400)
                    return
                token = uuid.uuid4().hex
                fake.tokens[token] = fake.clock.monotonic() + float(ttl)
                self.reply(200, token)

            def do_GET(self) -> None:
                fake.hits[self.path] = fake.hits.get(self.path, 0) + 1
                if self.path.startswith("/latest/meta-data/"):
                    token = self.headers.get("X-aws-ec2-metadata-token", "")
                    if fake.tokens.get(token, 0.0) < fake.clock.monotonic():
                        self.reply(401)
                        return
                    item = {
                        "/latest/meta-data/spot/instance-action": fake.aws_action,
                        "/latest/meta-data/events/recommendations/rebalance": fake.aws_rebalance,
                        "/latest/meta-data/instance-id": fake.instance_id,
                    }.get(self.path)
                    self.reply(404) if item is None else self.reply(
                        200, item if isinstance(item, str) else json.dumps(item)
                    )
                elif self.path == "/computeMetadata/v1/instance/preempted":
                    if self.headers.get("Metadata-Flavor") != "Google":
                        self.reply(403)
                    else:
                        self.reply(200, fake.gcp_preempted)
                elif self.path.startswith("/metadata/scheduledevents"):
                    if self.headers.get("Metadata") != "true":
                        self.reply(400)
                    else:
                        events = fake.azure_events
                        self.reply(200, events if isinstance(events, str) else json.dumps(events))
                elif self.path == "/openstack/latest/spot/instance-action":
                    action = fake.huawei_action
                    self.reply(404) if action is None else self.reply(
                        200, action if isinstance(action, str) else json.dumps(action)
                    )
                elif self.path == "/openstack/latest/meta_data.json" and fake.huawei_server:
                    self.reply(200, json.dumps({"uuid": fake.huawei_server}))
                elif self.path == "/openstack/latest/securitykey":
                    self.reply(200, json.dumps({"credential": fake.huawei_keys}))
                else:
                    self.reply(404)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def expire_tokens(self) -> None:
        """Expire every token handed out (the next read with one gets 401)."""
        for token in self.tokens:
            self.tokens[token] = 0.0

    def close(self) -> None:
        """Stop serving and free the port."""
        self._server.shutdown()
        self._server.server_close()

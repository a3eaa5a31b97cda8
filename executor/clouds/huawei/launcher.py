"""The Huawei Cloud launcher: each instance is an ECS server, spot (``extendparam.marketType``
``spot``, the bid as ``spotPrice``, ``interruption_policy`` ``immediate``) or pay-per-use,
created with the ECS SDK and tagged with the ledger's job id.

Its user data is the boot script (:mod:`executor.clouds.huawei.boot_script`): it fetches the
shipped workdir and wheel from OBS, runs the command with Huawei's notice watcher on, streams its
output to ``obs://BUCKET/spotwise/jobs/JOB/INSTANCE/log/`` and writes the exit code next to it,
then shuts down. A spot create that ECS fails because the flavor is sold out in the zone raises
:class:`NoCapacity`, so the supervisor can choose again.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.executor.clouds.cloud_launcher import CloudLauncher
from spotwise.executor.clouds.code_bundle import ShippedCode
from spotwise.executor.clouds.huawei.boot_script import boot_script
from spotwise.executor.clouds.huawei.clients import sdk_call
from spotwise.executor.clouds.huawei.target import HuaweiTarget
from spotwise.executor.clouds.instance import BucketInstance
from spotwise.executor.clouds.orphans import this_host
from spotwise.executor.errors import ExecutorError, NoCapacity
from spotwise.executor.launchers.base import Placement, echo

JOB_TAG = "spotwise-job"
HOST_TAG = "spotwise-host"
MARKET_TAG = "spotwise-market"
SECRET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
SECRET_PREFIX = "spotwise-"
GONE = ("DELETED", "SHUTOFF", "ERROR", "SOFT_DELETED")
"""ECS states of a server that runs no more."""
PAGE = 100
"""Servers asked for a page."""
JOB_POLL_S = 2.0
JOB_WAIT_S = 600.0
"""How often and how long a create job is asked about (ECS creates a server in about a
minute)."""


def secret_name(job_id: str, variable: str) -> str:
    """The CSMS secret holding ``variable`` of job ``job_id``."""
    return f"{SECRET_PREFIX}{job_id}-{variable}"


def job_description(job_id: str) -> str:
    """A job's secret's description: its job and host, as gc reads them back."""
    return f"{JOB_TAG}={job_id} {HOST_TAG}={this_host()}"


class HuaweiInstance(BucketInstance["HuaweiLauncher"]):
    """One ECS server running the command; its output comes back from OBS in chunks."""

    noun = "server"
    service = "ECS"
    first_state = "BUILD"
    _ended_here = False
    """Whether Spotwise deleted it (then its end is no reclaim)."""

    def _read(self, name: str) -> str | None:
        """An object of this server's folder as text, None while it is not there."""
        from botocore.exceptions import ClientError

        try:
            body = self.launcher.obs.get_object(Bucket=self.launcher.bucket, Key=self._key(name))
        except ClientError as exc:
            if exc.response["Error"]["Code"] in ("NoSuchKey", "404"):
                return None
            raise
        return str(body["Body"].read().decode(errors="replace"))

    def _chunks_after(self, folder: str, after: str) -> Iterator[tuple[str, str]]:
        """The chunks OBS lists after ``after``, page by page, each read as it comes."""
        obs, bucket = self.launcher.obs, self.launcher.bucket
        pages = obs.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=folder, StartAfter=after or folder
        )
        for page in pages:
            for item in page.get("Contents", []):
                body = obs.get_object(Bucket=bucket, Key=item["Key"])
                yield item["Key"], body["Body"].read().decode(errors="replace")

    def _gone(self) -> bool:
        """Whether ECS shows it ended (or shows it no more)."""
        from huaweicloudsdkcore.exceptions.exceptions import ClientRequestException
        from huaweicloudsdkecs.v2 import ShowServerRequest

        try:
            server = self.launcher.ecs.show_server(ShowServerRequest(server_id=self.instance_id))
        except ClientRequestException as exc:
            if exc.status_code == 404:
                self._state = "DELETED"
                return True
            raise
        self._state = str(server.server.status)
        return self._state in GONE

    def _taken_back(self) -> bool:
        """A spot server that ended while Spotwise had not ended it: ECS reclaimed it (ECS
        tells a reclaim from a deletion only in the server's events, which this does not
        read)."""
        return self.placement.market == "spot" and not self._ended_here

    def _end(self) -> None:
        """Delete it: an OS shutdown, i.e. SIGTERM to the job."""
        from huaweicloudsdkecs.v2 import DeleteServersRequest, DeleteServersRequestBody, ServerId

        self._ended_here = True
        body = DeleteServersRequestBody(servers=[ServerId(id=self.instance_id)])
        sdk_call(
            f"deleting server {self.instance_id}",
            lambda: self.launcher.ecs.delete_servers(DeleteServersRequest(body=body)),
        )


class HuaweiLauncher(CloudLauncher):
    """Creates ECS servers in the zones of one region (the pools)."""

    name = "huawei"

    def __init__(
        self,
        *,
        target: HuaweiTarget,
        ecs: Any,
        obs: Any,
        csms: Any,
        job_id: str,
        code: ShippedCode,
        secrets: dict[str, str] | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """``ecs``, ``obs`` and ``csms`` are clients of the target's project (OBS through its S3
        API); ``code`` the shipped workdir and wheel; ``secrets`` (variable name → value) go to
        CSMS as ``spotwise-JOB-NAME``, which the servers' agency reads, until :meth:`close`.

        Raises:
            ExecutorError: for incomplete settings, a secret's name, or CSMS refusing one.
        """
        target.require_complete()
        super().__init__(
            pools=target.zones_or_default,
            job_id=job_id,
            prefix=f"spotwise/jobs/{job_id}",
            clock=clock,
        )
        self.target, self.ecs, self.obs, self.csms, self.code = target, ecs, obs, csms, code
        self.bucket = target.bucket or ""
        self.secret_names = self._store_secrets(secrets or {})

    def _store_secrets(self, secrets: dict[str, str]) -> dict[str, str]:
        """Put each secret in CSMS; the secret's name of each variable."""
        from huaweicloudsdkcsms.v1 import CreateSecretRequest, CreateSecretRequestBody

        names: dict[str, str] = {}
        for variable, value in secrets.items():
            if not SECRET_NAME.fullmatch(variable):
                raise ExecutorError(f"secret name {variable[:40]!r}: use letters, digits and _")
            name = secret_name(self.job_id, variable)
            body = CreateSecretRequestBody(
                name=name, secret_string=value, description=job_description(self.job_id)
            )
            sdk_call(
                f"storing secret {variable} in CSMS",
                lambda body=body: self.csms.create_secret(CreateSecretRequest(body=body)),
            )
            names[variable] = name
        return names

    def close(self) -> None:
        """Delete the job's secrets from CSMS (the servers are gone by now)."""
        from huaweicloudsdkcore.exceptions.exceptions import ClientRequestException
        from huaweicloudsdkcsms.v1 import DeleteSecretRequest

        for name in self.secret_names.values():
            try:
                self.csms.delete_secret(DeleteSecretRequest(secret_name=name))
            except ClientRequestException as exc:
                if exc.status_code != 404:  # gone already (gc ended it): nothing to delete
                    raise ExecutorError(
                        f"cannot delete {name} from CSMS: {exc.error_msg}; delete it by hand"
                    ) from None
        self.secret_names = {}

    def launch(
        self,
        placement: Placement,
        command: Sequence[str],
        env: dict[str, str],
        log: Callable[[str], None] | None = None,
    ) -> HuaweiInstance:
        """Create one server at the placement's zone and market and wait for its create job;
        the server's output goes to ``log`` (default: printed, prefixed by where it runs).

        Raises:
            NoCapacity: when the spot create fails (the flavor sold out in the zone).
            ExecutorError: when ECS refuses the request or its job fails otherwise.
        """
        from huaweicloudsdkecs.v2 import CreateServersRequest

        body = self.request(placement, command, env)
        where = placement.pool or "any zone"
        created = sdk_call(
            f"creating a server in {where}",
            lambda: self.ecs.create_servers(CreateServersRequest(body=body)),
        )
        job = self._finished(created.job_id, where)
        if job.status != "SUCCESS":
            reason = f"{where}: {job.fail_reason or job.status}"
            if placement.market == "spot":
                raise NoCapacity(reason)
            raise ExecutorError(f"creating a server in {reason}")
        (server_id,) = created.server_ids
        return HuaweiInstance(self, server_id, placement, log or echo(placement))

    def request(self, placement: Placement, command: Sequence[str], env: dict[str, str]) -> Any:
        """The create request's body of one server at ``placement``: its boot script, tags,
        zone, agency and, on spot, the bid (:meth:`_cap`) as ``spotPrice``."""
        from huaweicloudsdkecs import v2

        target = self.target
        script = boot_script(
            command,
            env,
            code=self.code,
            region=target.region,
            project=target.project_id or "",
            bucket=self.bucket,
            prefix=self.prefix,
            setup=target.setup,
            secrets=self.secret_names,
            python=target.python,
        )
        extend = v2.PrePaidServerExtendParam(charging_mode="postPaid", region_id=target.region)
        if placement.market == "spot":
            extend.market_type = "spot"
            extend.interruption_policy = "immediate"
            if (cap := self._cap(placement)) is not None:
                extend.spot_price = f"{cap:.4f}"
        server = v2.PrePaidServer(
            image_ref=target.image_id,
            flavor_ref=target.instance_type,
            name=f"spotwise-{self.job_id}"[:63],
            user_data=base64.b64encode(script.encode()).decode(),
            vpcid=target.vpc_id,
            nics=[v2.PrePaidServerNic(subnet_id=target.subnet_id)],
            root_volume=v2.PrePaidServerRootVolume(volumetype="SSD"),
            availability_zone=placement.pool,
            extendparam=extend,
            metadata={"agency_name": target.agency or ""},
            server_tags=[
                v2.PrePaidServerTag(key=JOB_TAG, value=self.job_id),
                v2.PrePaidServerTag(key=HOST_TAG, value=this_host()),
                v2.PrePaidServerTag(key=MARKET_TAG, value=placement.market),
            ],
        )
        return v2.CreateServersRequestBody(server=server)

    def _cap(self, placement: Placement) -> float | None:
        """The bid: the policy's, never above the user's --max-price."""
        caps = [c for c in (placement.bid, self.target.max_price) if c is not None]
        return min(caps) if caps else None

    def _finished(self, job_id: str, where: str) -> Any:
        """The create job once it has succeeded or failed."""
        from huaweicloudsdkecs.v2 import ShowJobRequest

        waited = 0.0
        while True:
            job = sdk_call(
                f"the create job of {where}",
                lambda: self.ecs.show_job(ShowJobRequest(job_id=job_id)),
            )
            if job.status in ("SUCCESS", "FAIL"):
                return job
            if waited >= JOB_WAIT_S:
                raise ExecutorError(f"creating a server in {where}: ECS job {job_id} still runs")
            self.wait(JOB_POLL_S)
            waited += JOB_POLL_S

    def running_instances(self) -> list[str]:
        """This job's servers that have not ended (for teardown checks)."""
        return job_servers(self.ecs, self.job_id)


def list_servers(ecs: Any, who: str, tags: str | None = None) -> Iterator[Any]:
    """Every server of the project (with ``tags``, ``KEY=VALUE``: those tagged so), page by
    page.

    Raises:
        ExecutorError: when ECS refuses, naming ``who`` asked.
    """
    from huaweicloudsdkecs.v2 import ListServersDetailsRequest

    offset = 1  # ECS counts pages from 1
    while True:
        request = ListServersDetailsRequest(limit=PAGE, offset=offset, tags=tags)
        page = sdk_call(
            f"{who}: listing ECS servers",
            lambda request=request: ecs.list_servers_details(request),
        )
        servers = page.servers or []
        yield from servers
        if len(servers) < PAGE:
            return
        offset += 1


def job_servers(ecs: Any, job_id: str) -> list[str]:
    """The ids of job ``job_id``'s servers that have not ended, by its tag."""
    tagged = list_servers(ecs, f"job {job_id}", tags=f"{JOB_TAG}={job_id}")
    return [s.id for s in tagged if s.status not in GONE]

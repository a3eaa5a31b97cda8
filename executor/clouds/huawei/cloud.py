"""Huawei Cloud through the cloud seam (:class:`~executor.clouds.base.Cloud`): ECS spot servers
tagged with the ledger's job id and bid with ``spotPrice``, code, logs and checkpoints in OBS
(its S3 API), secrets in CSMS, the metadata's spot ``instance-action`` notice."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spotwise.executor.clouds.base import (
    Check,
    CloudOptions,
    CloudTarget,
    Say,
    SetUp,
    bucket_folder,
)
from spotwise.executor.clouds.huawei.notice import HuaweiSpotNotice
from spotwise.executor.clouds.huawei.target import HuaweiTarget
from spotwise.executor.errors import ExecutorError

if TYPE_CHECKING:
    from spotwise.executor.clouds.code_bundle import Code, ShippedCode
    from spotwise.executor.clouds.huawei.gc import HuaweiSweep
    from spotwise.executor.clouds.huawei.launcher import HuaweiLauncher


def _huawei(target: CloudTarget) -> HuaweiTarget:
    if not isinstance(target, HuaweiTarget):
        raise ExecutorError(f"the huawei cloud was given {target.cloud}'s settings")
    return target


def _obs(target: HuaweiTarget, who: str) -> Any:
    """An S3 client of the region's OBS with the user's AK/SK.

    Raises:
        ExecutorError: without the keys.
    """
    from spotwise.executor.clouds.huawei.obs import user_client

    try:
        return user_client(target.region)
    except KeyError as missing:
        raise ExecutorError(
            f"{who}: no Huawei Cloud credentials ({missing.args[0]} is not set): set "
            "HUAWEICLOUD_SDK_AK and HUAWEICLOUD_SDK_SK (docs/huawei.md)"
        ) from None


class HuaweiCloud:
    """Huawei Cloud ECS, OBS and CSMS (Huawei's Python SDK and boto3; ``endpoint_url`` reaches
    another ECS and CSMS, a local fake; ``SPOTWISE_HUAWEI_OBS_URL`` another OBS)."""

    name = "huawei"
    storage_scheme = "obs"
    notice_kind = HuaweiSpotNotice
    notice_s = HuaweiSpotNotice.notice_s
    """Its notice source's window (its notice.py defines it, once)."""
    docs = "docs/huawei.md"

    def target(self, options: CloudOptions) -> HuaweiTarget:
        """The Huawei Cloud settings the shared options name."""
        return HuaweiTarget.from_options(options)

    def target_from_dict(self, data: Mapping[str, Any]) -> HuaweiTarget:
        """The Huawei Cloud settings back from their JSON."""
        return HuaweiTarget.from_dict(data)

    def ship_code(
        self, target: CloudTarget, *, ignore_file: Path | None = None, wheel: Path | None = None
    ) -> ShippedCode:
        """Ship the workdir and a Spotwise wheel to the bucket, once for any number of jobs.

        Raises:
            ExecutorError: when the settings are incomplete, or the code cannot be shipped.
        """
        from spotwise.executor.clouds import code_bundle
        from spotwise.executor.clouds.huawei.storage import upload

        huawei = _huawei(target)
        huawei.require_complete()
        obs, bucket = _obs(huawei, "--launcher huawei"), huawei.bucket or ""
        return code_bundle.ship(
            lambda bundle: upload(obs, bucket, bundle),
            f"obs://{bucket}",
            Path(huawei.workdir),
            ignore_file=ignore_file,
            wheel=wheel,
            say=lambda line: print(f"shipping {line}", file=sys.stderr),
        )

    def launcher(
        self,
        target: CloudTarget,
        code: Code,
        secrets: dict[str, str] | None = None,
        *,
        job_id: str,
    ) -> HuaweiLauncher:
        """A launcher of job ``job_id``'s servers (the ledger's id: ``gc huawei`` judges a
        server by it).

        Raises:
            ExecutorError: without a job id, or when the secrets cannot be stored.
        """
        from spotwise.executor.clouds.code_bundle import shipped
        from spotwise.executor.clouds.huawei.clients import csms_client, ecs_client
        from spotwise.executor.clouds.huawei.launcher import HuaweiLauncher

        huawei = _huawei(target)
        if not job_id:
            raise ExecutorError("a Huawei Cloud launcher needs the ledger's job id (new_job_id())")
        who = "--launcher huawei"
        return HuaweiLauncher(
            target=huawei,
            ecs=ecs_client(huawei, who),
            obs=_obs(huawei, who),
            csms=csms_client(huawei, who),
            job_id=job_id,
            code=shipped(code, self.name),
            secrets=secrets or {},
        )

    def job_instances(self, target: CloudTarget, job_id: str) -> list[str]:
        """Job ``job_id``'s servers that have not ended, by its tag."""
        from spotwise.executor.clouds.huawei.clients import ecs_client
        from spotwise.executor.clouds.huawei.launcher import job_servers

        return job_servers(ecs_client(_huawei(target), "jobs"), job_id)

    def checkpoint_url(self, target: CloudTarget, run: str) -> str:
        """``obs://BUCKET/spotwise/checkpoints/RUN``."""
        from spotwise.executor.clouds.huawei.setup import CHECKPOINT_PREFIX

        return f"obs://{_huawei(target).bucket}/{CHECKPOINT_PREFIX}/{run}"

    def checkpoint_bytes(self, target: CloudTarget, url: str) -> int:
        """The bytes of the objects under ``url``, a folder of the bucket.

        Raises:
            ExecutorError: for a URL outside the bucket, or when it cannot be listed.
        """
        from spotwise.executor.clouds.huawei.storage import folder_bytes

        huawei = _huawei(target)
        prefix = bucket_folder(url, self.storage_scheme, huawei.bucket or "")
        return folder_bytes(_obs(huawei, "sizing checkpoints"), huawei.bucket or "", prefix, url)

    def set_up(self, target: CloudTarget, say: Say) -> SetUp:
        """A private OBS bucket; the agency is made by hand (docs/huawei.md).

        Raises:
            ExecutorError: without --bucket, or when OBS refuses.
        """
        from spotwise.executor.clouds.huawei.setup import make_bucket

        huawei = _huawei(target)
        if not huawei.bucket:
            raise ExecutorError("setup huawei needs --bucket NAME (the OBS bucket to make)")
        made: list[str] = []

        def tell(line: str) -> None:
            made.append(line)
            say(line)

        make_bucket(_obs(huawei, "setup huawei"), huawei.bucket, huawei.region, tell)
        return SetUp(
            made=tuple(made),
            next_steps=(
                f"make the servers' agency with the rights of {self.docs} (IAM, by hand), then",
                f"  spotwise check huawei --project {huawei.project_id or 'PROJECT_ID'} "
                f"--region {huawei.region} --bucket {huawei.bucket} --identity AGENCY "
                "--network VPC_ID/SUBNET_ID --image IMAGE_ID",
            ),
        )

    def check(self, target: CloudTarget) -> Iterator[Check]:
        """Credentials, bucket, spot selling in the zones, CSMS, the agency."""
        from spotwise.executor.clouds.huawei.check import checks
        from spotwise.executor.clouds.huawei.clients import csms_client, ecs_client

        huawei = _huawei(target)
        huawei.require_account("check huawei")
        yield from checks(
            huawei,
            lambda: ecs_client(huawei, "check huawei"),
            lambda: _obs(huawei, "check huawei"),
            lambda: csms_client(huawei, "check huawei"),
        )

    def sweep(self, target: CloudTarget) -> HuaweiSweep:
        """``gc huawei``'s pass over the project, with its credentials.

        Raises:
            ExecutorError: in one line, without a project or credentials.
        """
        from spotwise.executor.clouds.huawei.clients import csms_client, ecs_client
        from spotwise.executor.clouds.huawei.gc import HuaweiSweep

        huawei = _huawei(target)
        return HuaweiSweep(
            ecs_client(huawei, "gc huawei"),
            csms_client(huawei, "gc huawei"),
            huawei.region,
            huawei.endpoint_url,
        )

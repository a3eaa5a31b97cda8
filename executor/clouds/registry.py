"""The clouds by name (``--launcher NAME``, ``spotwise setup|check|gc NAME``): a name only
ever selects an entry of :data:`CLOUDS`, never code to load. Adding a cloud is a folder under
``executor/clouds/`` and one line here (docs/clouds.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from spotwise.executor.checkpoint.places import CheckpointPlace, LocalFolder
from spotwise.executor.clouds.aws.cloud import AwsCloud
from spotwise.executor.clouds.aws.local import LocalAws
from spotwise.executor.clouds.azure.cloud import AzureCloud
from spotwise.executor.clouds.azure.local import LocalAzure
from spotwise.executor.clouds.base import BucketFolder, Cloud, CloudTarget, bucket_folder
from spotwise.executor.clouds.gcp.cloud import GcpCloud
from spotwise.executor.clouds.gcp.local import LocalGcp
from spotwise.executor.clouds.huawei.cloud import HuaweiCloud
from spotwise.executor.clouds.huawei.local import LocalHuawei
from spotwise.executor.clouds.kubernetes.cloud import KubernetesCloud
from spotwise.executor.clouds.kubernetes.local import LocalKubernetes
from spotwise.executor.errors import ExecutorError
from spotwise.executor.local_clouds.base import LocalCloud
from spotwise.executor.notices import NoticeSource

CLOUDS: dict[str, Cloud] = {
    "aws": AwsCloud(),
    "gcp": GcpCloud(),
    "azure": AzureCloud(),
    "huawei": HuaweiCloud(),
    "kubernetes": KubernetesCloud(),
}
LOCAL_CLOUDS: dict[str, Callable[[Path], LocalCloud]] = {
    "aws": LocalAws,
    "gcp": LocalGcp,
    "azure": LocalAzure,
    "huawei": LocalHuawei,
    "kubernetes": LocalKubernetes,
}
"""The clouds ``spotwise try`` plays on this machine, each made with the folder for its
instances."""


def cloud_named(name: str) -> Cloud:
    """The registered cloud ``name``.

    Raises:
        ExecutorError: for a name no cloud has, naming those there are.
    """
    try:
        return CLOUDS[name]
    except KeyError:
        raise ExecutorError(
            f"no cloud named {name[:40]!r}; the clouds are {', '.join(CLOUDS)}"
        ) from None


def checkpoint_places(
    locations: Sequence[str], target: CloudTarget | None
) -> tuple[CheckpointPlace, ...]:
    """The places ``--ckpt`` names, as the supervisor sizes them: folders on this machine for a
    job that runs here, folders of the cloud's bucket for a job on ``target``'s cloud.

    Raises:
        ExecutorError: for a folder on a cloud's instance (this machine cannot see it), a URL
            with a job that runs here, or a URL outside the cloud's bucket.
    """
    places: list[CheckpointPlace] = []
    for location in locations:
        if target is None:
            if "://" in location:
                raise ExecutorError(
                    f"--ckpt {location[:120]}: a job on this machine is sized from a folder "
                    "here; a bucket URL is sized with the cloud that runs the job (--launcher "
                    f"{'|'.join(CLOUDS)})"
                )
            places.append(LocalFolder(Path(location)))
            continue
        cloud = cloud_named(target.cloud)
        if not cloud.storage_scheme:  # a volume every instance mounts at one path
            places.append(BucketFolder(cloud, target, mounted_folder(cloud, target, location)))
            continue
        if "://" not in location:
            raise ExecutorError(
                f"--ckpt {location[:120]}: a folder on the instance is lost with it and cannot "
                f"be sized from here; checkpoint to the bucket and name its URL "
                f"({cloud.checkpoint_url(target, 'RUN')})"
            )
        bucket = cloud.checkpoint_url(target, "RUN").split("/")[2]  # scheme://BUCKET/...
        bucket_folder(location, cloud.storage_scheme, bucket)  # the rule checkpoint_bytes keeps
        places.append(BucketFolder(cloud, target, location))
    return tuple(places)


def mounted_folder(cloud: Cloud, target: CloudTarget, location: str) -> str:
    """``location``, a folder under the volume the instances of ``cloud`` mount (the first
    part of its :meth:`~executor.clouds.base.Cloud.checkpoint_url`).

    Raises:
        ExecutorError: for a URL, or a path outside the mount or with a ``..`` part.
    """
    mount = "/" + cloud.checkpoint_url(target, "RUN").strip("/").split("/")[0]
    parts = location.split("/")
    if not location.startswith(f"{mount}/") or ".." in parts or not location.isprintable():
        raise ExecutorError(
            f"--ckpt {location[:120]}: a job on {cloud.name} checkpoints to its volume, "
            f"mounted at {mount} in every instance (give a folder under {mount}/, e.g. "
            f"{cloud.checkpoint_url(target, 'RUN')})"
        )
    return location


def sources_from_env() -> list[NoticeSource]:
    """The clouds' notice sources named in ``$SPOTWISE_NOTICES`` (comma-separated names of
    :data:`CLOUDS`), each at its endpoint (its ``SPOTWISE_*`` variable, else the cloud's).

    Raises:
        ValueError: for a name no cloud has; SettingsError (one) for a variable that holds no
            URL.
    """
    from spotwise.core.settings import current

    sources: list[NoticeSource] = []
    for name in filter(None, (n.strip() for n in current().notices.split(","))):
        cloud = CLOUDS.get(name)
        if cloud is None:
            raise ValueError(
                f"SPOTWISE_NOTICES: unknown source {name[:40]!r}; use {', '.join(CLOUDS)}"
            )
        if cloud.notice_kind is not None:  # else the SIGTERM the guard always watches
            sources.append(cloud.notice_kind.from_env())
    return sources

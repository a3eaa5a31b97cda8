"""A job's files in the storage account's Blob container: the code shipped once per content
(the workdir tarball and the Spotwise wheel of :mod:`executor.clouds.code_bundle`, under
``spotwise/code/SHA256/``), and each VM's log chunks and exit code under
``spotwise/jobs/JOB/VM/``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from spotwise.executor.clouds import code_bundle
from spotwise.executor.clouds.code_bundle import DEFAULT_MAX_MB, Bundle, ShippedCode
from spotwise.executor.errors import ExecutorError

JOBS_PREFIX = "spotwise/jobs"
CHECKPOINT_PREFIX = "spotwise/checkpoints"
"""Where in the container checkpoints go: the identity's role covers the container."""


def upload(container: Any, bundle: Bundle, where: str) -> bool:
    """Put ``bundle`` in the container unless its content is there already; whether it was.

    Raises:
        ExecutorError: when the container cannot be reached, read or written.
    """
    from azure.core.exceptions import AzureError

    from spotwise.executor.clouds.azure.clients import first_line

    blob = container.get_blob_client(bundle.key)
    try:
        if blob.exists():
            return False
        with open(bundle.path, "rb") as data:
            blob.upload_blob(data, overwrite=True)
    except AzureError as exc:
        raise ExecutorError(f"cannot upload to {where}/{bundle.key}: {first_line(exc)}") from exc
    return True


def ship(
    container: Any,
    where: str,
    workdir: Path,
    *,
    ignore_file: Path | None = None,
    wheel: Path | None = None,
    max_mb: float = DEFAULT_MAX_MB,
    say: Callable[[str], None] = lambda _: None,
) -> ShippedCode:
    """Pack the workdir, build (or take) the wheel, upload what the container lacks."""
    return code_bundle.ship(
        lambda bundle: upload(container, bundle, where),
        where,
        workdir,
        ignore_file=ignore_file,
        wheel=wheel,
        max_mb=max_mb,
        say=say,
    )


def read_text(container: Any, name: str) -> str | None:
    """A blob as text, None while it is not there."""
    from azure.core.exceptions import ResourceNotFoundError

    try:
        data = container.get_blob_client(name).download_blob().readall()
    except ResourceNotFoundError:
        return None
    return str(data.decode(errors="replace"))


def names_after(container: Any, prefix: str, after: str) -> list[str]:
    """The names under ``prefix`` that sort after ``after``, in order."""
    return sorted(b.name for b in container.list_blobs(name_starts_with=prefix) if b.name > after)


def folder_bytes(container: Any, prefix: str, where: str) -> int:
    """The bytes of the blobs under ``prefix`` (``where``: its URL, for the error).

    Raises:
        ExecutorError: when the container cannot be listed.
    """
    from azure.core.exceptions import AzureError

    from spotwise.executor.clouds.azure.clients import first_line

    try:
        return sum(int(b.size or 0) for b in container.list_blobs(name_starts_with=prefix))
    except AzureError as exc:
        raise ExecutorError(f"cannot size {where[:120]}: {first_line(exc)}") from exc

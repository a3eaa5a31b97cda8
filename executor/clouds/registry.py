"""The clouds by name (``--launcher NAME``, ``spotwise setup|check|gc NAME``): a name only
ever selects an entry of :data:`CLOUDS`, never code to load. Adding a cloud is a folder under
``executor/clouds/`` and one line here (docs/clouds.md)."""

from __future__ import annotations

from spotwise.executor.clouds.aws.cloud import AwsCloud
from spotwise.executor.clouds.azure.cloud import AzureCloud
from spotwise.executor.clouds.base import Cloud
from spotwise.executor.clouds.gcp.cloud import GcpCloud
from spotwise.executor.errors import ExecutorError

CLOUDS: dict[str, Cloud] = {
    "aws": AwsCloud(),
    "gcp": GcpCloud(),
    "azure": AzureCloud(),
}


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

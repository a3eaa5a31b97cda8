"""What ``spotwise try CLOUD`` needs of a cloud played on this machine."""

from __future__ import annotations

from types import TracebackType
from typing import Protocol, Self


class LocalCloud(Protocol):
    """A cloud's APIs on local servers and its instances played here while the ``with`` block
    runs; its user's credentials, configuration and endpoints out of reach meanwhile."""

    @property
    def bucket(self) -> str:
        """The bucket it makes for code, logs and checkpoints."""
        ...

    @property
    def where(self) -> tuple[str, ...]:
        """The cloud flags that name the local cloud (its region and endpoint): ``setup``,
        ``run`` and ``gc`` take them."""
        ...

    @property
    def banner(self) -> str:
        """One line saying what runs where, that no real endpoint is reached and that nothing
        is billed."""
        ...

    def start_instances(self, notice_after_s: float) -> tuple[str, ...]:
        """Start playing the instances a launcher makes (the first one gets a spot notice
        ``notice_after_s`` after its guard starts): ``run``'s flags for the rest (pools,
        image, identity, the prices the ledger uses)."""
        ...

    def stop_instances(self) -> str:
        """Stop playing, once the instances running have ended: what was played (instances,
        the notice, where each command resumed from).

        Raises:
            ExecutorError: when an instance could not be played.
        """
        ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None: ...

"""What ``spotwise try CLOUD`` needs of a cloud played on this machine."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Protocol, Self

from spotwise.executor.errors import ExecutorError


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


class Player(Protocol):
    """A cloud's instances played here: stopped with :meth:`close`, its boot failures in
    :attr:`errors`, what it played in :meth:`played`."""

    errors: list[BaseException]

    def close(self) -> None: ...

    def played(self) -> str: ...


class Closable(Protocol):
    def close(self) -> None: ...


def stop_playing(player: Player | None, metadata: Closable | None, folder: Path, what: str) -> str:
    """Stop ``player`` and the fake ``metadata``: what was played (``what``: the cloud's
    instance, e.g. ``"the local EC2 … an instance"``).

    Raises:
        ExecutorError: when an instance could not be booted.
    """
    if player is None or metadata is None:
        return "nothing was played"
    player.close()
    metadata.close()
    if player.errors:
        raise ExecutorError(
            f"{what} could not be booted (its folders: {folder}): {player.errors[0]!r}"
        )
    return player.played()

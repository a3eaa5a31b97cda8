"""What ``spotwise try CLOUD`` needs of a cloud played on this machine."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, Self

from spotwise.executor.errors import ExecutorError

if TYPE_CHECKING:
    from spotwise.executor.local_clouds.metadata import FakeMetadata


class LocalCloud(Protocol):
    """A cloud's APIs on local servers and its instances played here while the ``with`` block
    runs; its user's credentials, configuration and endpoints out of reach meanwhile."""

    @property
    def bucket(self) -> str:
        """The bucket it makes for code, logs and checkpoints."""
        ...

    @property
    def bucket_url(self) -> str:
        """The bucket as the commands on its instances name it (``s3://spotwise-try``)."""
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


@contextmanager
def only_local(local: Mapping[str, str], *, drop: Callable[[str], bool]) -> Iterator[None]:
    """This process's environment, and so that of the processes it starts, while the block
    runs: every variable ``drop`` names removed (what could point a cloud's libraries at a
    user's account, credentials, configuration or endpoints, or a try at the user's own
    ledger), then ``local`` set; as it was again after."""
    saved = dict(os.environ)
    for name in list(os.environ):
        if drop(name):
            del os.environ[name]
    os.environ.update(local)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


class Player(Protocol):
    """A cloud's instances played here: stopped with :meth:`close`, its boot failures in
    :attr:`errors`, what it played in :meth:`played`."""

    errors: list[BaseException]

    def close(self) -> None: ...

    def played(self) -> str: ...


def require(
    libraries: Callable[[], None], whose: str, modules: Mapping[str, str], extras: str
) -> None:
    """A played cloud's client libraries (``libraries()`` raises ExecutorError without them:
    ``whose`` they are) and the ``modules`` its local servers need (name: what it does here)
    installed, or one line naming ``extras``.

    Raises:
        ExecutorError: when one is missing (how to install it).
    """
    try:
        libraries()
    except ExecutorError:
        raise ExecutorError(
            f"{whose} libraries are not installed, and the local cloud needs them: {extras}"
        ) from None
    for module, what in modules.items():
        if importlib.util.find_spec(module) is None:
            raise ExecutorError(f"{module} is not installed, and it {what} here: {extras}")


class PlayedCloud:
    """What every :class:`LocalCloud` shares: its folder, what its ``with`` block closes, and
    the fake metadata server and the player of its instances (:meth:`_play`, then
    :meth:`stop_instances`). ``instance``: the cloud's instance, for errors (``"an instance of
    the local EC2"``)."""

    instance = "an instance"

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._stack = ExitStack()
        self._player: Player | None = None
        self._metadata: FakeMetadata | None = None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stack.close()

    def _play(self, player: Callable[[FakeMetadata, Path], Player]) -> None:
        """Start the fake metadata server and ``player(metadata, root)``, its instances'
        folders under ``root``."""
        from spotwise.executor.local_clouds.metadata import FakeMetadata

        self._metadata = FakeMetadata()
        root = self.folder / "instances"
        root.mkdir(parents=True, exist_ok=True)
        self._player = player(self._metadata, root)

    def stop_instances(self) -> str:
        """Stop the player and the fake metadata server, once the instances running have
        ended: what was played (instances, the notice, where each command resumed from).

        Raises:
            ExecutorError: when an instance could not be booted.
        """
        player, metadata = self._player, self._metadata
        if player is None or metadata is None:
            return "nothing was played"
        player.close()
        metadata.close()
        if player.errors:
            raise ExecutorError(
                f"{self.instance} could not be booted (its folders: {self.folder}): "
                f"{player.errors[0]!r}"
            )
        return player.played()

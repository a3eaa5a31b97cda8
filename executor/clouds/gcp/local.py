"""GCP on this machine, for ``spotwise try gcp`` and the tests: the loopback fake of Compute
Engine, Secret Manager and IAM and gcp-storage-emulator on 127.0.0.1
(:class:`~executor.clouds.gcp.fake.compute.GcpLocal`), the fake metadata server for the
preemption notice, and :class:`~executor.clouds.gcp.gce_player.GcePlayer` booting the VMs.

gcp-storage-emulator and cryptography are looked for only here, when a local GCP is started:
they come with ``spotwise[try]``, Google's libraries with ``spotwise[gcp]``."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Self

from spotwise.executor.errors import ExecutorError
from spotwise.executor.local_clouds.base import PlayedCloud, only_local, require

if TYPE_CHECKING:
    from spotwise.executor.clouds.gcp.fake.compute import GcpLocal

EXTRAS = "pip install 'spotwise[gcp,try]' (in a checkout: make dev)"
ELSEWHERE_PREFIXES = ("GOOGLE_", "CLOUDSDK_", "GCE_", "GCLOUD_", "GCP_", "STORAGE_EMULATOR_")
"""Variables that could point Google's libraries, gcloud or gcsfs at a real project,
credentials or endpoint: none survives, those the local cloud needs are set anew."""
ELSEWHERE = {"SPOTWISE_OPERATIONAL_STORE", "GCSFS_DEFAULT_PROJECT"}
"""Others that could point a try at a user's project or their own ledger."""
REGION, ZONE, BUCKET = "us-central1", "us-central1-a", "spotwise-try"
PRICES = ("--spot-price", "0.9", "--on-demand-price", "2.95")
"""An n1-standard-8 with a V100's usual prices in USD/h: what the ledger prices the played
hours at."""


def require_local_gcp() -> None:
    """Google's libraries and the local servers' own, or one line naming the extras.

    Raises:
        ExecutorError: when one is missing (how to install it).
    """
    from spotwise.executor.clouds.gcp.clients import require_libraries

    require(
        lambda: require_libraries("spotwise try gcp"),
        "Google's client",
        {"gcp_storage_emulator": "plays GCS", "cryptography": "signs keys"},
        EXTRAS,
    )


def only_local_gcp(env: Mapping[str, str], config: Path) -> AbstractContextManager[None]:
    """Google's libraries, gcloud and gcsfs, in this process and those it starts, reach only the
    local servers with the fake's key while the block runs: every ``GOOGLE_*``, ``CLOUDSDK_*``
    (gcloud's configuration, then an empty folder ``config``), ``GCE_*`` variable of the user is
    dropped, ``env`` (the key file as Application Default Credentials, the emulator) set, and
    the ledger is the store given on the command line, not ``SPOTWISE_OPERATIONAL_STORE``."""
    config.mkdir(parents=True, exist_ok=True)
    return only_local(
        {**env, "CLOUDSDK_CONFIG": str(config)},
        drop=lambda name: name.startswith(ELSEWHERE_PREFIXES) or name in ELSEWHERE,
    )


class LocalGcp(PlayedCloud):
    """GCP played on this machine while the ``with`` block runs (a
    :class:`~executor.local_clouds.base.LocalCloud`); VMs get folders under ``folder``."""

    bucket, bucket_url = BUCKET, f"gs://{BUCKET}"
    instance = "a VM of the local Compute Engine"

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.local: GcpLocal | None = None

    def __enter__(self) -> Self:
        require_local_gcp()
        from spotwise.executor.clouds.gcp.fake.compute import GcpLocal

        servers = self.folder / "gcp"
        servers.mkdir(parents=True, exist_ok=True)
        try:
            self.local = GcpLocal(servers)
        except RuntimeError as exc:  # the emulator did not start
            raise ExecutorError(f"the local GCP did not start: {exc}") from None
        self._stack.callback(self.local.close)
        self._stack.enter_context(only_local_gcp(self.local.env, servers / "gcloud"))
        return self

    def _servers(self) -> GcpLocal:
        if self.local is None:
            raise ExecutorError("the local GCP is not started (use it in a with block)")
        return self.local

    @property
    def where(self) -> tuple[str, ...]:
        """``--project``, ``--region`` and ``--endpoint-url``: the local fake."""
        from spotwise.executor.clouds.gcp.fake.compute import PROJECT

        return (
            "--project",
            PROJECT,
            "--region",
            REGION,
            "--endpoint-url",
            self._servers().fake.url,
        )

    @property
    def banner(self) -> str:
        """What plays GCP, and that nothing reaches it or is billed."""
        local = self._servers()
        return (
            f"GCP is a loopback fake of Compute Engine, Secret Manager and IAM on "
            f"{local.fake.url} and gcp-storage-emulator on {local.storage.url} (this machine), "
            "the metadata server a fake on 127.0.0.1, each VM a process here; Google's "
            "libraries reach only these, with a fake service account key (your "
            "GOOGLE_*/CLOUDSDK_* settings are set aside): no Google account or endpoint is "
            "used and nothing is billed (the $ are these hours at a V100 VM's prices: "
            "simulated)"
        )

    def start_instances(self, notice_after_s: float) -> tuple[str, ...]:
        """Boot each VM ``run`` makes; the first gets the preemption notice ``notice_after_s``
        after its guard starts. ``run``'s flags for the fake's image, the service account
        ``setup`` made and the prices."""
        from spotwise.executor.clouds.gcp.fake.compute import PROJECT
        from spotwise.executor.clouds.gcp.gce_player import GcePlayer

        local = self._servers()
        self._play(
            lambda metadata, root: GcePlayer(
                local, metadata, root, bucket=BUCKET, notice_after_s=notice_after_s
            )
        )
        account = f"spotwise-instance@{PROJECT}.iam.gserviceaccount.com"
        return (
            *("--pools", ZONE, "--image", local.image, "--bucket", BUCKET),
            *("--service-account", account, *PRICES),
        )

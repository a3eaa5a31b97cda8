"""Huawei Cloud on this machine, for ``spotwise try huawei`` and the tests: the loopback fake of
ECS, BSS and CSMS (:class:`~executor.clouds.huawei.fake.api.HuaweiApi`, each request held to
the SDK's models), moto's S3 server standing in for OBS's S3 API, the fake metadata server for
the reclaim notice, and :class:`~executor.clouds.huawei.ecs_player.EcsPlayer` booting the
servers.

Huawei's SDK comes with ``spotwise[huawei]``, moto with ``spotwise[try]``; each is looked for
only here, when a local Huawei Cloud is started."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from spotwise.executor.errors import ExecutorError
from spotwise.executor.local_clouds.base import PlayedCloud, only_local, require

if TYPE_CHECKING:
    from spotwise.executor.clouds.huawei.fake.api import HuaweiApi

EXTRAS = "pip install 'spotwise[huawei,try]' (in a checkout: make dev)"
ELSEWHERE_PREFIXES = ("HUAWEICLOUD_", "SPOTWISE_HUAWEI_")
"""Variables that could point Huawei's SDK or Spotwise at a real account, its keys, its
credentials file or its endpoints: none survives, those the local cloud needs are set anew."""
ELSEWHERE = {"SPOTWISE_OPERATIONAL_STORE"}
"""Another that could point a try at its user's own ledger."""
PROJECT = "0123456789abcdef0123456789abcdef"
REGION, ZONE, BUCKET = "ap-southeast-1", "ap-southeast-1a", "spotwise-try"
FLAVOR, IMAGE, AGENCY, NETWORK = "p3.2xlarge.8", "img-ubuntu-2404", "spotwise-instance", "vpc/sub"
PRICES = ("--spot-price", "1.2", "--on-demand-price", "3.9")
"""An A100 flavor's prices in USD/h, test figures: what the ledger prices the played hours at."""


def only_local_huawei(env: Mapping[str, str], folder: Path) -> AbstractContextManager[None]:
    """Huawei's SDK and Spotwise's Huawei code, in this process and those it starts, reach only
    the local servers while the block runs: every ``HUAWEICLOUD_*`` and ``SPOTWISE_HUAWEI_*``
    variable of the user is dropped (their keys, credentials file and endpoints), the SDK's
    credentials file is one in ``folder`` that does not exist, ``env`` (the fake's keys, the
    local OBS) is set, and the ledger is the store given on the command line, not
    ``SPOTWISE_OPERATIONAL_STORE``."""
    folder.mkdir(parents=True, exist_ok=True)
    local = {**env, "HUAWEICLOUD_SDK_CREDENTIALS_FILE": str(folder / "no-credentials")}
    return only_local(
        local, drop=lambda name: name.startswith(ELSEWHERE_PREFIXES) or name in ELSEWHERE
    )


def _sdk() -> None:
    try:
        import huaweicloudsdkcsms  # noqa: F401
        import huaweicloudsdkecs  # noqa: F401
    except ImportError:
        raise ExecutorError("Huawei Cloud's SDK is missing") from None


class LocalHuawei(PlayedCloud):
    """Huawei Cloud played on this machine while the ``with`` block runs (a
    :class:`~executor.local_clouds.base.LocalCloud`); servers get folders under ``folder``."""

    bucket, bucket_url = BUCKET, f"obs://{BUCKET}"
    instance = "a server of the local ECS"

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.api: HuaweiApi | None = None
        self.obs_url = ""

    def __enter__(self) -> Self:
        require(_sdk, "Huawei Cloud's SDK", {"moto": "plays OBS (its S3 API)"}, EXTRAS)
        from moto.server import ThreadedMotoServer

        from spotwise.executor.clouds.huawei.fake.api import ACCESS_KEY, SECRET_KEY, HuaweiApi
        from spotwise.executor.clouds.huawei.fake.bss import PriceCatalog
        from spotwise.executor.clouds.huawei.fake.ecs import SOLD, EcsProject

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request on stderr
        moto: Any = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        moto.start()
        self._stack.callback(moto.stop)
        host, port = moto.get_host_and_port()
        self.obs_url = f"http://{host}:{port}"
        sell = {(f"{REGION}{z}", FLAVOR): SOLD for z in "abc"}
        self.api = HuaweiApi(
            EcsProject(PROJECT, sell), PriceCatalog({(REGION, f"{FLAVOR}.linux"): 3.9})
        )
        self._stack.callback(self.api.close)
        local = {
            "HUAWEICLOUD_SDK_AK": ACCESS_KEY,
            "HUAWEICLOUD_SDK_SK": SECRET_KEY,
            "SPOTWISE_HUAWEI_OBS_URL": self.obs_url,
        }
        self._stack.enter_context(only_local_huawei(local, self.folder / "huaweicloud"))
        return self

    def _api(self) -> HuaweiApi:
        if self.api is None:
            raise ExecutorError("the local Huawei Cloud is not started (use it in a with block)")
        return self.api

    @property
    def where(self) -> tuple[str, ...]:
        """``--project``, ``--region`` and ``--endpoint-url``: the local fake."""
        return ("--project", PROJECT, "--region", REGION, "--endpoint-url", self._api().url)

    @property
    def banner(self) -> str:
        """What plays Huawei Cloud, and that nothing reaches it or is billed."""
        return (
            f"Huawei Cloud is a loopback fake of ECS, BSS and CSMS on {self._api().url} and "
            f"moto's S3 server as OBS on {self.obs_url} (this machine), the metadata server a "
            "fake on 127.0.0.1, each server a process here; Huawei's SDK reaches only these, "
            "with the fake's keys (your HUAWEICLOUD_* settings are set aside): no Huawei Cloud "
            "account or endpoint is used and nothing is billed (the $ are these hours at test "
            "prices of an A100 flavor: simulated)"
        )

    def start_instances(self, notice_after_s: float) -> tuple[str, ...]:
        """Boot each server ``run`` creates; the first gets the spot ``instance-action``
        ``notice_after_s`` after its guard starts. ``run``'s flags for the image, agency,
        network and prices."""
        from spotwise.executor.clouds.huawei.ecs_player import EcsPlayer

        api = self._api()
        self._play(
            lambda metadata, root: EcsPlayer(
                api, self.obs_url, metadata, root, bucket=BUCKET, notice_after_s=notice_after_s
            )
        )
        return (
            *("--pools", ZONE, "--image", IMAGE, "--bucket", BUCKET, "--identity", AGENCY),
            *("--network", NETWORK, "--instance-type", FLAVOR, *PRICES),
        )

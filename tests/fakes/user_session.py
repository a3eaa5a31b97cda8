"""A user's session on GCP, Azure or Huawei Cloud, played against the local servers: the five
commands of docs/aws.md (``setup``, ``check``, ``run``, ``jobs logs``/``jobs show``, ``gc``),
typed as a user types them in a project folder, with the output as it comes, written to a
transcript.

The servers are the tests' own (:class:`spotwise.executor.clouds.gcp.fake.compute.GcpLocal`,
:class:`spotwise.executor.clouds.azure.fake.servers.AzureLocal`) and the fake metadata server;
the "cloud" that boots each VM is the end-to-end tests' (its startup script or custom data run
with bash in a folder of its own, the first VM given the cloud's preemption notice once it
trains). Every command is ``spotwise`` in a subprocess; the only flag a real account would not
take is ``--endpoint-url``.

    .venv/bin/python -m tests.fakes.user_session gcp /tmp/session-gcp.txt
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shlex
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TRAIN = """\
from spotwise.executor.examples.train_mlp import main

print("training starts", flush=True)
main()
"""
TRAINING = ("--epochs", "2", "--samples", "512", "--step-sleep-s", "0.3")


class Session:
    """Types commands in ``folder`` with ``env`` and writes each with its output."""

    def __init__(self, transcript: Path, folder: Path, env: dict[str, str]) -> None:
        self.transcript, self.folder, self.env = transcript, folder, env
        self.lines: list[str] = []
        self.masks: dict[str, str] = {}

    def note(self, text: str) -> None:
        """A comment line of the transcript."""
        self.lines.append(f"# {text}")
        self._save()

    def type(
        self, *args: str, shell: str = "", env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run ``spotwise ARGS`` as typed at the prompt (``env`` set before it, as a user
        writes ``NAME=value spotwise ...``); its output goes to the transcript."""
        started = time.monotonic()
        ran = subprocess.run(
            [str(ROOT / ".venv" / "bin" / "spotwise"), *args],
            cwd=self.folder,
            env=self.env | (env or {}),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,  # as a terminal shows them: in the order written
            text=True,
            timeout=600,
            check=False,
        )
        prompt = f"{shell} $ " if shell else "$ "
        before = "".join(f"{k}={shlex.quote(v)} " for k, v in (env or {}).items())
        self.lines.append(self._mask(prompt + before + "spotwise " + shlex.join(args)))
        self.lines.extend(self._mask(line) for line in ran.stdout.rstrip("\n").splitlines())
        took = time.monotonic() - started
        self.lines.append(f"[exit {ran.returncode}, {took:.1f} s]")
        self.lines.append("")
        self._save()
        return ran

    def _mask(self, line: str) -> str:
        for value, name in self.masks.items():
            line = line.replace(value, name)
        return line

    def _save(self) -> None:
        self.transcript.write_text("\n".join(self.lines) + "\n")


def _base_env(home: Path) -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "TERM")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    return env | {"HOME": str(home), "SPOTWISE_STORE": str(home / "store.duckdb"), "COLUMNS": "100"}


class _Env(dict[str, str]):
    """A dict with the monkeypatch methods :meth:`AzureLocal.apply` calls."""

    def setenv(self, name: str, value: str) -> None:
        self[name] = value

    def delenv(self, name: str, raising: bool = True) -> None:
        self.pop(name, None)


@contextmanager
def _metadata() -> Iterator[Any]:
    from spotwise.executor.local_clouds.metadata import FakeMetadata

    server = FakeMetadata()
    try:
        yield server
    finally:
        server.close()


def _project(home: Path) -> Path:
    work = home / "my-model"
    work.mkdir()
    (work / "train.py").write_text(TRAIN)
    (work / ".gitignore").write_text("data/\n")
    (work / "data").mkdir()
    (work / "data" / "big.bin").write_bytes(b"\0" * 4096)
    return work


def _job_id(ran: subprocess.CompletedProcess[str]) -> str:
    found = re.search(r"\bjob (\w+)", ran.stdout)
    return found.group(1) if found else "JOB"


def gcp(transcript: Path, home: Path) -> None:
    """setup, check, run, jobs logs/show and gc on GCP."""
    from spotwise.executor.clouds.gcp.fake.compute import PROJECT, GcpLocal
    from spotwise.executor.clouds.gcp.gce_player import GcePlayer
    from spotwise.executor.local_clouds.player import FIRST_STEP
    from tests.fakes.gcp_billing import CloudBillingFake

    (home / "gcp").mkdir()
    local = GcpLocal(home / "gcp")
    try:
        with _metadata() as metadata:
            env = _base_env(home) | local.env
            os.environ.update(local.env)  # the hypervisor reads the VMs' logs from here
            session = Session(transcript, _project(home), env)
            session.masks = {local.fake.url: "http://127.0.0.1:FAKE", str(home): "~"}
            url = local.fake.url
            account = f"spotwise-instance@{PROJECT}.iam.gserviceaccount.com"
            where = ("--project", PROJECT, "--region", "us-central1")
            bucket = "my-spotwise"
            image = local.image
            session.note(
                "GCP on this machine: Compute Engine, Secret Manager and IAM on the loopback "
                "fake (--endpoint-url), GCS on gcp-storage-emulator (STORAGE_EMULATOR_HOST), a "
                "service account key as GOOGLE_APPLICATION_CREDENTIALS"
            )
            session.note("0. the prices: Cloud Billing Catalog (its own fake and key)")
            billing = CloudBillingFake()
            try:
                key = billing.credentials_file(home)
                session.masks[billing.url] = "http://127.0.0.1:BILLING"
                session.type(
                    "collect", "gcp", "--regions", "us-central1", "--gpu", "V100",
                    env={
                        "SPOTWISE_GCP_BILLING_ENDPOINT": billing.url,
                        "GOOGLE_APPLICATION_CREDENTIALS": str(key),
                    },
                )  # fmt: skip
            finally:
                billing.close()
            session.note("a first try, before setup: what is missing, each with its fix")
            session.type(
                "check", "gcp", *where, "--bucket", bucket, "--service-account", account,
                "--image", image, "--endpoint-url", url,
            )  # fmt: skip
            session.note("1. once: the bucket, the VMs' service account, the nodes' firewall")
            session.type("setup", "gcp", *where, "--bucket", bucket, "--endpoint-url", url)
            session.note("2. ready?")
            check = (
                "check", "gcp", *where, "--bucket", bucket, "--service-account", account,
                "--image", image, "--instance-type", "n1-standard-8+1xnvidia-tesla-v100",
            )  # fmt: skip
            session.type(*check, "--endpoint-url", url)
            session.note("a zone without the GPU (us-central1-f has no V100)")
            session.type(*check, "--pools", "us-central1-f", "--endpoint-url", url)
            session.note("3. run; the first VM gets the 30 s notice once it trains")
            beside: list[str] = []

            def gc_beside(vm: str) -> None:
                session.note(f"(another shell, while {vm} boots) gc beside the live job")
                session.type("gc", "gcp", *where, "--endpoint-url", url, shell="shell 2")
                beside.append(vm)

            (home / "vms").mkdir()
            boots = GcePlayer(
                *(local, metadata, home / "vms"),
                bucket=bucket,
                notice_after_s=0.0,
                notice_on=FIRST_STEP,
                beside=gc_beside,
            )
            try:
                ran = session.type(
                    "run", "--launcher", "gcp", *where, "--bucket", bucket,
                    "--service-account", account, "--image", image,
                    "--instance-type", "n1-standard-8+1xnvidia-tesla-v100",
                    "--pools", "us-central1-a,us-central1-b", "--endpoint-url", url,
                    "--ckpt", f"gs://{bucket}/spotwise/checkpoints/run1", "--",
                    "python", "train.py", "--ckpt", f"gs://{bucket}/spotwise/checkpoints/run1",
                    *TRAINING, "--out", "result.json",
                )  # fmt: skip
            finally:
                boots.close()
            _after(session, ran, ("gc", "gcp", *where, "--endpoint-url", url), boots.errors)
    finally:
        local.close()


def azure(transcript: Path, home: Path) -> None:
    """setup, check, run, jobs logs/show and gc on Azure."""
    from spotwise.executor.clouds.azure.fake.servers import (
        ACCOUNT,
        GROUP,
        IMAGE,
        SUBSCRIPTION,
        AzureLocal,
        Azurite,
    )
    from spotwise.executor.clouds.azure.vm_player import AzurePlayer
    from spotwise.executor.local_clouds.player import FIRST_STEP
    from tests.fakes.azure_prices import RetailPricesFake

    (home / "azurite").mkdir()
    azurite = Azurite(home / "azurite")
    local = AzureLocal(azurite)
    try:
        with _metadata() as metadata:
            env = _Env(_base_env(home))
            local.apply(env, home)
            os.environ.update(local.env)
            session = Session(transcript, _project(home), dict(env))
            session.masks = {local.fake.url: "https://127.0.0.1:FAKE", str(home): "~"}
            url = local.fake.url
            where = ("--project", f"{SUBSCRIPTION}/{GROUP}", "--region", "eastus")
            bucket = f"{ACCOUNT}/spotwise"
            session.note(
                "Azure on this machine: Resource Manager, Key Vault and the identity endpoint on "
                "the loopback fake (--endpoint-url), Blob on Azurite "
                "(AZURE_STORAGE_CONNECTION_STRING, its development account devstoreaccount1)"
            )
            session.note("0. the prices: the Retail Prices API (public, its fake)")
            prices = RetailPricesFake()
            try:
                session.masks[prices.url] = "http://127.0.0.1:PRICES/api/retail/prices"
                session.type(
                    "collect", "azure", "--regions", "eastus", "--gpu", "V100",
                    "--no-resource-graph", env={"SPOTWISE_AZURE_PRICES_URL": prices.url},
                )  # fmt: skip
            finally:
                prices.close()
            session.note("a first try, before setup: what is missing, each with its fix")
            check = (
                "check", "azure", *where, "--bucket", bucket, "--identity",
                "spotwise-instance", "--image", IMAGE,
            )  # fmt: skip
            session.type(*check, "--endpoint-url", url)
            session.note(
                "1. once: the resource group, the storage account and container, the VMs' "
                "identity and its roles, the Key Vault, the nodes' subnet"
            )
            session.type("setup", "azure", *where, "--bucket", bucket, "--endpoint-url", url)
            session.note("2. ready?")
            session.type(*check, "--endpoint-url", url)
            session.note("a zone without the VM size")
            session.type(
                *check, "--instance-type", "Standard_ND96asr_v4", "--pools", "3",
                "--endpoint-url", url,
            )  # fmt: skip
            session.note("3. run; the first VM gets Scheduled Events' Preempt once it trains")

            def gc_beside(vm: str) -> None:
                session.note("(another shell, as the first VM boots) gc beside the live job")
                session.type("gc", "azure", *where, "--endpoint-url", url, shell="shell 2")

            (home / "vms").mkdir()
            hypervisor = AzurePlayer(
                *(local, metadata, home / "vms"),
                bucket="spotwise",  # the container the VMs' logs go to
                notice_after_s=0.0,
                notice_on=FIRST_STEP,
                beside=gc_beside,
            )
            try:
                ran = session.type(
                    "run", "--launcher", "azure", *where, "--bucket", bucket,
                    "--identity", "spotwise-instance", "--image", IMAGE,
                    "--pools", "1,2", "--endpoint-url", url,
                    "--ckpt", "az://spotwise/spotwise/checkpoints/run1", "--",
                    "python", "train.py", "--ckpt", "az://spotwise/spotwise/checkpoints/run1",
                    *TRAINING, "--out", "result.json",
                )  # fmt: skip
            finally:
                hypervisor.close()
            gc = ("gc", "azure", *where, "--endpoint-url", url)
            _after(session, ran, gc, hypervisor.errors)
    finally:
        local.close()
        azurite.close()


def huawei(transcript: Path, home: Path) -> None:
    """collect and plan, setup, check, run, jobs logs/show and gc on Huawei Cloud."""
    from moto.server import ThreadedMotoServer

    from spotwise.executor.clouds.huawei.ecs_player import EcsPlayer
    from spotwise.executor.clouds.huawei.fake.api import ACCESS_KEY, SECRET_KEY, HuaweiApi
    from spotwise.executor.clouds.huawei.fake.bss import PriceCatalog
    from spotwise.executor.clouds.huawei.fake.ecs import SOLD, SOLD_OUT, EcsProject
    from spotwise.executor.local_clouds.player import FIRST_STEP

    project, region, flavor = "0123456789abcdef0123456789abcdef", "ap-southeast-1", "p3.2xlarge.8"
    sell = {(f"{region}a", flavor): SOLD, (f"{region}b", flavor): SOLD_OUT}
    api = HuaweiApi(EcsProject(project, sell), PriceCatalog({(region, f"{flavor}.linux"): 3.9}))
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    obs = "http://{}:{}".format(*moto.get_host_and_port())
    try:
        with _metadata() as metadata:
            env = _base_env(home) | {
                "HUAWEICLOUD_SDK_AK": ACCESS_KEY,
                "HUAWEICLOUD_SDK_SK": SECRET_KEY,
                "HUAWEICLOUD_SDK_PROJECT_ID": project,
                "HUAWEICLOUD_SDK_DOMAIN_ID": "0123456789abcdef0123456789abcdee",
                "SPOTWISE_HUAWEI_ECS_URL": api.url,
                "SPOTWISE_HUAWEI_BSS_URL": api.url,
                "SPOTWISE_HUAWEI_OBS_URL": obs,
                "SPOTWISE_HUAWEI_REGION": region,
            }
            session = Session(transcript, _project(home), env)
            session.masks = {api.url: "http://127.0.0.1:FAKE", obs: "http://127.0.0.1:OBS"}
            session.masks[str(home)] = "~"
            url = api.url
            where = ("--project", project, "--region", region)
            session.note(
                "Huawei Cloud on this machine: ECS, BSS and CSMS on the loopback fake (the "
                "SDK's models check each request; --endpoint-url, SPOTWISE_HUAWEI_ECS_URL and "
                "_BSS_URL), OBS on moto's S3 server (SPOTWISE_HUAWEI_OBS_URL)"
            )
            session.note("0. the prices: BSS list prices, where spot sells, a spot price read")
            session.type(
                "collect", "huawei", "--regions", region, "--gpu", "A100",
                "--spot-prices", f"{flavor}@{region}a=1.20",
            )  # fmt: skip
            session.type("plan", "--gpu", "A100", "--gpu-hours", "100", "--deadline-hours", "200")
            bucket = "my-spotwise"
            check = (
                "check", "huawei", *where, "--bucket", bucket, "--identity", "spotwise-instance",
                "--network", "vpc-1/subnet-1", "--image", "img-ubuntu-2404",
                "--instance-type", flavor, "--pools", f"{region}a,{region}b",
            )  # fmt: skip
            session.note("a first try, before setup: what is missing, each with its fix")
            session.type(*check, "--endpoint-url", url)
            session.note("1. once: a private OBS bucket (the agency is made by hand in IAM)")
            session.type("setup", "huawei", *where, "--bucket", bucket, "--endpoint-url", url)
            session.note("2. ready?")
            session.type(*check, "--endpoint-url", url)
            session.note(
                "3. run, the bid capped at $1.50/h (ECS's spotPrice); the first server gets the "
                "spot instance-action once it trains"
            )

            def gc_beside(server: str) -> None:
                session.note("(another shell, as the first server boots) gc beside the live job")
                session.type("gc", "huawei", *where, "--endpoint-url", url, shell="shell 2")

            (home / "servers").mkdir()
            hypervisor = EcsPlayer(
                *(api, obs, metadata, home / "servers"),
                bucket=bucket,
                notice_after_s=0.0,
                notice_on=FIRST_STEP,
                beside=gc_beside,
            )
            ckpt = f"obs://{bucket}/spotwise/checkpoints/run1"
            try:
                ran = session.type(
                    "run", "--launcher", "huawei", *where, "--bucket", bucket,
                    "--identity", "spotwise-instance", "--network", "vpc-1/subnet-1",
                    "--image", "img-ubuntu-2404", "--instance-type", flavor,
                    "--pools", f"{region}a", "--max-price", "1.50", "--endpoint-url", url,
                    "--ckpt", ckpt, "--", "python", "train.py", "--ckpt", ckpt,
                    *TRAINING, "--out", "result.json",
                )  # fmt: skip
            finally:
                hypervisor.close()
            bids = [r.body["server"]["extendparam"] for r in api.sent("create_servers")]
            session.note(f"the create requests the fake recorded carried extendparam {bids}")
            gc = ("gc", "huawei", *where, "--endpoint-url", url)
            _after(session, ran, gc, hypervisor.errors)
    finally:
        api.close()
        moto.stop()


def _after(
    session: Session,
    ran: subprocess.CompletedProcess[str],
    gc: tuple[str, ...],
    errors: list[BaseException],
) -> None:
    job = _job_id(ran)
    session.note("4. the job's output, VM by VM, and its record")
    session.type("jobs", "logs", job)
    session.type("jobs", "show", job)
    session.note("5. afterwards: nothing left running")
    session.type(*gc)
    if errors:
        session.note(f"the hypervisor failed: {errors!r}")


SESSIONS: dict[str, Callable[[Path, Path], None]] = {"gcp": gcp, "azure": azure, "huawei": huawei}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("cloud", choices=sorted(SESSIONS))
    parser.add_argument("transcript", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix=f"session-{args.cloud}-") as home:
        SESSIONS[args.cloud](args.transcript, Path(home))


if __name__ == "__main__":
    main()

"""The cloud contract: every cloud of :data:`~executor.clouds.registry.CLOUDS`, run against its
local emulator, gives the same lifecycle through the seam. Its settings survive JSON; it refuses
what cannot launch; it ships code, launches an instance under the ledger's job id and lists it by
that id; a job's secrets live only as long as its launcher; ``gc`` beside a live job ends nothing
of it and ends it once the ledger has it ended; setup twice changes nothing; check says ready for
what setup made; its checkpoints go to its own storage scheme.

A cloud is added by registering it and giving it an emulator here (:data:`EMULATORS`)."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from spotwise.executor.clouds.base import Cloud, CloudOptions, CloudTarget
from spotwise.executor.clouds.code_bundle import CodeInImage, ShippedCode
from spotwise.executor.clouds.orphans import Judged, Verdict, ledger_verdicts
from spotwise.executor.clouds.registry import CLOUDS
from spotwise.executor.errors import ExecutorError
from spotwise.executor.launchers.base import Placement
from spotwise.executor.ledger.ledger import JobInfo, JobStatus, Ledger, new_job_id
from spotwise.pricing.store import MarketStore
from tests.fakes.slow_proxy import SlowProxy

if TYPE_CHECKING:
    from spotwise.executor.clouds.azure.fake.arm import AzureArmFake
    from spotwise.executor.local_clouds.http import Request

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

Emulator = Callable[[pytest.FixtureRequest], CloudOptions]


def _aws(request: pytest.FixtureRequest) -> CloudOptions:
    """moto's server: an account with nothing in it yet but Amazon's images."""
    import boto3

    from spotwise.executor.clouds.aws.local import amazon_image

    endpoint = request.getfixturevalue("moto_server")
    ec2 = boto3.client("ec2", endpoint_url=endpoint, region_name="us-east-1")
    return CloudOptions(
        region="us-east-1",
        image=amazon_image(ec2),
        bucket=f"contract-{uuid.uuid4().hex[:8]}",
        identity=f"contract-{uuid.uuid4().hex[:8]}",  # moto's accounts outlive a test
        endpoint_url=endpoint,
    )


def _gcp(request: pytest.FixtureRequest) -> CloudOptions:
    """The loopback fake of Compute Engine, Secret Manager and IAM (checked against Google's
    discovery documents) and gcp-storage-emulator, reached through Google's own libraries."""
    from spotwise.executor.clouds.gcp.fake.compute import PROJECT, GcpLocal

    folder = request.getfixturevalue("tmp_path_factory").mktemp("gcp")
    local = GcpLocal(folder)
    request.addfinalizer(local.close)
    monkeypatch = request.getfixturevalue("monkeypatch")
    for name, value in local.env.items():
        monkeypatch.setenv(name, value)
    request.addfinalizer(lambda: _no_refusals(local.fake.refused))
    return CloudOptions(
        project=PROJECT,
        image=local.image,
        bucket=f"contract-{uuid.uuid4().hex[:8]}",
        identity=f"spotwise-instance@{PROJECT}.iam.gserviceaccount.com",
        endpoint_url=local.fake.url,
    )


def _no_refusals(refused: list[str]) -> None:
    assert not refused, f"requests Google's discovery documents do not allow: {refused}"


AZURE_FAKES: dict[str, AzureArmFake] = {}
"""The Azure fake of each endpoint now served (a proxy in front of one serves with its TLS)."""


def _azure(request: pytest.FixtureRequest) -> CloudOptions:
    """Azurite and the loopback fake of Resource Manager, Key Vault and the managed identity
    endpoint (checked against the Azure SDK's request builders and models), reached through
    Microsoft's own libraries."""
    from spotwise.executor.clouds.azure.fake.servers import (
        ACCOUNT,
        GROUP,
        IMAGE,
        SUBSCRIPTION,
        AzureLocal,
    )

    folder = request.getfixturevalue("tmp_path_factory").mktemp("azure")
    local = AzureLocal(request.getfixturevalue("azurite"))
    request.addfinalizer(local.close)
    local.apply(request.getfixturevalue("monkeypatch"), folder)

    def no_refusals() -> None:
        assert not local.fake.refused, f"requests the Azure SDK does not make: {local.fake.refused}"

    request.addfinalizer(no_refusals)
    AZURE_FAKES[local.fake.url] = local.fake
    request.addfinalizer(lambda: AZURE_FAKES.pop(local.fake.url))
    return CloudOptions(
        project=f"{SUBSCRIPTION}/{GROUP}",
        image=IMAGE,
        bucket=f"{ACCOUNT}/contract-{uuid.uuid4().hex[:8]}",
        identity="spotwise-instance",
        endpoint_url=local.fake.url,
    )


def _huawei(request: pytest.FixtureRequest) -> CloudOptions:
    """The loopback fake of ECS and CSMS (checked against the Huawei SDK's generated models,
    AK/SK signatures checked), reached through Huawei's own SDK, and moto's S3 server as OBS
    (its S3 API, through boto3)."""
    from spotwise.executor.clouds.huawei.fake.api import ACCESS_KEY, SECRET_KEY, HuaweiApi
    from spotwise.executor.clouds.huawei.fake.bss import PriceCatalog
    from spotwise.executor.clouds.huawei.fake.ecs import SOLD, EcsProject
    from spotwise.executor.clouds.huawei.target import DEFAULT_FLAVOR, DEFAULT_REGION

    project = uuid.uuid4().hex
    sell = {(f"{DEFAULT_REGION}{z}", DEFAULT_FLAVOR): SOLD for z in "abc"}
    fake = HuaweiApi(EcsProject(project, sell), PriceCatalog({}))
    request.addfinalizer(fake.close)
    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setenv("HUAWEICLOUD_SDK_AK", ACCESS_KEY)
    monkeypatch.setenv("HUAWEICLOUD_SDK_SK", SECRET_KEY)
    monkeypatch.setenv("SPOTWISE_HUAWEI_OBS_URL", request.getfixturevalue("moto_server"))
    return CloudOptions(
        project=project,
        image="img-ubuntu-2404-torch",
        bucket=f"contract-{uuid.uuid4().hex[:8]}",
        identity="spotwise-instance",
        network=("vpc-1/subnet-1",),
        endpoint_url=fake.url,
    )


def _kubernetes(request: pytest.FixtureRequest) -> CloudOptions:
    """The loopback fake kube-apiserver (each object checked against Kubernetes' published
    schemas) with a namespace and a claim, reached through the official client and the
    kubeconfig it writes; no node, so a launched Pod waits (its Job has not ended)."""
    from spotwise.executor.clouds.kubernetes.fake.local_cluster import (
        CONTEXT,
        NAMESPACE,
        LocalCluster,
    )

    folder = request.getfixturevalue("tmp_path_factory").mktemp("kubernetes")
    local = LocalCluster(folder, claims=("checkpoints",))
    request.addfinalizer(local.close)
    request.getfixturevalue("monkeypatch").setenv("KUBECONFIG", str(local.kubeconfig))
    return CloudOptions(
        project=f"{CONTEXT}/{NAMESPACE}",
        region="gke",
        image="us-docker.pkg.dev/acme/train/spotwise:1",
        bucket="checkpoints",
        endpoint_url=local.server.url,
    )


EMULATORS: dict[str, Emulator] = {
    "aws": _aws,
    "gcp": _gcp,
    "azure": _azure,
    "huawei": _huawei,
    "kubernetes": _kubernetes,
}
"""Each registered cloud's local emulator: the options that reach it."""
IMAGE_HOLDS_EVERYTHING = {"kubernetes"}
"""The clouds whose image carries the code, its Python and its setup (a container image):
``--setup`` and ``--python`` are refused, and an instance runs as the namespace's default
identity when none is given."""


@pytest.fixture(params=sorted(CLOUDS))
def cloud(request: pytest.FixtureRequest) -> tuple[Cloud, CloudOptions]:
    name = request.param
    assert name in EMULATORS, f"cloud {name} has no emulator in the contract suite"
    return CLOUDS[name], EMULATORS[name](request)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    work = tmp_path / "project"
    work.mkdir()
    (work / "train.py").write_text("print('training')\n")
    return work


@pytest.fixture
def ready(cloud: tuple[Cloud, CloudOptions], workdir: Path) -> Iterator[tuple[Cloud, CloudTarget]]:
    """The cloud with its account set up, and its target for jobs shipped from ``workdir``."""
    provider, options = cloud
    target = provider.target(replace(options, workdir=str(workdir)))
    provider.set_up(target, say=lambda _: None)
    yield provider, target


def _wheel(tmp_path: Path) -> Path:
    wheel = tmp_path / "spotwise-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"not run: no instance boots in a contract test")
    return wheel


def _job(store: Path, job_id: str, name: str) -> Ledger:
    """A job of this process in the ledger at ``store``: its supervisor is alive."""
    with MarketStore.open(store):
        pass
    info = JobInfo(
        name="contract",
        command="python train.py",
        launcher=name,
        compute_hours=1.0,
        deadline_hours=2.0,
        on_demand_price=3.06,
        simulated=False,
    )
    return Ledger(store, info, job_id=job_id)


def _orphans(
    provider: Cloud,
    target: CloudTarget,
    verdicts: dict[str, Verdict] | None,
    host: str | None,
    *,
    named: frozenset[str],
    store_path: Path,
) -> list[Judged]:
    """Every tagged resource of one gc pass, judged."""
    judged = provider.sweep(target).judged(verdicts, host, named=named, store_path=store_path)
    assert isinstance(judged, Iterator)  # each as its listing comes, for gc to say at once
    return list(judged)


def test_a_clouds_settings_survive_json_and_name_the_cloud(
    cloud: tuple[Cloud, CloudOptions],
) -> None:
    provider, options = cloud
    booted = dict(setup=("pip install x",), python="/opt/py/bin/python")
    if provider.name in IMAGE_HOLDS_EVERYTHING:
        for flag, value in booted.items():
            with pytest.raises(ExecutorError, match=f"--{flag}"):
                provider.target(replace(options, **{flag: value}))  # type: ignore[arg-type]
        booted = {}
    target = provider.target(replace(options, zones=("z1", "z2"), **booted))  # type: ignore[arg-type]
    back = provider.target_from_dict(target.to_dict())
    assert back == target and back.cloud == provider.name
    assert back.zones_or_default == ("z1", "z2") and back.home_region
    assert back.to_dict().get("python") == booted.get("python")


def test_a_cloud_refuses_settings_no_instance_can_launch_with(
    cloud: tuple[Cloud, CloudOptions],
) -> None:
    provider, options = cloud
    lacking = [replace(options, image=None), replace(options, bucket=None)]
    if provider.name not in IMAGE_HOLDS_EVERYTHING:
        lacking.append(replace(options, identity=None))
    for each in lacking:
        with pytest.raises(ExecutorError, match="--"):
            provider.target(each).require_complete()
    for python in ("python3", "/opt/x/python; curl x|sh", "/opt/$(id)/python"):
        with pytest.raises(ExecutorError, match="--python"):  # it goes into a boot script
            provider.target(replace(options, python=python))


def test_a_clouds_notice_source_and_storage_are_its_own(
    ready: tuple[Cloud, CloudTarget],
) -> None:
    provider, target = ready
    kind = provider.notice_kind
    if kind is None:  # the SIGTERM its instances get, which the guard always watches
        assert 0 < provider.notice_s <= 120
    else:
        assert kind.name == provider.name
        assert provider.notice_s == kind.notice_s and 0 < provider.notice_s <= 120
    url = provider.checkpoint_url(target, "run-7")
    if provider.storage_scheme:
        assert url.startswith(f"{provider.storage_scheme}://") and url.endswith("/run-7")
    else:  # a volume every instance mounts at one path
        assert url.startswith("/") and url.endswith("/run-7")


def test_a_clouds_checkpoint_folder_is_sized_from_its_bucket_and_nowhere_else(
    ready: tuple[Cloud, CloudTarget], tmp_path: Path
) -> None:
    provider, target = ready
    wheel = _wheel(tmp_path)
    code = provider.ship_code(target, wheel=wheel)
    if not provider.storage_scheme:  # a volume in the cluster: this machine cannot read it
        assert isinstance(code, CodeInImage)  # and nothing was shipped
        with pytest.raises(ExecutorError, match="not sized"):
            provider.checkpoint_bytes(target, provider.checkpoint_url(target, "run"))
        return
    assert isinstance(code, ShippedCode)
    root = "/".join(provider.checkpoint_url(target, "run").split("/")[:3])  # scheme://bucket
    folder = f"{root}/{code.wheel_key.rsplit('/', 1)[0]}"
    assert provider.checkpoint_bytes(target, folder) == wheel.stat().st_size
    assert provider.checkpoint_bytes(target, f"{folder}/") == wheel.stat().st_size
    assert provider.checkpoint_bytes(target, folder[:-1]) == 0  # a folder, not a name prefix
    assert provider.checkpoint_bytes(target, provider.checkpoint_url(target, "none")) == 0
    scheme = provider.storage_scheme
    with pytest.raises(ExecutorError, match="is not in"):
        provider.checkpoint_bytes(target, f"{scheme}://another-bucket/{code.wheel_key}")
    with pytest.raises(ExecutorError, match="is not in"):
        provider.checkpoint_bytes(target, f"file:///{code.wheel_key}")


def test_setting_up_twice_changes_nothing_and_check_finds_it_ready(
    ready: tuple[Cloud, CloudTarget],
) -> None:
    provider, target = ready
    again = provider.set_up(target, say=lambda _: None)
    assert again.made and all("found" in line for line in again.made), again.made
    assert any(f"check {provider.name}" in line for line in again.next_steps)
    decided = provider.check(target)
    # each check comes as soon as it is decided (`check` prints it then), not all at the end
    assert isinstance(decided, Iterator)
    checks = [next(decided), *decided]
    assert checks[0].what == "credentials" and checks[0].status == "ok"
    assert not [c for c in checks if c.status == "missing"], [c.line() for c in checks]


def test_an_instance_carries_the_ledgers_job_id_and_gc_beside_its_live_job_ends_nothing(
    ready: tuple[Cloud, CloudTarget], tmp_path: Path
) -> None:
    provider, target = ready
    store = tmp_path / "store" / "market.duckdb"
    store.parent.mkdir()
    job_id = new_job_id()
    ledger = _job(store, job_id, provider.name)
    code = provider.ship_code(target, wheel=_wheel(tmp_path))
    launcher = provider.launcher(target, code, {"HF_TOKEN": "s3cret"}, job_id=job_id)
    pool = launcher.pools[0]
    instance = launcher.launch(
        Placement(market="spot", pool=pool, price=1.0), ["python", "train.py"], {}
    )
    listed = provider.job_instances(target, job_id)
    assert listed == [getattr(instance, "instance_id", None)]
    assert provider.job_instances(target, new_job_id()) == []

    host = socket.gethostname()
    judged = _orphans(
        provider,
        target,
        ledger_verdicts(store),
        host,
        named=frozenset(),
        store_path=store,
    )
    mine = [j for j in judged if j.job_id == job_id]
    assert {j.kind for j in mine} == {"instance", "secret"}
    assert not any(j.end for j in mine) and all("live supervisor" in j.why for j in mine)
    wrong_store = tmp_path / "elsewhere.duckdb"
    judged = _orphans(
        provider,
        target,
        ledger_verdicts(wrong_store),
        host,
        named=frozenset(),
        store_path=wrong_store,
    )
    assert not any(j.end for j in judged if j.job_id == job_id)

    ledger.finish(JobStatus.FAILED)  # its supervisor ended without cleaning up
    judged = _orphans(
        provider,
        target,
        ledger_verdicts(store),
        host,
        named=frozenset(),
        store_path=store,
    )
    mine = [j for j in judged if j.job_id == job_id]
    assert mine and all(j.end for j in mine)
    ended = list(provider.sweep(target).ended(mine))
    assert ended == mine  # each said once it is ended
    assert provider.job_instances(target, job_id) == []
    left = _orphans(
        provider,
        target,
        ledger_verdicts(store),
        host,
        named=frozenset(),
        store_path=store,
    )
    assert not [j for j in left if j.job_id == job_id]
    launcher.close()


def test_a_jobs_secrets_live_as_long_as_its_launcher(
    ready: tuple[Cloud, CloudTarget], tmp_path: Path
) -> None:
    provider, target = ready
    store = tmp_path / "market.duckdb"
    job_id = new_job_id()
    _job(store, job_id, provider.name)
    code = provider.ship_code(target, wheel=_wheel(tmp_path))
    launcher = provider.launcher(target, code, {"HF_TOKEN": "s3cret"}, job_id=job_id)

    def secrets() -> list[str]:
        judged = _orphans(
            provider,
            target,
            None,
            None,
            named=frozenset({job_id}),
            store_path=store,
        )
        return [j.resource for j in judged if j.kind == "secret" and j.job_id == job_id]

    assert len(secrets()) == 1
    launcher.close()
    assert secrets() == []
    with pytest.raises(ExecutorError):
        provider.launcher(target, code, {"not a name!": "x"}, job_id=new_job_id())


SLOW_LISTINGS: dict[str, Callable[[Request], str | None]] = {
    "aws": lambda r: (
        "instances"
        if b"Action=DescribeInstances" in r.body
        else "secrets"
        if r.header("X-Amz-Target") == "AmazonSSM.DescribeParameters"
        else None
    ),
    "gcp": lambda r: (
        "instances"
        if r.method == "GET" and r.path.endswith("/aggregated/instances")
        else "secrets"
        if r.method == "GET" and r.path.endswith("/secrets")
        else None
    ),
    "azure": lambda r: (
        "instances"
        if r.method == "GET" and r.path.endswith("/virtualMachines")
        else "secrets"  # the vault's lookup, before its secrets are listed
        if r.method == "GET" and "/Microsoft.KeyVault/vaults/" in r.path
        else None
    ),
    "huawei": lambda r: (
        "instances"
        if r.method == "GET" and r.path.endswith("/cloudservers/detail")
        else "secrets"
        if r.method == "GET" and r.path.endswith("/secrets")
        else None
    ),
    "kubernetes": lambda r: (
        "instances"
        if r.method == "GET" and r.path.split("?")[0].endswith("/jobs")
        else "secrets"
        if r.method == "GET" and r.path.split("?")[0].endswith("/secrets")
        else None
    ),
}
"""Each cloud's listing requests through its local server: its instances', its secrets'."""
HELD_S = 2.0


def _proxy(provider: Cloud, target: CloudTarget) -> SlowProxy:
    """A proxy in front of the cloud's endpoint that holds each listing for :data:`HELD_S`."""
    endpoint = str(getattr(target, "endpoint_url", ""))
    tls = ca_file = None
    if provider.name == "azure":
        fake = AZURE_FAKES[endpoint]
        tls, ca_file = fake.tls, str(fake.ca_file)
    return SlowProxy(
        endpoint, SLOW_LISTINGS[provider.name], delay_s=HELD_S, tls=tls, ca_file=ca_file
    )


def _timed_lines(
    command: list[str], timeout_s: float = 180.0
) -> tuple[int, list[tuple[float, str]]]:
    """Run ``command`` with stderr on its stdout; each line as it came, with when it came
    (``time.monotonic()``), and the exit code."""
    import subprocess
    import time

    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    )
    assert process.stdout is not None
    lines = [(time.monotonic(), line.rstrip("\n")) for line in process.stdout]
    return process.wait(timeout_s), lines


def test_gc_says_what_it_lists_first_then_each_resource_as_it_is_judged_and_ended(
    cloud: tuple[Cloud, CloudOptions], ready: tuple[Cloud, CloudTarget], tmp_path: Path
) -> None:
    """`spotwise gc CLOUD` as a user runs it, each listing held 2 s on its way back: its first
    line (what it lists, where) comes before the instances' listing does, the instance's line
    before the secrets are listed, the summary last."""
    import sys

    provider, target = ready
    options = cloud[1]
    store = tmp_path / "market.duckdb"
    job_id = new_job_id()
    ledger = _job(store, job_id, provider.name)
    code = provider.ship_code(target, wheel=_wheel(tmp_path))
    launcher = provider.launcher(target, code, {"HF_TOKEN": "s3cret"}, job_id=job_id)
    pool = launcher.pools[0]
    launcher.launch(Placement(market="spot", pool=pool, price=1.0), ["python", "train.py"], {})
    (instance,) = provider.job_instances(target, job_id)
    ledger.finish(JobStatus.FAILED)  # its supervisor ended without cleaning up
    account = ["--region", str(options.region)] if provider.name == "aws" else []
    account += ["--project", str(options.project)] if options.project else []
    proxy = _proxy(provider, target)
    try:
        code_, lines = _timed_lines(
            [
                *(sys.executable, "-m", "spotwise", "gc", provider.name, *account),
                *("--endpoint-url", proxy.url, "--store", str(store)),
            ]
        )
    finally:
        proxy.close()
    text = "\n".join(line for _, line in lines)
    assert code_ == 0, text
    listed_instances, listed_secrets = proxy.answered["instances"], proxy.answered["secrets"]
    (first_at, first), *rest = lines
    assert first.startswith(f"… gc {provider.name}: listing "), text
    assert proxy.url in first and str(store) in first
    assert first_at < listed_instances[0] - HELD_S / 2, text  # before the listing came back
    mine = [(at, line) for at, line in rest if job_id in line]
    assert [line.split()[0] for _, line in mine] == ["ended", "deleted"], text
    instance_at, instance_line = mine[0]
    assert str(instance).rsplit("/", 1)[-1] in instance_line
    assert "its job is failed in the ledger" in instance_line
    assert instance_at < listed_secrets[0] - HELD_S / 2, text  # said before secrets are listed
    assert rest[-1][1].startswith("ended 1 instance and deleted 1 secret in "), text
    assert provider.job_instances(target, job_id) == []
    launcher.close()

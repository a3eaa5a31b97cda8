"""`spotwise try aws|gcp|azure|huawei|kubernetes` as a stranger runs them, with a configuration
of their own that must not be touched: moto (AWS), the loopback fake and gcp-storage-emulator
(GCP), the loopback fake and Azurite (Azure), the loopback fake and moto's S3 (Huawei), or the
fake apiserver and its node player (Kubernetes) play the cloud, the bundled example is preempted
by the cloud's notice on its first instance (Kubernetes: its first Pod's node), resumes on a
second one from the checkpoint in the local bucket (the claim) and ends bit-exact; its logs are
shown and gc runs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import CliRun

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(400)]


def uninterrupted_digest(tmp_path: Path) -> str:
    """The example's model digest after the same training with no notice, on this machine."""
    out = tmp_path / "baseline.json"
    subprocess.run(
        [
            *(sys.executable, "-m", "spotwise.executor.examples.train_mlp"),
            *("--ckpt", str(tmp_path / "baseline-ckpt"), "--epochs", "2", "--samples", "256"),
            *("--out", str(out)),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return str(json.loads(out.read_text())["digest"])


def files(folder: Path) -> list[tuple[Path, bytes]]:
    """Every file under ``folder`` with its content."""
    return sorted((p.relative_to(folder), p.read_bytes()) for p in folder.rglob("*") if p.is_file())


def aws_user(home: Path) -> tuple[dict[str, str], Path]:
    """A real account's setup, none of it to be read or reached, and its folder."""
    (home / "aws").mkdir()
    (home / "aws" / "config").write_text("[default]\nregion = eu-west-3\n")
    return {
        "AWS_PROFILE": "their-production",
        "AWS_CONFIG_FILE": str(home / "aws" / "config"),
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",  # nothing listens: a call there fails
    }, home / "aws"


def gcp_user(home: Path) -> tuple[dict[str, str], Path]:
    """A real project's setup, none of it to be read or reached, and gcloud's folder."""
    gcloud = home / "gcloud"
    (gcloud / "configurations").mkdir(parents=True)
    (gcloud / "configurations" / "config_default").write_text("[core]\nproject = their-prod\n")
    return {
        "GOOGLE_APPLICATION_CREDENTIALS": str(home / "no-such-key.json"),
        "GOOGLE_CLOUD_PROJECT": "their-production",
        "CLOUDSDK_CORE_PROJECT": "their-production",
        "CLOUDSDK_CONFIG": str(gcloud),
        "STORAGE_EMULATOR_HOST": "http://127.0.0.1:9",  # nothing listens: a call there fails
    }, gcloud


def azure_user(home: Path) -> tuple[dict[str, str], Path]:
    """A real subscription's setup (a service principal, the az CLI signed in, a storage
    account, a managed identity), none of it to be read or reached, and the az CLI's folder."""
    az = home / "azure-cli"
    az.mkdir()
    (az / "config").write_text("[defaults]\ngroup = their-prod\nlocation = westeurope\n")
    (az / "azureProfile.json").write_text('{"subscriptions": [{"id": "their-subscription"}]}')
    return {
        "AZURE_CLIENT_ID": "their-app",  # the sign-in azure-identity tries first
        "AZURE_TENANT_ID": "their-tenant",
        "AZURE_CLIENT_SECRET": "their-secret",
        "AZURE_SUBSCRIPTION_ID": "their-subscription",
        "AZURE_CONFIG_DIR": str(az),
        "IDENTITY_ENDPOINT": "http://127.0.0.1:9/msi/token",  # nothing listens: a call fails
        "IDENTITY_HEADER": "theirs",
        "AZURE_STORAGE_CONNECTION_STRING": (
            "DefaultEndpointsProtocol=http;AccountName=theirs;AccountKey=dGhlaXJz;"
            "BlobEndpoint=http://127.0.0.1:9/theirs;"
        ),
    }, az


def huawei_user(home: Path) -> tuple[dict[str, str], Path]:
    """A real account's keys and credentials file, none of it to be read or reached."""
    (home / "huaweicloud").mkdir()
    credentials = home / "huaweicloud" / "credentials"
    credentials.write_text("[basic]\nak = THEIRKEY\nsk = their-secret\n")
    return {
        "HUAWEICLOUD_SDK_AK": "THEIRKEY",
        "HUAWEICLOUD_SDK_SK": "their-secret",
        "HUAWEICLOUD_SDK_CREDENTIALS_FILE": str(credentials),
        "SPOTWISE_HUAWEI_OBS_URL": "http://127.0.0.1:9",  # nothing listens: a call there fails
    }, home / "huaweicloud"


@dataclass(frozen=True, slots=True)
class Played:
    """What a try of one cloud shows its user."""

    user: Callable[[Path], tuple[dict[str, str], Path]]
    """The user's own settings for that cloud, and the folder of them that must stay as is."""
    served: str
    """Finds the local endpoint in the banner."""
    instance: str
    """An instance's name."""
    script: str
    """What the cloud calls the script an instance runs at boot."""
    notice: str
    """What the first instance got."""
    pool: str
    region: str
    where: str
    """In each command on the cloud besides the endpoint."""


PLAYED = {
    "aws": Played(
        user=aws_user,
        served=r"AWS is moto on (http://127\.0\.0\.1:\d+) \(this machine\)",
        instance=r"i-\w+",
        script="boot script",
        notice="a spot interruption notice",
        pool="us-east-1a",
        region="us-east-1",
        where="--region us-east-1",
    ),
    "gcp": Played(
        user=gcp_user,
        served=r"Compute Engine, Secret Manager and IAM on (http://127\.0\.0\.1:\d+)",
        instance=r"spotwise-[-\w]+",
        script="startup script",
        notice="a preemption notice and was preempted",
        pool="us-central1-a",
        region="us-central1",
        where="--project spotwise-fake --region us-central1",
    ),
    "azure": Played(
        user=azure_user,
        served=r"Resource Manager, Key Vault and the managed identity endpoint on "
        r"(https://127\.0\.0\.1:\d+)",
        instance=r"sw-[-\w]+",
        script="custom data",
        notice="Scheduled Events' Preempt (an eviction notice) and was evicted",
        pool="1",
        region="eastus",
        where="--project 00000000-0000-0000-0000-0000000000aa/spotwise-try --region eastus",
    ),
    "huawei": Played(
        user=huawei_user,
        served=r"a loopback fake of ECS, BSS and CSMS on (http://127\.0\.0\.1:\d+)",
        instance=r"[0-9a-f-]{36}",
        script="user data",
        notice="the spot instance-action (a reclaim notice) and was reclaimed",
        pool="ap-southeast-1a",
        region="ap-southeast-1",
        where="--project 0123456789abcdef0123456789abcdef --region ap-southeast-1",
    ),
}


@pytest.mark.parametrize("cloud", list(PLAYED))
def test_try_runs_the_example_through_a_notice_to_a_bit_exact_resume_on_local_servers(
    cloud: str, cli: CliRun, tmp_path: Path, store_file: Path
) -> None:
    played = PLAYED[cloud]
    theirs, folder = played.user(tmp_path)
    before = files(folder)
    ran = cli("try", cloud, "--keep", env=theirs)
    assert ran.returncode == 0, ran.stderr[-4000:]
    served = re.search(played.served, ran.stderr)
    assert served, ran.stderr[:2000]
    assert "nothing is billed" in ran.stderr
    commands = [line for line in ran.stderr.splitlines() if line.startswith("$ spotwise ")]
    assert [c.split()[2] for c in commands] == ["setup", "run", "jobs", "gc"], commands
    on_cloud = [c for c in commands if f" {cloud} " in c]
    assert len(on_cloud) == 3, commands  # setup, run and gc
    assert all(f"{played.where} --endpoint-url {served.group(1)}" in c for c in on_cloud)
    # the run's report: two instances, moved by the one notice
    assert re.search(r"^job (\w+) \(completed\):", ran.stdout, re.MULTILINE), ran.stdout
    assert "2 instances, 1 preemption (1 notice)" in ran.stdout
    # what the local cloud played: the notice to the first, the resume on the second
    script = played.script
    first, second = re.findall(rf"^  ({played.instance}): {script} exit 0, its", ran.stderr, re.M)
    started = f"{first}: {script} exit 0, its command started fresh, then got {played.notice}"
    assert started in ran.stderr, ran.stderr[-3000:]
    resumed = re.search(rf"{second}: .* resumed from its checkpoint, step (\d+)$", ran.stderr, re.M)
    assert resumed and int(resumed.group(1)) > 0, ran.stderr[-3000:]
    # the logs of both instances, then gc on the local cloud
    assert f"--- instance 1: spot in {played.pool} ({first}) ---" in ran.stdout
    assert f"--- instance 2: spot in {played.pool} ({second}) ---" in ran.stdout
    assert f"no orphaned Spotwise instance or secret in {played.region}" in ran.stdout
    # bit-exact: the second instance's model is the one an uninterrupted run ends with
    kept = re.search(r"the try's ledger are in (\S+)", ran.stderr)
    assert kept, ran.stderr[-2000:]
    result = Path(kept.group(1)) / "instances" / second / "work" / "result.json"
    assert json.loads(result.read_text())["digest"] == uninterrupted_digest(tmp_path)
    # the try kept its ledger to itself (the user's store was not even made), and their
    # cloud's configuration is as it was
    assert not store_file.exists()
    assert files(folder) == before


def test_a_wheel_given_to_try_is_the_one_run_ships(cli: CliRun, tmp_path: Path) -> None:
    """A Spotwise installed from a wheel has no source to build one from: ``--wheel`` passes
    the user's to ``run``, which checks it before anything is launched."""
    ran = cli("try", "aws", "--wheel", str(tmp_path / "spotwise.tar.gz"))
    assert ran.returncode != 0
    assert f"--wheel {tmp_path / 'spotwise.tar.gz'}: not a spotwise-*.whl file" in ran.stderr
    run = next(line for line in ran.stderr.splitlines() if line.startswith("$ spotwise run "))
    assert f"--wheel {tmp_path / 'spotwise.tar.gz'}" in run


def test_try_kubernetes_reclaims_a_spot_node_and_a_new_pod_resumes_bit_exactly(
    cli: CliRun, tmp_path: Path, store_file: Path
) -> None:
    """`spotwise try kubernetes`: the fake apiserver and the node player play a GKE cluster; the
    first Pod's node is taken back (the kubelet's SIGTERM), its guard checkpoints to the claim
    within the grace and exits 75, the Job's new Pod on a new spot node resumes and ends where
    an uninterrupted run ends; the user's kubeconfig and in-cluster settings are not read."""
    kube = tmp_path / "kube"
    kube.mkdir()
    (kube / "config").write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: prod\nclusters:\n- name: prod\n"
        "  cluster: {server: 'https://127.0.0.1:9'}\ncontexts:\n- name: prod\n"
        "  context: {cluster: prod, user: prod, namespace: prod}\nusers:\n- name: prod\n"
        "  user: {token: theirs}\n"
    )
    theirs = {
        "KUBECONFIG": str(kube / "config"),  # nothing listens there: a call fails
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": "9",
    }
    before = files(kube)
    ran = cli("try", "kubernetes", "--keep", env=theirs)
    said = ran.stderr + ran.stdout
    assert ran.returncode == 0, said[-4000:]
    assert re.search(r"a loopback fake kube-apiserver on http://127\.0\.0\.1:\d+", said), said
    assert "nothing is billed" in said and "in place of the image" in said
    commands = [line for line in said.splitlines() if line.startswith("$ spotwise ")]
    assert [c.split()[2] for c in commands] == ["setup", "run", "jobs", "gc"], commands
    on_cloud = [c for c in commands if " kubernetes " in c]
    assert len(on_cloud) == 3 and all(
        "--project spotwise-fake/train --region gke" in c for c in on_cloud
    ), commands
    assert "code: nothing shipped; each Pod runs the command in " in said
    assert re.search(r"^job (\w+) \(completed\):", ran.stdout, re.MULTILINE), ran.stdout
    # the reclaim: SIGTERM within the grace (no SIGKILL), exit 75, the new Pod resumed
    taken = re.search(
        r"node spot-1 taken back under Pod (\S+) \(tainted, DisruptionTarget, SIGTERM\): its Pod "
        r"ended ([\d.]+) s later \(the grace: 15 s\)",
        said,
    )
    assert taken and float(taken.group(2)) < 15, said[-3000:]
    first = taken.group(1)
    assert f"Pod {first}: started fresh, exit 75" in said
    resumed = re.search(r"Pod (\S+): resumed at step (\d+), exit 0$", said, re.M)
    assert resumed and int(resumed.group(2)) > 0 and resumed.group(1) != first, said[-3000:]
    assert "SIGKILLed" not in said
    # the ledger counts the reclaim the Job rode out: a preemption, its SIGTERM the notice
    assert "1 instance, 1 preemption (1 notice)" in ran.stdout, ran.stdout[-3000:]
    assert f"preempted on spot in any: TerminationByKubelet ({first};" in said
    # each Pod's lines in the job's logs, the claim not sized from here, gc beside nothing
    assert re.search(r"--- instance 1: spot in any \(spotwise-\w+-1\) ---", ran.stdout)
    assert f"Pod {first} runs on node spot-1" in ran.stdout
    assert f"Pod {resumed.group(1)} runs on node spot-2" in ran.stdout
    assert "checkpoints at /spotwise/spotwise/checkpoints/try not sized" in said
    assert "no orphaned Spotwise instance or secret in gke" in said
    # bit-exact, from the checkpoint the first Pod left on the claim (a folder here)
    kept = re.search(r"the try's ledger are in (\S+)", said)
    assert kept, said[-2000:]
    folder = Path(kept.group(1))
    claim = folder / "cluster" / "claims" / "checkpoints" / "spotwise" / "checkpoints" / "try"
    assert any(claim.iterdir()), claim
    result = folder / "workdir" / "result.json"
    assert json.loads(result.read_text())["digest"] == uninterrupted_digest(tmp_path)
    assert not store_file.exists()
    assert files(kube) == before

"""The boot script every cloud shares, around a toy cloud whose bucket is a folder: valid bash,
every value quoted, no secret and nothing from a public index in it, the agent's options in
their order, and a boot that fails before the command leaves its log and exit code 1 in the
bucket."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from spotwise.core.settings import CloudEndpoint
from spotwise.executor.clouds.boot_script import CloudBoot, python_path
from spotwise.executor.clouds.code_bundle import ShippedCode
from spotwise.executor.errors import ExecutorError

CODE = ShippedCode("spotwise/code/aa11/workdir.tar.gz", "spotwise/code/bb22/spotwise-0.1-any.whl")
FOLDER = """\
folder() {  # folder get|put KEY FILE: $BUCKET is a folder
  if [ "$1" = get ]; then cp "$BUCKET/$2" "$3"
  else mkdir -p "$(dirname "$BUCKET/$2")" && cp "$3" "$BUCKET/$2"
  fi
}
"""
TOY = CloudBoot(
    cloud="toy",
    agent="spotwise.executor.clouds.toy.on_instance",
    agent_options='--bucket "$BUCKET"',
    store="folder",
    store_function=FOLDER,
    store_url="folder://$BUCKET/",
    exported=("TOY_REGION",),
)


def test_the_script_quotes_every_value_and_carries_no_secret() -> None:
    hostile = ["python", "train.py", "--name", "$(touch /tmp/pwned)"]
    env = {
        "SPOTWISE_POOL": "1; rm -rf /",
        "SPOTWISE_NODE": "0",
        "SPOTWISE_API_TOKEN": "tok-123",
        "SPOTWISE_STORE": "/home/me/market.duckdb",
    }
    script = TOY.script(
        hostile,
        env,
        code=CODE,
        settings={"TOY_REGION": "r 1", "BUCKET": "b'x"},
        prefix="spotwise/jobs/j1",
        instance="vm-$(id)",
        options=["--endpoint-url", "http://127.0.0.1:1/$(id)"],
        setup=["x; rm -rf /"],
        secrets={"TOKEN": "toy-j1-token", "A": "toy-a"},
    )
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
    assert "export TOY_REGION='r 1'\nBUCKET='b'\"'\"'x'\nPREFIX=spotwise/jobs/j1\n" in script
    assert "ID='vm-$(id)'\n" in script and "IMDS=" not in script
    assert "env SPOTWISE_NODE=0 SPOTWISE_NOTICES=toy SPOTWISE_POOL='1; rm -rf /'" in script
    for value in ("tok-123", "SPOTWISE_API_TOKEN", "/home/me", "pip install spotwise"):
        assert value not in script
    assert (
        "--forward-notices --endpoint-url 'http://127.0.0.1:1/$(id)' --setup 'x; rm -rf /' "
        "--secret A=toy-a --secret TOKEN=toy-j1-token -- python train.py --name "
        "'$(touch /tmp/pwned)'\n"
    ) in script
    assert f"folder get {CODE.wheel_key} " in script and f"folder get {CODE.workdir_key} " in script
    assert "-m spotwise.executor.clouds.toy.on_instance run" in script
    assert script.startswith("#!/bin/bash\n") and script.endswith("\n$SHUTDOWN\n")


def test_a_cloud_that_finds_its_id_asks_its_metadata_endpoint() -> None:
    asking = replace(
        TOY,
        identity='ID=$(curl -sf "$IMDS/id")\n',
        metadata=CloudEndpoint("SPOTWISE_TOY_METADATA_URL", "http://169.254.169.254", https=False),
    )
    script = asking.script(["true"], {}, code=CODE, settings={"BUCKET": "b"}, prefix="p")
    assert 'IMDS="${SPOTWISE_TOY_METADATA_URL:-http://169.254.169.254}"\n' in script
    assert 'exec >>"$ROOT/boot.log" 2>&1\nID=$(curl -sf "$IMDS/id")\nfolder() {' in script
    assert "\nID=" not in script.split("exec >>")[0]  # the launcher did not name it
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0


def test_a_boot_that_fails_before_the_command_leaves_its_log_and_exit_code_1(
    tmp_path: Path,
) -> None:
    bucket, root = tmp_path / "bucket", tmp_path / "root"
    bucket.mkdir()
    script = TOY.script(
        ["true"], {}, code=CODE, settings={"BUCKET": str(bucket)}, prefix="p", instance="vm-1"
    )
    env = {"PATH": "/usr/bin:/bin", "SPOTWISE_ROOT": str(root)}
    env["SPOTWISE_SHUTDOWN"] = f"touch {tmp_path / 'shut-down'}"
    done = subprocess.run(["bash"], input=script, text=True, env=env, timeout=60)
    assert done.returncode == 1 and (tmp_path / "shut-down").exists()
    assert (bucket / "p/vm-1/exit").read_text() == "1\n"
    log = (bucket / "p/vm-1/boot.log").read_text()
    assert f"spotwise boot: cannot fetch folder://{bucket}/{CODE.wheel_key}" in log


def fake_python(path: Path, *, torch: bool, version: tuple[int, int] | None = None) -> Path:
    """An interpreter at ``path``: this Python with a torch package that imports or fails, and
    ``version`` as its ``sys.version_info`` when given (an older image's Python)."""
    lib = path.parent.parent / "fake-lib"
    (lib / "torch").mkdir(parents=True)
    (lib / "torch/__init__.py").write_text(
        '__version__ = "2.5.1+fake"\n' if torch else 'raise ImportError("no torch here")\n'
    )
    if version is not None:
        (lib / "sitecustomize.py").write_text(
            f"import sys\nsys.version_info = ({version[0]}, {version[1]}, 12, 'final', 0)\n"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\nPYTHONPATH={lib} exec {sys.executable} "$@"\n')
    path.chmod(0o755)
    return path


def boot(
    image: Path, run: Path, python: str | None = None, *, path: str | None = None
) -> tuple[int, str]:
    """Boot the toy cloud on the image laid out under ``image`` (its ``usr/bin`` first on the
    PATH, unless ``path`` is given) with an empty bucket under ``run``: the boot fails at
    fetching the code, after it chose its interpreter. Its exit code and boot log."""
    bucket = run / "bucket"
    bucket.mkdir(parents=True)
    script = TOY.script(
        ["true"],
        {},
        code=CODE,
        settings={"BUCKET": str(bucket)},
        prefix="p",
        instance="vm-1",
        python=python,
    )
    env = {
        "PATH": path or f"{image / 'usr/bin'}:/usr/bin:/bin",
        "SPOTWISE_ROOT": str(run / "root"),
        "SPOTWISE_IMAGE_ROOT": str(image),
        "SPOTWISE_SHUTDOWN": "true",
    }
    bash = str(shutil.which("bash"))
    done = subprocess.run([bash], input=script, text=True, env=env, timeout=120)
    return done.returncode, (bucket / "p/vm-1/boot.log").read_text()


def test_the_boot_runs_the_job_with_the_images_torch_interpreter_not_its_python3(
    tmp_path: Path,
) -> None:
    image = tmp_path / "image"
    python3 = fake_python(image / "usr/bin/python3", torch=False)
    dlami = fake_python(image / "opt/pytorch/bin/python", torch=True)
    code, log = boot(image, tmp_path / "run")
    assert code == 1 and "spotwise boot: cannot fetch" in log  # past the interpreter
    assert f"spotwise boot: python {dlami}: Python 3." in log
    assert ", torch 2.5.1+fake\n" in log
    assert f"spotwise boot: the job runs with {dlami}\n" in log
    assert str(python3) not in log  # the first that fits is taken


def test_the_users_python_comes_first_then_a_conda_env_when_it_is_not_there(
    tmp_path: Path,
) -> None:
    image = tmp_path / "image"
    fake_python(image / "opt/pytorch/bin/python", torch=True, version=(3, 10))
    conda = fake_python(image / "opt/conda/envs/torch2/bin/python", torch=True)
    mine = fake_python(tmp_path / "mine/bin/python", torch=True)
    _, log = boot(image, tmp_path / "given", str(mine))
    assert f"spotwise boot: the job runs with {mine}\n" in log
    _, log = boot(image, tmp_path / "missing", "/nowhere/bin/python")
    assert "spotwise boot: python /nowhere/bin/python: not on this image\n" in log
    assert "/opt/pytorch/bin/python: Python 3.10, older than 3.11\n" in log
    assert f"spotwise boot: the job runs with {conda}\n" in log


def test_without_torch_anywhere_the_first_modern_python_is_taken_and_said(
    tmp_path: Path,
) -> None:
    image = tmp_path / "image"
    plain = fake_python(image / "usr/bin/python3", torch=False)
    _, log = boot(image, tmp_path / "run")
    assert f"spotwise boot: python {plain}: Python 3." in log and "no torch (ImportError)" in log
    assert "no Python here imports torch: the venv gets it from PyPI" in log
    assert f"spotwise boot: the job runs with {plain}\n" in log


def test_an_image_with_only_an_old_python_fails_the_boot_with_the_fix(tmp_path: Path) -> None:
    image = tmp_path / "image"  # Ubuntu 22.04's python3 (ubuntu-hpc:2204), torch or not
    bin_ = image / "usr/bin"
    fake_python(bin_ / "python3", torch=True, version=(3, 10))
    for name in ("cp", "mkdir", "dirname"):  # what the boot runs until it fails; no python3
        (bin_ / name).symlink_to(str(shutil.which(name)))
    bucket = tmp_path / "run/bucket"
    code, log = boot(image, tmp_path / "run", path=str(bin_))
    assert code == 1 and (bucket / "p/vm-1/exit").read_text() == "1\n"
    assert "python3: Python 3.10, older than 3.11\n" in log
    assert "spotwise boot: no Python 3.11+ on this image (tried /opt/pytorch/bin/python" in log
    assert "pass --python PATH of one, or use an image with one (docs/clouds.md)" in log
    assert "cannot fetch" not in log


@pytest.mark.parametrize(
    "hostile",
    [
        "python3",
        "/opt/x/python; rm -rf /",
        "/opt/$(id)/python",
        "/opt/a b/python",
        "/opt/../x",
        "/opt/`id`",
        "/" + "a" * 300,
        "/opt/x\n",
    ],
)
def test_python_must_be_an_absolute_plain_path(hostile: str) -> None:
    with pytest.raises(ExecutorError, match=r"--python .*absolute path"):
        python_path(hostile)


def test_a_plain_absolute_python_is_taken_as_given() -> None:
    assert python_path("/opt/conda/envs/py3.12+cu/bin/python3.12") == (
        "/opt/conda/envs/py3.12+cu/bin/python3.12"
    )
    assert python_path(None) is None

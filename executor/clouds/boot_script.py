"""The boot script every cloud's VM runs once, as root: fetch the job's wheel and workdir from
its bucket, make a venv that also sees the image's packages (torch on a deep learning image),
install the wheel and what a VM needs, run the setup commands and the command under the
cloud's on-instance agent (:mod:`executor.clouds.agent`), then shut down. A cloud's
:class:`CloudBoot` holds what its script does its own way (how it gets and puts a file in its
bucket, how it learns the VM's id, where the agent finds the bucket); :meth:`CloudBoot.script`
puts the shared steps around it.

The job's interpreter is the image's, found at boot (:data:`IMAGE_PYTHONS`): the first of the
user's ``--python``, the interpreters deep learning images keep torch in, and ``python3`` that is
Python 3.11+ (the project's floor) and imports torch; else the first that is 3.11+ (the venv then
gets torch from PyPI). The boot log says each one tried and the one chosen.

A boot that fails before the command runs uploads its own log (``boot.log``) and exit code 1,
so the supervisor can say why. ``SPOTWISE_ROOT``, ``SPOTWISE_PYTHON`` (``--python``),
``SPOTWISE_IMAGE_ROOT`` (where the image's interpreters are looked for) and
``SPOTWISE_SHUTDOWN`` override its folder, interpreter and shutdown, and the cloud's metadata
endpoint has its own variable (tests run it in a temporary folder against local servers).

What a cloud passes to its VM at boot can be read on the VM and through its API, so the script
carries only the settings of :data:`PLAIN_ENV`; secrets are the names of the cloud's secrets,
which the agent reads with the VM's identity.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from spotwise.core.settings import CloudEndpoint
from spotwise.executor.clouds.code_bundle import ShippedCode
from spotwise.executor.clouds.instance_folder import BOOT_LOG, EXIT_NAME
from spotwise.executor.errors import ExecutorError

PLAIN_ENV = (
    "SPOTWISE_POOL",
    "SPOTWISE_MARKET",
    "SPOTWISE_NODE",
    "TORCH_DISABLE_SHARE_RDZV_TCP_STORE",
    "SPOTWISE_MTBF_S",
    "SPOTWISE_CHECKPOINT_S",
    "SPOTWISE_NOTICES",
)
"""The only variables a boot script may carry: none of them is a secret."""
MIN_PYTHON = (3, 11)
"""The oldest Python the job's interpreter may be (``requires-python`` of pyproject.toml)."""
IMAGE_PYTHONS = (
    "/opt/pytorch/bin/python",  # AWS Deep Learning AMIs with PyTorch: their own venv
    "/opt/conda/envs/pytorch/bin/python",  # older AWS Deep Learning AMIs: a conda env
    "/opt/conda/bin/python",  # GCP Deep Learning VM images: conda's base
    "/opt/conda/envs/*/bin/python",  # other conda environments
    "/anaconda/envs/*/bin/python",  # Azure Data Science VM images: conda environments
)
"""Where deep learning images keep the interpreter that has torch, tried in order after
``--python`` and before ``python3`` (a ``*`` is every environment there)."""
PYTHON_PATH = re.compile(r"/[A-Za-z0-9._+/-]{1,254}")
"""What ``--python`` may be: an absolute path of plain characters (it goes into a script)."""
_PROBE = f"""\
import sys
v = "Python %d.%d" % sys.version_info[:2]
if sys.version_info < {MIN_PYTHON}:
    print(v + ", older than {MIN_PYTHON[0]}.{MIN_PYTHON[1]}")
    sys.exit(2)
try:
    import torch
except Exception as e:
    print(v + ", no torch (" + type(e).__name__ + ")")
    sys.exit(1)
print(v + ", torch " + torch.__version__)
"""
"""What the boot asks each interpreter: its version and torch's; exit 0 (3.11+ with torch),
1 (3.11+ without) or 2 (older)."""

_TEMPLATE = """\
#!/bin/bash
# Spotwise boot script: fetch the code, make a venv, run the command, report, shut down.
set -u
{settings}ROOT="${{SPOTWISE_ROOT:-{root}}}"
ASKED={python}
ASKED="${{SPOTWISE_PYTHON:-$ASKED}}"
IMAGE="${{SPOTWISE_IMAGE_ROOT:-}}"
PY=python3  # the bucket's helpers' until the job's interpreter is found
SHUTDOWN="${{SPOTWISE_SHUTDOWN:-shutdown -h now}}"
{metadata}mkdir -p "$ROOT/code" "$ROOT/work" && cd "$ROOT" || exit 1
exec >>"$ROOT/{boot_log}" 2>&1
{identity}{store_function}\
fail() {{  # the command never ran: keep the reason where the supervisor reads it, then stop
  echo "spotwise boot: $1"
  {store} put "$PREFIX/$ID/{boot_log}" "$ROOT/{boot_log}"
  echo 1 > "$ROOT/{exit}" && {store} put "$PREFIX/$ID/{exit}" "$ROOT/{exit}"
  $SHUTDOWN
  exit 1
}}
# The job's interpreter: the first Python {floor}+ that imports torch, else the first {floor}+
TORCH_PY="" PLAIN_PY="" SEEN=" "
for c in "$ASKED" {candidates} python3; do
  [ -n "$c" ] || continue
  case "$SEEN" in *" $c "*) continue ;; esac  # a conda env both named and globbed
  SEEN="$SEEN$c "
  if ! found=$(command -v "$c"); then
    [ "$c" = "$ASKED" ] && echo "spotwise boot: python $c: not on this image"
    continue
  fi
  c="$found"
  said=$("$c" -c {probe} 2>/dev/null); got=$?
  echo "spotwise boot: python $c: ${{said:-does not run (exit $got)}}"
  [ $got = 0 ] && TORCH_PY="$c" && break
  [ $got = 1 ] && [ -z "$PLAIN_PY" ] && PLAIN_PY="$c"
done
if [ -n "$TORCH_PY" ]; then PY="$TORCH_PY"
elif [ -n "$PLAIN_PY" ]; then
  PY="$PLAIN_PY"
  echo "spotwise boot: no Python here imports torch: the venv gets it from PyPI (a large download)"
else
  fail "no Python {floor}+ on this image (tried ${{ASKED:+--python $ASKED, }}{tried} and python3): \
pass --python PATH of one, or use an image with one (docs/clouds.md)"
fi
echo "spotwise boot: the job runs with $PY"
{store} get {wheel_key} "$ROOT/code/{wheel_name}" || fail "cannot fetch {store_url}"{wheel_key}
{store} get {workdir_key} "$ROOT/code/workdir.tar.gz" || fail "cannot fetch the workdir"
tar -xzf "$ROOT/code/workdir.tar.gz" -C "$ROOT/work" || fail "cannot unpack the workdir"
# A venv that sees the image's packages (torch), also when $PY is itself a venv; without a pip
# of its own, whose bundled setuptools would shadow the image's.
"$PY" -m venv --system-site-packages --without-pip "$ROOT/venv" || fail "$PY cannot make a venv"
V="$ROOT/venv/bin/python"
"$PY" -c 'import site; print("\\n".join(site.getsitepackages()))' \\
  > "$("$V" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/spotwise-image.pth"
"$V" -m pip --version >/dev/null 2>&1 || "$V" -m ensurepip --default-pip || fail "no pip"
"$V" -m pip install --quiet --no-deps "$ROOT/code/{wheel_name}" || fail "cannot install the wheel"
"$V" -m {agent} requirements > "$ROOT/code/requirements.txt"
"$V" -m pip install --quiet -r "$ROOT/code/requirements.txt" || fail "cannot install requirements"
cd "$ROOT/work"
PATH="$ROOT/venv/bin:$PATH" {exports} "$V" -m {agent} run \\
  {agent_options} --prefix "$PREFIX" --instance "$ID" \\
  --reported "$ROOT/reported" {options}-- {command}
[ -e "$ROOT/reported" ] || fail "the runner ended without reporting an exit code"
{store} put "$PREFIX/$ID/{boot_log}" "$ROOT/{boot_log}"
$SHUTDOWN
"""


@dataclass(frozen=True, kw_only=True)
class CloudBoot:
    """What one cloud's boot script does its own way. Its shell text is whole lines, each
    ending in a newline, and it may use the script's variables: ``$PY``, ``$ROOT``,
    ``$SHUTDOWN``, ``$PREFIX``, ``$ID``, ``$IMDS`` (with :attr:`metadata`) and the cloud's own
    settings."""

    cloud: str
    """The cloud's name, as ``SPOTWISE_NOTICES`` gives it to the guard."""
    agent: str
    """Its on-instance agent's module (its :class:`~executor.clouds.agent.CloudAgent`)."""
    agent_options: str
    """The agent's options that say where the job's bucket is, from the cloud's settings."""
    store: str
    """The name of its shell function ``NAME get|put KEY FILE``, which gets a file of the
    job's bucket or puts one there."""
    store_function: str
    """That function's definition."""
    store_url: str
    """How a message names the bucket, before a key."""
    root: str = "/opt/spotwise"
    """Where the code, the venv and the work go (``SPOTWISE_ROOT`` overrides it)."""
    metadata: CloudEndpoint | None = None
    """Its instance metadata endpoint, as ``$IMDS``, when the script asks it something."""
    identity: str = ""
    """Lines that set ``ID`` on the VM, for a cloud whose launcher does not name the VM (they
    run once the output goes to the boot log)."""
    exported: tuple[str, ...] = ()
    """The settings the shell exports, for its commands and the agent."""

    def script(
        self,
        command: Sequence[str],
        env: Mapping[str, str],
        *,
        code: ShippedCode,
        settings: Mapping[str, str],
        prefix: str,
        instance: str | None = None,
        options: Sequence[str] = (),
        setup: Sequence[str] = (),
        secrets: Mapping[str, str] | None = None,
        python: str | None = None,
    ) -> str:
        """The boot script that runs ``command`` on one VM. ``settings`` are the cloud's shell
        variables (where the job's bucket is); ``instance`` is the VM's id when the launcher
        chose it (else :attr:`identity` finds it); ``options`` are the agent's own words,
        after the notice forwarding of an elastic node; ``secrets`` maps a variable to the
        cloud's secret holding its value; ``python`` is the user's ``--python``, tried first.
        ``env`` is filtered to :data:`PLAIN_ENV` (with ``SPOTWISE_NOTICES`` the cloud's).
        Every value is shell-quoted."""
        plain = {k: v for k, v in env.items() if k in PLAIN_ENV} | {"SPOTWISE_NOTICES": self.cloud}
        exports = "env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(plain.items()))
        named = {**settings, "PREFIX": prefix} | ({"ID": instance} if instance is not None else {})
        assigned = "".join(
            f"{'export ' if name in self.exported else ''}{name}={shlex.quote(value)}\n"
            for name, value in named.items()
        )
        metadata = (
            f'IMDS="${{{self.metadata.variable}:-{self.metadata.default}}}"\n'
            if self.metadata
            else ""
        )
        # an elastic node's torchrun agent leaves the group on the notice (its workers would
        # otherwise be restarted until the VM is gone)
        forward = ["--forward-notices"] if "SPOTWISE_NODE" in env else []
        words = [*forward, *options]
        words += [w for s in setup for w in ("--setup", s)]
        words += [
            w for pair in sorted((secrets or {}).items()) for w in ("--secret", "=".join(pair))
        ]
        return _TEMPLATE.format(
            settings=assigned,
            root=self.root,
            metadata=metadata,
            boot_log=BOOT_LOG,
            exit=EXIT_NAME,
            identity=self.identity,
            store_function=self.store_function,
            store=self.store,
            store_url=self.store_url,
            wheel_key=shlex.quote(code.wheel_key),
            wheel_name=shlex.quote(code.wheel_name),
            workdir_key=shlex.quote(code.workdir_key),
            agent=self.agent,
            agent_options=self.agent_options,
            exports=exports,
            options="".join(f"{shlex.quote(w)} " for w in words),
            command=shlex.join(command),
            python=shlex.quote(python or ""),
            floor=".".join(map(str, MIN_PYTHON)),
            candidates=" ".join(f'"$IMAGE"{path}' for path in IMAGE_PYTHONS),
            tried=", ".join(IMAGE_PYTHONS),
            probe=shlex.quote(_PROBE),
        )


def python_path(value: str | None) -> str | None:
    """``--python`` checked: None, or the absolute path of an interpreter on the image.

    Raises:
        ExecutorError: for anything else (it goes into the boot script).
    """
    if value is None or (PYTHON_PATH.fullmatch(value) and "/../" not in f"{value}/"):
        return value
    raise ExecutorError(
        f"--python {value[:60]!r}: give the absolute path of the image's interpreter, e.g. "
        "/opt/conda/bin/python (letters, digits and . _ + - / only, no ..)"
    )

"""The boot script every cloud's VM runs once, as root: fetch the job's wheel and workdir from
its bucket, make a venv that also sees the image's packages (torch on a deep learning image),
install the wheel and what a VM needs, run the setup commands and the command under the
cloud's on-instance agent (:mod:`executor.clouds.agent`), then shut down. A cloud's
:class:`CloudBoot` holds what its script does its own way (how it gets and puts a file in its
bucket, how it learns the VM's id, where the agent finds the bucket); :meth:`CloudBoot.script`
puts the shared steps around it.

A boot that fails before the command runs uploads its own log (``boot.log``) and exit code 1,
so the supervisor can say why. ``SPOTWISE_ROOT``, ``SPOTWISE_PYTHON`` and ``SPOTWISE_SHUTDOWN``
override its folder, interpreter and shutdown, and the cloud's metadata endpoint has its own
variable (tests run it in a temporary folder against local servers).

What a cloud passes to its VM at boot can be read on the VM and through its API, so the script
carries only the settings of :data:`PLAIN_ENV`; secrets are the names of the cloud's secrets,
which the agent reads with the VM's identity.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from spotwise.core.settings import CloudEndpoint
from spotwise.executor.clouds.code_bundle import ShippedCode
from spotwise.executor.clouds.instance_folder import BOOT_LOG, EXIT_NAME

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

_TEMPLATE = """\
#!/bin/bash
# Spotwise boot script: fetch the code, make a venv, run the command, report, shut down.
set -u
{settings}ROOT="${{SPOTWISE_ROOT:-{root}}}"
PY="${{SPOTWISE_PYTHON:-python3}}"
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
    ) -> str:
        """The boot script that runs ``command`` on one VM. ``settings`` are the cloud's shell
        variables (where the job's bucket is); ``instance`` is the VM's id when the launcher
        chose it (else :attr:`identity` finds it); ``options`` are the agent's own words,
        after the notice forwarding of an elastic node; ``secrets`` maps a variable to the
        cloud's secret holding its value. ``env`` is filtered to :data:`PLAIN_ENV` (with
        ``SPOTWISE_NOTICES`` the cloud's). Every value is shell-quoted."""
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
        )

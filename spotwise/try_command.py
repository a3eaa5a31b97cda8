"""``spotwise try CLOUD``: a whole spot job on a cloud played on this machine, with no account:
the cloud's APIs on local servers, a fake instance metadata service for the spot notice, each
instance the launcher's boot script run in a folder of its own. The job goes through the
commands a user runs on the real cloud (``setup``, ``run --launcher CLOUD``, ``jobs logs``,
``gc``), in process, each printed as it runs."""

from __future__ import annotations

import shlex
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from spotwise.console import fail, open_operational_store, say
from spotwise.executor.clouds.registry import LOCAL_CLOUDS
from spotwise.executor.errors import ExecutorError
from spotwise.executor.local_clouds.base import LocalCloud

try_app = typer.Typer(
    help="Try a cloud without an account: its APIs on local servers, its instances played "
    "here, nothing billed.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
CHECKPOINTS = "spotwise/checkpoints/try"
"""Where in the local bucket the example checkpoints."""


def example(storage: str) -> list[str]:
    """The command run when none is given: the bundled example, checkpointing to ``storage``
    (a URL in the bucket) and slowed so that the notice lands mid-training."""
    return [
        *("python", "-m", "spotwise.executor.examples.train_mlp", "--ckpt", storage),
        *("--epochs", "2", "--samples", "256", "--step-sleep-s", "0.4", "--out", "result.json"),
    ]


def _register(name: str, play: Callable[[Path], LocalCloud]) -> None:
    """``spotwise try NAME``."""

    @try_app.command(
        name,
        help=f"Run COMMAND as a spot job on {name} played on this machine: setup, launch, a "
        "spot interruption notice, the resume on a new instance, its logs and gc. No real "
        "endpoint is reached, nothing is billed.",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )
    def try_cloud(
        ctx: typer.Context,
        command: Annotated[
            list[str] | None,
            typer.Argument(
                help="The training command, after -- (default: the bundled example). To "
                "resume on the new instance it checkpoints under the guard to the local "
                "bucket (printed).",
                show_default=False,
            ),
        ] = None,
        workdir: Annotated[
            Path | None,
            typer.Option(
                "--workdir",
                help="The folder shipped to each instance; the command runs there (default: "
                "this folder with a COMMAND, an empty one for the example).",
                show_default=False,
            ),
        ] = None,
        notice_after_s: Annotated[
            float,
            typer.Option(
                "--notice-after-s",
                min=0.0,
                help="Seconds after the first instance's guard starts until its spot "
                "interruption notice.",
            ),
        ] = 3.0,
        keep: Annotated[
            bool,
            typer.Option(
                "--keep", help="Keep the instances' folders and the try's ledger (printed)."
            ),
        ] = False,
        wheel: Annotated[
            Path | None,
            typer.Option(
                "--wheel",
                help="The Spotwise wheel to install on the instances (default: built from this "
                "install's source; a Spotwise installed from a wheel passes that wheel, e.g. "
                "pip download spotwise --no-deps).",
                show_default=False,
            ),
        ] = None,
    ) -> None:
        folder = Path(tempfile.mkdtemp(prefix="spotwise-try-"))
        try:
            with play(folder) as local:
                say(f"spotwise try {name}: {local.banner}")
                spotwise = ctx.find_root().command.main
                code = _try(spotwise, name, local, folder, command, workdir, notice_after_s, wheel)
        except ExecutorError as exc:
            fail(str(exc))
        finally:
            if keep:
                say(f"kept: the instances' folders and the try's ledger are in {folder}")
            else:
                shutil.rmtree(folder, ignore_errors=True)
        if code:
            raise typer.Exit(code)


def _try(
    spotwise: Callable[..., Any],
    name: str,
    local: LocalCloud,
    folder: Path,
    command: list[str] | None,
    workdir: Path | None,
    notice_after_s: float,
    wheel: Path | None,
) -> int:
    """setup, run, logs and gc on the local cloud: the run's exit code."""
    store = str(folder / "store.duckdb")
    storage = f"{local.bucket_url}/{CHECKPOINTS}"
    options: tuple[str, ...] = () if wheel is None else ("--wheel", str(wheel))
    if command is None:
        command, options = example(storage), (*options, "--ckpt", storage)
        workdir = workdir or folder / "workdir"
        workdir.mkdir(exist_ok=True)
    else:
        say(f"the local bucket is {local.bucket}: checkpoint under {storage}/ to resume")
    code = _spotwise(spotwise, "setup", name, *local.where, "--bucket", local.bucket)
    if code:
        return code
    flags = local.start_instances(notice_after_s)
    try:
        code = _spotwise(spotwise,
            *("run", "--launcher", name, *local.where, *flags, "--workdir", str(workdir or ".")),
            *options, "--step-report-s", "5", "--store", store, "--", *command,
        )  # fmt: skip
    finally:
        played = local.stop_instances()
    say(played)
    job_id = _last_job(store)
    if job_id is not None:
        _spotwise(spotwise, "jobs", "logs", job_id, "--store", store)
    _spotwise(spotwise, "gc", name, *local.where, "--store", store)
    say(
        f"done: all of it ran on this machine; no {name} endpoint was reached and nothing was "
        "billed (the report's $ are simulated)"
    )
    return code


def _spotwise(spotwise: Callable[..., Any], *args: str) -> int:
    """Run ``spotwise ARGS`` in this process (``spotwise``: the command line's ``main``), after
    printing it: its exit code."""
    say(f"$ spotwise {shlex.join(args)}")
    code = spotwise(list(args), prog_name="spotwise", standalone_mode=False)
    return code if isinstance(code, int) else 0


def _last_job(store: str) -> str | None:
    """The job the try ran (the newest in its ledger), or None when it never started."""
    from spotwise.executor.ledger.ledger import list_jobs

    with open_operational_store(Path(store)) as market:
        rows = list_jobs(market)
    return rows[0].job_id if rows else None


for _name, _play in LOCAL_CLOUDS.items():
    _register(_name, _play)

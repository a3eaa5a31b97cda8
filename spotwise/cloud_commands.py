"""``spotwise setup|check|gc CLOUD``: one command of each for every registered cloud, with the
same flags (:mod:`spotwise.cloud_options`) and the same output on each."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Annotated, Any

import typer

from spotwise.cloud_options import GIVEN, cloud_options
from spotwise.console import StoreOption, fail, out, plural, say
from spotwise.core import settings
from spotwise.executor.clouds.base import Check, Cloud, CloudOptions
from spotwise.executor.clouds.registry import CLOUDS
from spotwise.executor.errors import ExecutorError
from spotwise.pricing.errors import PricingError

if TYPE_CHECKING:
    from pathlib import Path

    from spotwise.executor.clouds.orphans import Judged

setup_app = typer.Typer(
    help="Prepare a cloud account for spotwise run.", no_args_is_help=True, rich_markup_mode=None
)
check_app = typer.Typer(
    help="Is an account ready for spotwise run?", no_args_is_help=True, rich_markup_mode=None
)
gc_app = typer.Typer(
    help="End cloud resources no job supervises.", no_args_is_help=True, rich_markup_mode=None
)


def _line(text: str) -> None:
    out.print(text, markup=False, highlight=False, soft_wrap=True)


def check_verdict(checks: list[Check]) -> str:
    """The checklist's last line: what to fix, what was not checked, or ready."""
    missing = sum(c.status == "missing" for c in checks)
    if missing:
        return f"{missing} to fix"
    skipped = [c for c in checks if c.status == "skipped"]
    if skipped:
        return _not_checked(skipped)
    unknown = sum(c.status == "unknown" for c in checks)
    return f"ready ({unknown} not known from here: the ? lines)" if unknown else "ready"


def _not_checked(skipped: list[Check]) -> str:
    """The verdict when checks were skipped: which, and the flags that would run them."""
    flags = list(dict.fromkeys(c.flag for c in skipped if c.flag))
    given = f": pass {', '.join(flags)} to check them" if flags else ""
    what = ", ".join(c.what for c in skipped)
    return f"not ready to say: {len(skipped)} not checked ({what}){given}"


def _register(cloud: Cloud) -> None:
    """The three commands of ``cloud``."""
    name = cloud.name

    @setup_app.command(
        name,
        help=f"Once per {name} account: a private bucket, the instances' identity with the "
        f"least permissions ({cloud.docs}), the nodes' network rule. Running it again changes "
        "nothing.",
    )
    @cloud_options(account=True)
    def setup(cloud: CloudOptions = GIVEN) -> None:
        try:
            done = CLOUDS[name].set_up(CLOUDS[name].target(cloud), say=_line)
        except ExecutorError as exc:
            fail(str(exc))
        _line("next: " + "\n".join(done.next_steps))

    @check_app.command(
        name,
        help=f"Credentials, storage, image, identity, quota and every permission spotwise run "
        f"needs on {name}, each with its fix; exit code 1 when something is missing.",
    )
    @cloud_options(account=True)
    def check(
        as_json: Annotated[bool, typer.Option("--json", help="Print the checks as JSON.")] = False,
        pools: Annotated[
            str | None,
            typer.Option(
                "--pools",
                help="The zones spotwise run will use, comma-separated, as run takes them "
                "(default: the cloud's default zones of the region).",
                show_default=False,
            ),
        ] = None,
        cloud: CloudOptions = GIVEN,
    ) -> None:
        zones = tuple(p.strip() for p in (pools or "").split(",") if p.strip())
        checks: list[Check] = []
        try:
            for item in CLOUDS[name].check(CLOUDS[name].target(replace(cloud, zones=zones))):
                checks.append(item)
                if not as_json:
                    _line(item.line())  # as soon as it is decided: some take seconds
        except ExecutorError as exc:
            fail(str(exc))
        if as_json:
            print(json.dumps([asdict(c) for c in checks]))
        else:
            _line(check_verdict(checks))
        if any(c.status in ("missing", "skipped") for c in checks):
            raise typer.Exit(1)

    @gc_app.command(
        name,
        help="End the instances, and delete the secrets, that the ledger proves orphaned: "
        "their job has ended, or its supervisor is gone. Those of a job the ledger has never "
        "seen are listed, and ended only when --job names them.",
    )
    @cloud_options(account=True)
    def gc(
        dry_run: Annotated[
            bool, typer.Option("--dry-run", help="List the orphans, end nothing.")
        ] = False,
        any_host: Annotated[
            bool,
            typer.Option(
                "--any-host",
                help="Also look at what other machines started (ended only when this ledger "
                "proves it orphaned, or --job names it).",
            ),
        ] = False,
        job: Annotated[
            list[str] | None,
            typer.Option(
                "--job",
                help="End this job's instances and secrets although the ledger does not know "
                "it (never a job it shows running under a live supervisor, never with a --store "
                "that has no ledger; repeat for more).",
                show_default=False,
            ),
        ] = None,
        store: StoreOption = None,
        cloud: CloudOptions = GIVEN,
    ) -> None:
        _collect_garbage(CLOUDS[name], cloud, dry_run, any_host, frozenset(job or ()), store)


def _collect_garbage(
    cloud: Cloud,
    options: CloudOptions,
    dry_run: bool,
    any_host: bool,
    named: frozenset[str],
    store: Any,
) -> None:
    """``gc CLOUD``: judge every tagged resource by the ledger; end what it proves orphaned.

    It speaks at once and as it goes: what it looks at (on stderr, once the credentials are
    found: without them the one error line is all there is), then each resource as soon as it
    is judged (and ended), then what it did."""
    from spotwise.executor.clouds.orphans import ledger_verdicts, this_host
    from spotwise.executor.ledger.job_ids import is_job_id, not_a_job_id
    from spotwise.pricing.operational import operational_exists

    for job_id in sorted(named):
        if not is_job_id(job_id):
            fail(not_a_job_id(job_id, "--job"))
    try:
        target = cloud.target(options)
        path = settings.store_path(store)
        if named and not operational_exists(path):
            fail(_no_ledger_for(path, named))
        sweep = cloud.sweep(target)
    except (ExecutorError, PricingError, ValueError) as exc:
        fail(str(exc))
    host = None if any_host else this_host()
    whose = "those of any host" if any_host else f"those {host} started"
    say(f"… gc {cloud.name}: listing {sweep.looking} ({whose}); the ledger at {path} judges each")
    done: Counter[tuple[str, bool]] = Counter()
    try:
        verdicts = ledger_verdicts(path)
        if verdicts is None:
            say(
                f"no ledger at {path}: no job can be proven orphaned, so nothing is ended that "
                "--job does not name (is this the --store the jobs ran with?)"
            )
        judged = sweep.judged(verdicts, host, named=named, store_path=path)
        for item in judged if dry_run else sweep.ended(judged):
            _line(_judged_line(item, dry_run))
            done[item.kind, item.end] += 1
    except (ExecutorError, PricingError, ValueError) as exc:
        fail(str(exc))
    where = getattr(target, "home_region", "") + ("" if any_host else f" started from {host}")
    _line(_gc_summary(done, dry_run, where))


def _gc_summary(done: Counter[tuple[str, bool]], dry_run: bool, where: str) -> str:
    """gc's last line: what it ended (or would), and how many it left."""
    left = done["instance", False] + done["secret", False]
    kept = f"; {left} left (each line says why)" if left else ""
    if not done["instance", True] and not done["secret", True]:
        return f"no orphaned Spotwise instance or secret in {where}{kept}"
    instances = plural(done["instance", True], "instance")
    secrets = plural(done["secret", True], "secret")
    if dry_run:
        return f"to end (--dry-run: nothing ended): {instances} and {secrets} in {where}{kept}"
    return f"ended {instances} and deleted {secrets} in {where}{kept}"


def _no_ledger_for(path: Path, named: frozenset[str]) -> str:
    """The refusal of ``--job`` against a store with no ledger: it would hide the jobs' live
    supervisors."""
    what = "does not exist" if not path.exists() else "has no ledger"
    return (
        f"--job {', '.join(sorted(named))}: the store {path} {what}, so nothing shows whether "
        "a supervisor still runs the job (a wrong --store hides them); give the --store the "
        "jobs ran with (nothing was ended)"
    )


def _judged_line(item: Judged, dry_run: bool) -> str:
    """What gc did, or would do, with one resource, and why."""
    if item.kind == "instance":
        done = ("would end" if dry_run else "ended") if item.end else "left"
        return f"{done} {item.resource} (job {item.job_id or '?'}): {item.why}"
    done = ("would delete" if dry_run else "deleted") if item.end else "left"
    return f"{done} secret {item.resource}: {item.why}"


for _cloud in CLOUDS.values():
    _register(_cloud)

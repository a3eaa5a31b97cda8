"""``spotwise serve``, the policy service, and ``spotwise bench api``, its load test."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from spotwise.console import (
    ModelsOption,
    TracesOption,
    err,
    fail,
    free_loopback_port,
    out,
    say,
    traces_folder,
)
from spotwise.core import settings
from spotwise.core.clock import SYSTEM_CLOCK, Clock
from spotwise.policy.errors import PolicyError
from spotwise.policy.service.admission import per_client_limit

LOOPBACK = ("127.0.0.1", "::1", "localhost")


def _token(token_file: Path | None) -> str | None:
    if token_file is not None:
        try:
            mode = token_file.stat().st_mode
            token = token_file.read_text().strip() or None
        except OSError as exc:
            fail(f"{token_file}: cannot read the token file ({exc})")
        if mode & 0o077:
            err.print(
                f"warning: {token_file} is readable by group or others (mode "
                f"{mode & 0o777:o}): `chmod 600 {token_file}`"
            )
        return token
    return settings.current().api_token or None


def serve(
    host: Annotated[str, typer.Option("--host", help="Address to bind.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port to listen on.")
    ] = 8000,
    traces: TracesOption = None,
    token_file: Annotated[
        Path | None,
        typer.Option(
            "--token-file",
            help="File holding the bearer token (else $SPOTWISE_API_TOKEN).",
            show_default=False,
        ),
    ] = None,
    workers: Annotated[int, typer.Option("--workers", min=1, help="uvicorn workers.")] = 1,
    models: ModelsOption = None,
    max_in_flight: Annotated[
        int | None,
        typer.Option(
            "--max-in-flight",
            min=1,
            help="Requests served at once per worker; past it, 503 with Retry-After at once "
            "(default: $SPOTWISE_API_MAX_IN_FLIGHT, else 4).",
            show_default=False,
        ),
    ] = None,
    max_per_client: Annotated[
        int | None,
        typer.Option(
            "--max-per-client",
            min=1,
            help="Of those, the most one client (peer address) may hold; past it, 503 "
            "(default: $SPOTWISE_API_MAX_PER_CLIENT, else all but a quarter of them).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve the policy API (decisions, pool ranking, risk forecasts) with uvicorn. A request
    without the token gets 401 before it takes a place; one whose body is not in within 5 s
    gets 408; /healthz says `saturated` while every place is taken."""
    import uvicorn

    from spotwise.policy.rl.catalog import ModelCatalog
    from spotwise.policy.traces import load_traces

    token = _token(token_file)
    if host not in LOOPBACK and token is None:
        fail(
            f"refusing to serve on {host} without a token: set SPOTWISE_API_TOKEN or pass "
            "--token-file (or bind 127.0.0.1)"
        )
    folder = traces_folder(traces)
    try:
        load_traces(folder)
        if models is not None:
            ModelCatalog(models)  # refuse a bad folder here, before the workers start
    except PolicyError as exc:
        fail(str(exc))
    os.environ["SPOTWISE_API_TRACES"] = str(folder)
    if models is not None:
        os.environ["SPOTWISE_API_MODELS"] = str(models.resolve())
    else:
        os.environ.pop("SPOTWISE_API_MODELS", None)
    if token:
        os.environ["SPOTWISE_API_TOKEN"] = token
    else:
        os.environ.pop("SPOTWISE_API_TOKEN", None)
    if max_in_flight is not None:
        os.environ["SPOTWISE_API_MAX_IN_FLIGHT"] = str(max_in_flight)
    if max_per_client is not None:
        os.environ["SPOTWISE_API_MAX_PER_CLIENT"] = str(max_per_client)
    limit = settings.current().api_max_in_flight
    per_client = per_client_limit(limit, settings.current().api_max_per_client)
    err.print(
        f"policy API on http://{host}:{port} (docs at /docs, auth: {bool(token)}, "
        f"{limit} requests at once per worker, {per_client} from one client)"
    )
    uvicorn.run(
        "spotwise.policy.service.api:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="warning",
        # the per-client limit counts the peer's address, never one a client writes in a
        # header (uvicorn believes X-Forwarded-For from 127.0.0.1 by default)
        proxy_headers=False,
    )


def bench_api(
    seconds: Annotated[
        float, typer.Option("--seconds", min=1.0, help="Length of each run.")
    ] = 10.0,
    overload: Annotated[
        float, typer.Option("--overload", min=1.0, help="The second run offers this × capacity.")
    ] = 2.0,
    traces: TracesOption = None,
    workers: Annotated[int, typer.Option("--workers", min=1, help="Server workers.")] = 1,
    max_in_flight: Annotated[
        int | None,
        typer.Option("--max-in-flight", min=1, help="The server's admission limit per worker."),
    ] = None,
    load_core: Annotated[
        int | None,
        typer.Option(
            "--load-core",
            min=0,
            help="Pin the load generator to this core and the server to the others, so the "
            "figures are the server's (default: the last core, when there are two or more).",
            show_default=False,
        ),
    ] = None,
    start_timeout: Annotated[
        float,
        typer.Option(
            "--start-timeout",
            min=1.0,
            help="Seconds the server may take to answer its health check (it says how it is "
            "doing every 10 s meanwhile; a server that exits is reported at once).",
        ),
    ] = 300.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
) -> None:
    """Start the API on 127.0.0.1, find its capacity (the most it serves, offering more until
    it sheds), then offer 1× and --overload × that: served rate and latency, shed requests
    (503) and their latency, other answers (errors) and requests that got no answer at all
    (no_answer). The load comes from one client, so the per-client limit is lifted. A server
    that exits is reported with its exit code and the last lines of its stderr; one still
    starting after --start-timeout, with how long it ran and the CPU time it used."""
    folder = traces_folder(traces)
    pools = _pool_names(folder)
    load_core, server_cores = _split_cores(load_core)
    limit = max_in_flight or settings.current().api_max_in_flight
    token, port = secrets.token_hex(16), free_loopback_port()
    env = {
        **os.environ,
        "SPOTWISE_API_TOKEN": token,
        "SPOTWISE_API_MAX_IN_FLIGHT": str(limit),
        "SPOTWISE_API_MAX_PER_CLIENT": str(limit),  # one load generator: every place is its
    }
    command = [sys.executable, "-m", "spotwise", "serve", "--port", str(port)]
    command += ["--traces", str(folder), "--workers", str(workers)]
    with tempfile.TemporaryDirectory(prefix="spotwise-bench-api-") as scratch:
        log = Path(scratch) / "server.stderr"
        with log.open("wb") as stderr:
            server = subprocess.Popen(command, env=env, stderr=stderr)
        if load_core is not None:
            os.sched_setaffinity(server.pid, server_cores)  # its workers, spawned later, inherit
            os.sched_setaffinity(0, {load_core})
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_until_up(base, server, log, start_timeout)
            rate, runs = _load_runs(base, token, pools, seconds=seconds, overload=overload)
            alive = server.poll() is None
            if not alive:
                say(f"warning: {_ended(server, log)}")
        finally:
            server.terminate()
            server.wait(10)
    report = {
        "capacity_rps": round(rate, 1),
        "runs": runs,
        "server_stayed_up": alive,
        "workers": workers,
        "max_in_flight": limit,
        "max_per_client": limit,
        "load_core": load_core,
        "server_cores": server_cores,
    }
    if as_json:
        out.print_json(json.dumps(report))
    else:
        out.print(report)


def _pool_names(folder: Path) -> list[str]:
    """The pools of the traces in ``folder`` (none there: one line and exit)."""
    from spotwise.policy.traces import load_traces

    try:
        return list(load_traces(folder).names)
    except PolicyError as exc:
        fail(str(exc))


def _split_cores(load_core: int | None) -> tuple[int | None, list[int]]:
    """The load generator's core (default: the last, when there are two or more; None: not
    pinned) and the server's cores; a core that is not this process's: one line and exit."""
    cores = sorted(os.sched_getaffinity(0))
    if load_core is None and len(cores) >= 2:
        load_core = cores[-1]
    if load_core is not None and (load_core not in cores or len(cores) < 2):
        fail(f"--load-core {load_core}: pick one of {cores} (two or more are needed)")
    server_cores = [c for c in cores if c != load_core] if load_core is not None else cores
    return load_core, server_cores


START_REPORT_EVERY_S = 10.0
"""How often ``bench api`` says how a server still starting is doing."""
STDERR_LINES = 15
"""The last lines of a server's stderr shown when it exits."""


def _wait_until_up(
    base: str,
    server: subprocess.Popen[bytes],
    stderr: Path,
    timeout_s: float,
    clock: Clock = SYSTEM_CLOCK,
) -> None:
    """Return once the server at ``base`` answers its health check, saying every
    :data:`START_REPORT_EVERY_S` how long it has taken. One line and exit if it ends first
    (its exit code and the end of ``stderr``, the file it writes to), or if it is still
    starting after ``timeout_s`` (how long, and the CPU time it used: a busy machine, not a
    crash)."""
    import httpx

    began = clock.monotonic()
    said = began
    while True:
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if server.poll() is not None:
            fail(_ended(server, stderr))
        now = clock.monotonic()
        if now - began > timeout_s:
            fail(
                f"the API server (pid {server.pid}) is still starting after {now - began:.0f} s "
                f"({_cpu_seconds(server.pid):.1f} CPU-s used) and has not answered /healthz: "
                "a busy machine is slow, not broken; raise --start-timeout to give it longer"
            )
        if now - said >= START_REPORT_EVERY_S:
            said = now
            say(
                f"  the API server (pid {server.pid}) is starting: {now - began:.0f} s, "
                f"{_cpu_seconds(server.pid):.1f} CPU-s so far"
            )
        clock.sleep(0.2)


def _ended(server: subprocess.Popen[bytes], stderr: Path) -> str:
    """What to say of a server that has exited: its exit code and its stderr's last lines."""
    code = server.wait()
    how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
    lines = stderr.read_text(errors="replace").splitlines()[-STDERR_LINES:]
    tail = "\n".join(f"  | {line}" for line in lines) if lines else "  (nothing on stderr)"
    return f"the API server exited ({how}); the last lines of its stderr:\n{tail}"


def _cpu_seconds(pid: int) -> float:
    """CPU seconds process ``pid`` and its children have used (0 once it is gone)."""
    import psutil

    try:
        process = psutil.Process(pid)
        times = [process.cpu_times()]
        times += [child.cpu_times() for child in process.children(recursive=True)]
    except psutil.Error:
        return 0.0
    return sum(t.user + t.system for t in times)


def _load_runs(
    base: str, token: str, pools: list[str], *, seconds: float, overload: float
) -> tuple[float, dict[str, object]]:
    """After a warm-up, the server's capacity (each step of its search said on stderr), then
    a run at 1× and at ``overload`` × it, by multiple (``1x``, ``2x``)."""
    from spotwise.policy.service.loadtest import decision_bodies, find_capacity, load_test

    runs: dict[str, object] = {}
    bodies = decision_bodies(pools, 256)
    load_test(base, token, bodies, rps=100, seconds=2.0)  # warm-up
    err.print("measuring capacity: offering more until it sheds")
    rate, search = find_capacity(base, token, bodies)
    for step in search:
        err.print(
            f"  offered {step.offered_rps:.0f}/s: served {step.served_rps:.0f}/s, shed {step.shed}",
            highlight=False,
        )
    for multiple in (1.0, overload):
        err.print(f"offering {multiple:g}× capacity = {multiple * rate:.0f} requests/s")
        run = load_test(base, token, bodies, rps=multiple * rate, seconds=seconds)
        runs[f"{multiple:g}x"] = run.to_dict()
    return rate, runs

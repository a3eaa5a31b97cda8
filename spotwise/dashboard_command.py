"""``spotwise dashboard``: the Streamlit app on the configured store."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from spotwise.console import StoreOption, err, open_store
from spotwise.core import settings

APP = Path(__file__).parent / "dashboard" / "app.py"


def dashboard(
    port: Annotated[
        int, typer.Option("--port", min=1, max=65535, help="Port to listen on.")
    ] = 8501,
    host: Annotated[
        str, typer.Option("--host", help="Address to bind (loopback by default).")
    ] = "127.0.0.1",
    store: StoreOption = None,
) -> None:
    """Open the cost dashboard (Market, Risk, Plan, Policies, Jobs) on the store."""
    path = settings.store_path(store)
    if path.exists():
        with open_store(store, read_only=True):  # brings an older store's tables up to date
            pass
    env = {**os.environ, settings.STORE_ENV: str(path)}
    err.print(f"dashboard on http://{host}:{port} (store {env[settings.STORE_ENV]})")
    command = [sys.executable, "-m", "streamlit", "run", str(APP)]
    command += ["--server.port", str(port), "--server.address", host, "--server.headless", "true"]
    command += ["--browser.gatherUsageStats", "false"]
    sys.stdout.flush()
    os.execve(sys.executable, command, env)  # streamlit takes over this process (and its PID)

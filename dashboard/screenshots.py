"""Screenshots of every dashboard page in headless Chromium, against a server on 127.0.0.1.

    python -m spotwise.dashboard.screenshots --out docs/screenshots [--store PATH]

Each page is loaded at its own URL, the script waits until its main chart is drawn and no
spinner is left, then saves a PNG.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from spotwise.core.clock import SYSTEM_CLOCK

PAGES = {
    "market": "Market",
    "risk": "Preemption risk",
    "plan": "Plan a job",
    "policies": "Policies against the omniscient bound",
    "jobs": "Jobs",
}
"""Each page by its URL path, with its heading."""
CHART = "canvas, svg.marks"
SPINNER = '[data-testid="stSpinner"]'

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    """The Chromium binary on PATH, if any."""
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


@contextmanager
def dashboard_server(store: Path) -> Iterator[str]:
    """``spotwise dashboard`` on a free loopback port for ``store``; yields its URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "spotwise", "dashboard", "--port", str(port)]
    env = {**os.environ, "SPOTWISE_STORE": str(store)}
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = SYSTEM_CLOCK.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/_stcore/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if server.poll() is not None or SYSTEM_CLOCK.monotonic() > deadline:
                problem = server.stderr.read() if server.stderr else b""
                raise RuntimeError(f"the dashboard did not start: {problem!r}")
            SYSTEM_CLOCK.sleep(0.3)
        yield url
    finally:
        server.terminate()
        server.wait(10)


def take(url: str, out: Path, chromium: str) -> dict[str, Path]:
    """One full-page PNG per page, each taken once its main chart is drawn."""
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    shots = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(viewport={"width": 1400, "height": 2000})
        for name in PAGES:
            open_page(page, f"{url}/{name}")
            target = out / f"{name}.png"
            page.screenshot(path=str(target), full_page=True)
            shots[name] = target
        browser.close()
    return shots


def open_page(page: Any, url: str) -> None:
    """Load ``url`` in the Playwright ``page`` and wait until its main chart is drawn and no
    spinner is left (a backtest, a plan)."""
    page.goto(url)
    page.wait_for_selector(CHART, timeout=90_000)
    page.wait_for_selector(SPINNER, state="detached", timeout=180_000)
    page.wait_for_timeout(1500)  # let the charts finish their layout


def main() -> int:
    """Take the screenshots into ``--out``; 1 when there is no Chromium."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    parser.add_argument("--store", type=Path, default=None)
    args = parser.parse_args()
    chromium = find_chromium()
    if chromium is None:
        print("no Chromium on PATH (Debian: apt-get install chromium); no screenshots taken")
        return 1
    from spotwise.core import settings

    with dashboard_server(settings.store_path(args.store)) as url:
        for name, path in take(url, args.out, chromium).items():
            print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Every page in headless Chromium against a real server on 127.0.0.1: at its own URL, drawn
whole (no table or command cut at the right edge), saved as screenshots."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spotwise.dashboard.screenshots import (
    PAGES,
    dashboard_server,
    find_chromium,
    open_page,
    take,
)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("dashboard-store")]  # one store

CUT = """() => [
    ...[...document.querySelectorAll('[data-testid="stDataFrame"] .dvn-scroller')].map(
        (e) => ['table', e.scrollWidth - e.clientWidth, e.closest('[data-testid="stDataFrame"]')
            .innerText.slice(0, 60)]),
    ...[...document.querySelectorAll('[data-testid="stCode"] pre')].map(
        (e) => ['code', e.scrollWidth - e.clientWidth, e.innerText.slice(0, 60)]),
].filter(([, over]) => over > 1)"""
"""The tables and code blocks wider than their box (what a reader must scroll sideways for)."""


@pytest.fixture(scope="module")
def chromium() -> str:
    found = find_chromium()
    if found is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium); no screenshots")
    pytest.importorskip("playwright", reason="playwright drives Chromium; pip install playwright")
    return found


@pytest.fixture
def browser(filled_store: Path, chromium: str) -> Iterator[tuple[str, Any]]:
    """The dashboard on the filled store, and a 1400 px wide page of headless Chromium."""
    from playwright.sync_api import sync_playwright

    with dashboard_server(filled_store) as url, sync_playwright() as p:
        launched = p.chromium.launch(
            executable_path=chromium, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        yield url, launched.new_page(viewport={"width": 1400, "height": 2000})
        launched.close()


def test_every_page_renders_in_chromium_with_its_chart(
    filled_store: Path, chromium: str, tmp_path: Path
) -> None:
    with dashboard_server(filled_store) as url:
        shots = take(url, tmp_path / "shots", chromium)
    assert set(shots) == set(PAGES)
    for path in shots.values():
        assert path.stat().st_size > 30_000  # a drawn page, not a blank skeleton


def test_each_page_opens_at_its_own_url_and_nothing_is_cut_at_the_right_edge(
    browser: tuple[str, Any],
) -> None:
    """`/market` once said "Page not found"; the Jobs table, the side-by-side prices, the
    plan's table and its "Run it" command ran past the page's right edge."""
    url, page = browser
    for name, heading in PAGES.items():
        open_page(page, f"{url}/{name}")
        assert page.url == f"{url}/{name}"
        headings = page.locator("h1, h2").all_inner_texts()
        assert heading in headings and "Page not found" not in headings, (name, headings)
        assert page.evaluate(CUT) == [], name


def test_the_root_url_opens_the_market_page_at_its_own_url(browser: tuple[str, Any]) -> None:
    url, page = browser
    open_page(page, f"{url}/")
    assert page.url == f"{url}/market"
    assert page.locator("h2").first.inner_text() == "Market"

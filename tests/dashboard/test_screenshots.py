"""Every page in headless Chromium against a real server on 127.0.0.1, saved as screenshots."""

from __future__ import annotations

from pathlib import Path

import pytest

from spotwise.dashboard.screenshots import PAGES, dashboard_server, find_chromium, take


@pytest.mark.slow
@pytest.mark.xdist_group("dashboard-store")  # the same worker as the pages: one store
def test_every_page_renders_in_chromium_with_its_chart(filled_store: Path, tmp_path: Path) -> None:
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium); no screenshots")
    pytest.importorskip("playwright", reason="playwright drives Chromium; pip install playwright")
    with dashboard_server(filled_store) as url:
        shots = take(url, tmp_path / "shots", chromium)
    assert set(shots) == set(PAGES)
    for path in shots.values():
        assert path.stat().st_size > 30_000  # a drawn page, not a blank skeleton

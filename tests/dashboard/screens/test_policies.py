"""The policies page, run by Streamlit's AppTest."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.dashboard.pages import charts, fresh_cache, page  # noqa: F401 (fresh_cache: autouse)

# The session fixture builds a store with forecasts (~30 s): one xdist worker builds it once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("dashboard-store")]


def test_the_policy_bench_runs_from_the_page_with_a_progress_bar(
    tmp_path: Path, filled_store: Path, use_store
) -> None:
    target = tmp_path / "market.duckdb"
    target.write_bytes(filled_store.read_bytes())  # same data, no saved bench
    use_store(target)
    app = page("policies")
    app.run()
    assert charts(app) == 0 and "No bench result" in app.info[0].value
    app.radio[0].set_value("multi").run()
    app.multiselect[0].set_value(["greedy"]).run()
    app.button[0].click().run()
    assert not app.exception
    assert charts(app) == 1


def test_a_kept_bench_file_that_is_no_summary_is_said_not_drawn(
    tmp_path: Path, filled_store: Path, use_store
) -> None:
    target = tmp_path / "market.duckdb"
    target.write_bytes(filled_store.read_bytes())
    (tmp_path / "market.bench-policy-single.json").write_text('{"zones": "single"}')
    use_store(target)
    app = page("policies")
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    assert "market.bench-policy-single.json: results must map" in app.error[0].value
    assert charts(app) == 0 and "No bench result" in app.info[0].value

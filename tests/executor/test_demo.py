"""`spotwise demo --json`: the main job end to end on the bundled data."""

from __future__ import annotations

import json

import pytest

from tests.conftest import CliRun, summary_json


@pytest.mark.e2e
@pytest.mark.slow
def test_demo_trains_through_preemptions_to_on_demand_and_resumes_bit_exactly(
    cli: CliRun,
) -> None:
    result = cli("demo", "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["completed"] is True
    # The replay runs on the job's steps, so the course is the same on any machine.
    assert (report["preemptions"], report["migrations"]) == (3, 0)
    assert report["ledger"]["placements"] == [
        "spot in us-east-1f_v100_1",
        "spot in us-east-1c_v100_1",
        "spot in us-east-1f_v100_1",
        "on-demand",
    ]
    # every spot launch bid the price above which moving pays, at most on demand's
    assert [pool for pool, _ in report["ledger"]["bids"]] == [
        "us-east-1f_v100_1",
        "us-east-1c_v100_1",
        "us-east-1f_v100_1",
    ]
    assert all(0.918 <= bid <= 3.06 for _, bid in report["ledger"]["bids"])
    assert report["bitwise_identical"] is True
    assert report["ledger"]["simulated"] is True  # its dollars are a replay's, and say so
    assert "36 cloud s a training step" in report["ledger"]["simulation"]
    assert 0 < report["cost_usd"] < report["on_demand_cost_usd"]
    # each pool's spot price is the store's, with its source and time
    spot = report["ledger"]["prices"]["spot"]
    assert all(q["source"].startswith("store: ") and q["as_of"] for q in spot.values())
    summary = summary_json(cli)  # it loaded the bundled data and fitted forecasts
    forecasts = summary.get("operational", summary)["tables"]["forecasts"]  # (PostgreSQL's)
    assert summary["tables"]["prices"] > 20_000 and forecasts > 0
    listed = cli("jobs", "list", "--json")
    assert report["job_id"] in [j["job_id"] for j in json.loads(listed.stdout)]


@pytest.mark.e2e
@pytest.mark.slow
def test_ctrl_c_during_the_reference_run_stops_the_demo_and_its_training(store_file) -> None:
    """Ctrl-C to the demo's process group while the reference run trains: the demo stops
    (130, one line) and leaves no training behind, even started where SIGINT is ignored (a
    shell's background job), as the supervised run already did."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import psutil

    process = subprocess.Popen(
        [sys.executable, "-m", "spotwise", "demo"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "SPOTWISE_STORE": str(store_file), "COLUMNS": "200"},
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert process.stderr is not None
    lines: list[str] = []
    children: list[psutil.Process] = []
    try:
        for line in process.stderr:
            lines.append(line)
            if "reference run" in line:
                break
        deadline = time.monotonic() + 60
        while not children and time.monotonic() < deadline:  # the training has started
            children = psutil.Process(process.pid).children(recursive=True)
            time.sleep(0.1)
        assert children, "".join(lines)
        os.killpg(process.pid, signal.SIGINT)
        _, rest = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for child in children:
            if child.is_running():
                child.kill()
    text = "".join(lines) + rest
    assert process.returncode == 130, text[-2000:]
    assert "demo stopped by SIGINT" in text and "supervised run" not in text
    assert "Traceback" not in rest
    _, alive = psutil.wait_procs(children, timeout=10)
    assert not alive

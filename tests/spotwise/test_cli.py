"""The `spotwise` command end to end, as a subprocess on the bundled data."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA, CliRun


@pytest.fixture
def cli(cli_in_process: CliRun) -> CliRun:
    """Commands whose arguments, messages and output are under test run in process."""
    return cli_in_process


def test_store_flag_on_the_command_line_is_used(cli: CliRun, tmp_path: Path) -> None:
    other = tmp_path / "other.duckdb"
    result = cli("data", "load", str(DATA / "advisor"), "--store", str(other))
    assert result.returncode == 0, result.stderr
    summary = json.loads(cli("data", "summary", "--json", "--store", str(other)).stdout)
    assert set(summary["sources"]) == {"spot-advisor"}


def test_the_cli_starts_without_the_heavy_libraries() -> None:
    """`spotwise --help` took 10-16 s and 1.1 GB when the CLI imported torch and
    scikit-learn at start-up; they (and pandas) now load in the commands that use them."""
    code = (
        "import sys, json, spotwise.cli, executor; "
        "print(json.dumps(sorted(m for m in ('torch', 'sklearn', 'statsmodels', 'streamlit', "
        "'stable_baselines3', 'pandas', 'scipy') if m in sys.modules)))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_version_prints_the_installed_version_without_loading_a_heavy_library() -> None:
    from importlib.metadata import version

    from spotwise.startup_bench import HEAVY

    code = (
        "import json, sys\n"
        "from spotwise.cli import main\n"
        "sys.argv = ['spotwise', '--version']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as done:\n"
        f"    heavy = [m for m in {list(HEAVY)!r} if m in sys.modules]\n"
        "    print(json.dumps({'code': done.code, 'heavy': heavy}))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    printed, probe = result.stdout.splitlines()
    assert printed == f"spotwise {version('spotwise')}"
    assert json.loads(probe) == {"code": 0, "heavy": []}

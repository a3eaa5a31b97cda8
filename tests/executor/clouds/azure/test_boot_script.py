"""The Azure VM's custom data: every value quoted, valid bash, nothing from a public index."""

from __future__ import annotations

import subprocess

from spotwise.executor.clouds.azure.boot_script import boot_script
from spotwise.executor.clouds.code_bundle import ShippedCode

CODE = ShippedCode(
    "spotwise/code/aa11/workdir.tar.gz", "spotwise/code/bb22/spotwise-0.1.0-py3-none-any.whl"
)


def test_the_boot_script_quotes_what_a_flag_names_and_is_valid_bash() -> None:
    hostile = ["python", "train.py", "--name", "$(touch /tmp/pwned)"]
    script = boot_script(
        hostile,
        {"SPOTWISE_POOL": "1; rm -rf /", "SPOTWISE_STORE": "/home/me/market.duckdb"},
        code=CODE,
        account="acct",
        container="c'x",
        prefix="spotwise/jobs/j1",
        instance="sw-j1-abc",
        setup=["x; rm -rf /"],
        vault="https://v.vault.azure.net/",
        secret_names={"TOKEN": "spotwise-j1-token"},
    )
    assert "--name '$(touch /tmp/pwned)'" in script
    assert "--setup 'x; rm -rf /'" in script
    assert "SPOTWISE_POOL='1; rm -rf /'" in script and "/home/me" not in script
    assert "CONTAINER='c'\"'\"'x'" in script
    assert "pip install spotwise" not in script  # nothing by name from a public index
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0

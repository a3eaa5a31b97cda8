"""What an image's name says about its Python: a distribution's python3, or the version a deep
learning image's name or description gives its environment (that one wins)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spotwise.executor.clouds.boot_script import MIN_PYTHON
from spotwise.executor.clouds.image_python import python_note

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("name", "note"),
    [
        ("microsoft-dsvm:ubuntu-hpc:2204", (True, "Ubuntu 22.04's python3 is 3.10")),
        ("microsoft-dsvm:ubuntu-hpc:2404", (False, "Ubuntu 24.04's python3 is 3.12")),
        ("Canonical:0001-com-ubuntu-server-jammy:22_04-lts-gen2", (True, "Ubuntu 22.04's")),
        ("Canonical:ubuntu-24_04-lts:server", (False, "Ubuntu 24.04's python3 is 3.12")),
        ("ubuntu/images/hvm-ssd/ubuntu-focal-20.04-amd64-server", (True, "python3 is 3.8")),
        ("al2023-ami-2023.6.20241121.0-kernel-6.1-x86_64", (True, "Amazon Linux 2023's")),
        ("debian-12-bookworm-v20241112", (False, "Debian 12's python3 is 3.11")),
        ("pytorch-2-4-cu124-ubuntu-2204-py310", (True, "says Python 3.10")),
        ("common-cu124-debian-11-py311 Python 3.11", (False, "says Python 3.11")),
    ],
)
def test_a_name_says_its_python(name: str, note: tuple[bool, str]) -> None:
    found = python_note(name)
    assert found is not None and found[0] == note[0] and note[1] in found[1], found


def test_a_name_that_says_nothing_is_not_judged() -> None:
    assert python_note("my-team-image-v7") is None


def test_the_floor_is_the_projects_requires_python() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    (floor,) = re.findall(r'requires-python = ">=(\d+\.\d+)"', text)
    assert ".".join(map(str, MIN_PYTHON)) == floor

"""What an image's name says about its Python, for ``spotwise check CLOUD``: the boot script
(:mod:`executor.clouds.boot_script`) needs an interpreter of Python 3.11+ on the image, the
user's ``--python`` or one it finds (:data:`~executor.clouds.boot_script.IMAGE_PYTHONS`, then
``python3``). A distribution's release fixes its ``python3``; a deep learning image's name often
says the Python of its torch environment (GCP's ``...-py310`` families). Names only suggest:
an image someone built may have added an interpreter, which ``--python`` then names.
"""

from __future__ import annotations

import re

from spotwise.executor.clouds.boot_script import MIN_PYTHON

FLOOR = ".".join(map(str, MIN_PYTHON))
"""The oldest Python the job's interpreter may be, as text (``3.11``)."""
RELEASES: tuple[tuple[re.Pattern[str], str, tuple[int, int]], ...] = (
    (re.compile(r"\bamzn2-ami|\bAmazon Linux 2 AMI\b"), "Amazon Linux 2", (3, 7)),
    (re.compile(r"\bal2023-ami|\bAmazon Linux 2023\b"), "Amazon Linux 2023", (3, 9)),
    (re.compile(r"\bdebian-10\b|\bbuster\b", re.I), "Debian 10", (3, 7)),
    (re.compile(r"\bdebian-11\b|\bbullseye\b", re.I), "Debian 11", (3, 9)),
    (re.compile(r"\bdebian-12\b|\bbookworm\b", re.I), "Debian 12", (3, 11)),
)
"""Distribution releases (by image name) and their ``python3``, besides Ubuntu's."""
UBUNTU = re.compile(
    r"ubuntu[-/ _:]?(?:[a-z]+[-:])?(\d{2})[._]?(\d{2})(?!\d)|Ubuntu,? (\d{2})\.(\d{2})"
    r"|\b(bionic|focal|jammy|noble)\b",
    re.I,
)
UBUNTU_NAMES = {"bionic": (18, 4), "focal": (20, 4), "jammy": (22, 4), "noble": (24, 4)}
UBUNTU_PYTHON3 = {
    (18, 4): (3, 6),
    (20, 4): (3, 8),
    (22, 4): (3, 10),
    (23, 4): (3, 11),
    (24, 4): (3, 12),
}
"""Ubuntu releases' ``python3`` (a release between two has the earlier's or newer)."""
TAGGED = re.compile(r"(?<![a-z0-9])py(3)(\d{1,2})(?!\d)|\bPython ?(3)\.(\d{1,2})\b", re.I)
"""A Python version in an image's name or description (``pytorch-2-4-cu124-ubuntu-2204-py310``,
``..., Debian 11, Python 3.10, ...``)."""


def release_python(text: str) -> tuple[str, tuple[int, int]] | None:
    """The distribution an image named ``text`` is and its ``python3`` (None: not known)."""
    match = UBUNTU.search(text)
    if match:
        if match.group(5):
            major, minor = UBUNTU_NAMES[match.group(5).lower()]
        else:
            pair = match.group(1, 2) if match.group(1) else match.group(3, 4)
            major, minor = (int(g) for g in pair)
        older = [v for (release, v) in UBUNTU_PYTHON3.items() if release <= (major, minor)]
        return f"Ubuntu {major}.{minor:02d}", older[-1] if older else (3, 5)
    return next(((name, v) for pattern, name, v in RELEASES if pattern.search(text)), None)


def tagged_python(text: str) -> tuple[int, int] | None:
    """The Python version an image's name says (``py310``: 3.10; None: it says none)."""
    match = TAGGED.search(text)
    if match is None:
        return None
    major, minor = match.group(1, 2) if match.group(1) else match.group(3, 4)
    return int(major), int(minor)


def python_note(text: str) -> tuple[bool, str] | None:
    """What an image named ``text`` says of its Python: (too old, why), or None when its name
    says nothing. A version in its name (its torch environment's) wins over its release's
    ``python3``."""
    tagged = tagged_python(text)
    if tagged is not None:
        version = f"{tagged[0]}.{tagged[1]}"
        if tagged < MIN_PYTHON:
            return True, f"its name or description says Python {version} (Spotwise needs {FLOOR}+)"
        return False, f"its name or description says Python {version}"
    found = release_python(text)
    if found is None:
        return None
    release, python3 = found
    version = f"{python3[0]}.{python3[1]}"
    if python3 < MIN_PYTHON:
        return True, f"{release}'s python3 is {version} (Spotwise needs {FLOOR}+)"
    return False, f"{release}'s python3 is {version}"

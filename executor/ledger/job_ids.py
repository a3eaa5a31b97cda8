"""The one rule of a job id (what :func:`~spotwise.executor.ledger.ledger.new_job_id` mints, and
older stores hold): letters, digits, ``_`` and ``-``, 1 to 64. An id names files, cloud tags,
labels and bucket prefixes, so any id a user types is checked by it first."""

from __future__ import annotations

import re

from spotwise.core.echo import echo

JOB_ID = re.compile(r"[0-9A-Za-z_-]{1,64}")


def is_job_id(text: str) -> bool:
    """Whether ``text`` could be a job's id."""
    return JOB_ID.fullmatch(text) is not None


def not_a_job_id(text: str, where: str) -> str:
    """The one line refusing ``text`` given as a job id in ``where`` (a flag)."""
    return (
        f"{where} {echo(text)} is not a job id (1-64 letters, digits, _ and -): "
        "`spotwise jobs list` shows them"
    )

"""The one rule of a job id."""

from __future__ import annotations

from spotwise.executor.ledger.job_ids import is_job_id, not_a_job_id
from spotwise.executor.ledger.ledger import new_job_id


def test_a_minted_id_is_a_job_id_and_a_path_or_a_space_is_not() -> None:
    assert is_job_id(new_job_id())
    assert is_job_id("nightly_eval-2")
    for text in ("", "../../x", "a b", "a/b", "x" * 65, "ä"):
        assert not is_job_id(text), text


def test_the_refusal_names_the_flag_and_cuts_a_long_id() -> None:
    line = not_a_job_id("x" * 100_000, "--job")
    assert line.startswith("--job 'xxx") and "(100,000 characters)" in line
    assert line.endswith("`spotwise jobs list` shows them")

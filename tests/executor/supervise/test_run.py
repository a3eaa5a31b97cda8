"""What ``spotwise run`` makes of its command line."""

from __future__ import annotations

from spotwise.executor.supervise.run import job_name


def test_a_job_is_named_after_its_script() -> None:
    assert job_name(["python", "train.py", "--epochs", "3"]) == "train.py"
    assert job_name(["python3", "-m", "pkg.train"]) == "pkg.train"
    assert job_name(["torchrun", "--nproc-per-node", "2", "/src/train.py"]) == "train.py"
    assert job_name(["./run-me"]) == "run-me"

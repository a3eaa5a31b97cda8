"""GCP's garbage collection: the host label a VM is found by."""

from __future__ import annotations

from spotwise.executor.clouds.gcp.gc import host_label


def test_a_host_name_becomes_a_label_one_to_one() -> None:
    import re

    hosts = ["Build-Box.local", "build-box-local", "build_box", "a" * 80, "a" * 81, "ünï"]
    labels = [host_label(h) for h in hosts]
    assert len(set(labels)) == len(hosts)
    assert all(re.fullmatch(r"[-_a-z0-9]{0,63}", label) for label in labels)
    assert host_label("gpu-box-7") == "gpu-box-7"

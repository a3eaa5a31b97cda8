"""The local cluster as a command: it serves until SIGTERM, says the KUBECONFIG to use, and its
spot nodes are the platform's (an AKS one tainted as AKS taints them)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("kubernetes_validate")

from spotwise.executor.clouds.kubernetes.fake.local_cluster import spot_node


def test_the_command_serves_until_sigterm_and_names_its_kubeconfig(tmp_path: Path) -> None:
    module = "spotwise.executor.clouds.kubernetes.fake.local_cluster"
    process = subprocess.Popen(
        [sys.executable, "-m", module, str(tmp_path), "eks"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    assert first == f"export KUBECONFIG={tmp_path / 'kubeconfig'}\n"
    assert "two eks spot nodes" in process.stdout.readline()
    assert (tmp_path / "kubeconfig").stat().st_mode & 0o077 == 0
    os.kill(process.pid, signal.SIGTERM)
    assert process.wait(timeout=30) == 0


def test_an_unknown_platform_is_refused_in_one_line(tmp_path: Path) -> None:
    module = "spotwise.executor.clouds.kubernetes.fake.local_cluster"
    ran = subprocess.run(
        [sys.executable, "-m", module, str(tmp_path), "openshift"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 2
    assert ran.stderr.startswith("no platform 'openshift'; use gke, eks, aks, cce, generic")


def test_each_platforms_spot_node_carries_what_its_pods_select() -> None:
    labels, taints = spot_node("aks")
    assert labels == {"kubernetes.azure.com/scalesetpriority": "spot"}
    assert taints == [
        {"key": "kubernetes.azure.com/scalesetpriority", "value": "spot", "effect": "NoSchedule"}
    ]
    assert spot_node("cce")[0] == {"cce.cloud.com/cce-nodepool": "spot-pool"}

"""torchrun elastic: two local nodes (gloo), one is killed, training goes on at the smaller
size from the last DCP checkpoint and finishes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from spotwise.executor.launchers.torchrun import Elastic, torchrun_command


def lose_node(pid: int) -> None:
    """SIGKILL a node at once: its torchrun agent and the workers (in sessions of their own)."""
    agent = psutil.Process(pid)
    for process in [*agent.children(recursive=True), agent]:
        process.kill()


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.xdist_group("torch-distributed")  # gloo jobs, one at a time
def test_killing_one_of_two_nodes_shrinks_the_job_and_it_resumes(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ckpt = tmp_path / "ckpt"
    command = [sys.executable, "-m", "spotwise.executor.examples.train_mlp", "--ckpt", str(ckpt)]
    command += ["--epochs", "3", "--step-sleep-s", "0.02", "--interval-s", "0.5"]

    def node_command(host: bool) -> list[str]:
        elastic = Elastic(
            rdzv_endpoint=f"127.0.0.1:{port}",
            rdzv_id="t",
            max_restarts=6,
            last_call_timeout_s=10,  # both nodes join the first round
            is_host=host,  # the surviving node hosts the rendezvous store
        )
        return torchrun_command(command, elastic)

    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "SPOTWISE_PG_TIMEOUT_S": "10",  # the survivor notices the lost node within 10 s
        "GLOO_SOCKET_IFNAME": "lo",  # loopback only
    }
    events: dict[str, list[dict]] = {"a": [], "b": []}

    def start(name: str) -> subprocess.Popen[str]:
        node = subprocess.Popen(
            node_command(host=name == "a"),
            stdout=subprocess.PIPE,
            stderr=(tmp_path / f"{name}.err").open("w"),
            text=True,
            env=env,
            start_new_session=True,
        )

        def read() -> None:
            assert node.stdout is not None
            for line in node.stdout:
                if line.startswith("{"):
                    events[name].append(json.loads(line))

        threading.Thread(target=read, daemon=True).start()
        return node

    a = start("a")
    b = start("b")
    try:
        deadline = time.monotonic() + 120
        while not (ckpt / "latest").exists():
            assert time.monotonic() < deadline, (tmp_path / "a.err").read_text()[-2000:]
            time.sleep(0.1)
        time.sleep(1.0)
        lose_node(b.pid)
        assert a.wait(240) == 0, (tmp_path / "a.err").read_text()[-3000:]
    finally:
        for node in (a, b):
            if node.poll() is None:
                lose_node(node.pid)
    starts = [e for e in events["a"] if e["event"] in ("fresh", "resumed")]
    assert starts[0]["event"] == "fresh" and starts[0]["world_size"] == 2
    # (a slow machine may regroup at full size first; after the kill it is one node)
    resumed = [e for e in starts if e["event"] == "resumed"]
    assert resumed and resumed[-1]["world_size"] == 1 and resumed[-1]["step"] > 0
    done = [e for e in events["a"] if e["event"] == "done"]
    assert done and done[-1]["step"] == 3 * 4096 // 32  # every step of the schedule, once

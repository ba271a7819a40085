"""System: a testbed spread over network namespaces as over hosts (DESIGN §3, §8).

Two "hosts" made by the test (network namespaces on a bridge of their own, 10.231.0.0/24), each
running its share of the schedulers and node monitors (the central scheduler on the first); the
frontend replays from the root namespace (10.231.0.1). The processes know each other only by the
addresses of the cluster description, so messages between hosts cross veth pairs and the bridge.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import namespace_hosts, need_root

from aviary.common.cluster import load_cluster
from aviary.launch.cli.main import main

pytestmark = pytest.mark.system

BRIDGE = "avbr0"
ROOT = "10.231.0.1"
HOSTS = {"avsched": "10.231.0.2", "avnodes": "10.231.0.3"}  # namespace -> address


@pytest.fixture
def hosts() -> Iterator[dict[str, str]]:
    need_root("network namespaces need root and iproute2 (scripts/setup-docker.sh installs it)")
    with namespace_hosts(BRIDGE, ROOT, HOSTS):
        yield HOSTS


def test_replay_across_network_namespaces(hosts, tmp_path: Path):
    """`aviary cluster` places the processes on the two hosts (with CurveZMQ keys: the addresses are not
    loopback), `aviary host` runs each host's share inside its namespace, and `aviary replay --connect`
    plays the frontend from the root namespace, every socket authenticated and encrypted."""
    path = tmp_path / "cluster.toml"
    flags = ["cluster", "--policy", "eagle", "--nodes", "6", "--slots", "2", "--schedulers", "2",
             "--seed", "3", "--time-scale", "50000", "--hosts", ",".join(hosts.values()),
             "--frontend-host", ROOT, "--out", str(path)]  # fmt: skip
    assert main(flags) == 0
    cluster = load_cluster(path)
    assert cluster.keys is not None and (tmp_path / "cluster.keys").is_dir()
    placed = {p.name: p.host for p in cluster.processes}
    assert set(placed.values()) == {ROOT, *hosts.values()}
    launchers = {}
    try:
        for ns in hosts:
            cmd = [
                sys.executable,
                "-m",
                "aviary.launch.cli",
                "host",
                str(path),
                "--dir",
                str(tmp_path / ns),
            ]
            launchers[ns] = subprocess.Popen(
                ["ip", "netns", "exec", ns, *cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
        for ns, launcher in launchers.items():  # each runs exactly its host's processes
            assert launcher.stdout is not None
            lines = []
            for line in launcher.stdout:
                lines.append(line)
                if "processes registered" in line:
                    break
            mine = [name for name, host in placed.items() if host == hosts[ns]]
            assert f"all {len(mine)} processes registered" in lines[-1], "".join(lines)
        out = tmp_path / "run"
        flags = ["replay", "--connect", str(path), "--jobs", "80", "--start", "6000",
                 "--task-scale", "0.0012", "--load", "0.7", "--seed", "1", "--stall-timeout", "30",
                 "--quiet", "--out", str(out)]  # fmt: skip
        assert main(flags) == 0
        summary = json.loads((out / "summary.json").read_text())
        assert summary["finished"] == summary["jobs"] == 80 and summary["unfinished"] == []
        assert summary["counters"]["tasks_finished"] == summary["tasks"]
        assert summary["messages"]["Probe"] > 0 and summary["messages"]["LongTask"] > 0
        assert all(launcher.poll() is None for launcher in launchers.values()), "a launcher died"
    finally:
        for launcher in launchers.values():
            launcher.send_signal(signal.SIGTERM)
    for ns, launcher in launchers.items():
        rest, _ = launcher.communicate(timeout=30)
        assert launcher.returncode == 0 and "every process exited cleanly" in rest, f"{ns}: {rest}"

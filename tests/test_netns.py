"""System: a testbed spread over network namespaces as over hosts (DESIGN §3, §8).

Two "hosts" made by the test (network namespaces on a bridge of their own, 10.231.0.0/24): the
schedulers and the central scheduler on one, the node monitors on the other; the frontend replays from
the root namespace (10.231.0.1). The processes know each other only by the addresses of the cluster
description, so every message between roles crosses a veth pair and the bridge, never loopback.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aviary.common.cluster import write_cluster
from aviary.launch.cli import build_parser, main
from aviary.launch.replay import testbed_cluster as cluster_of

pytestmark = pytest.mark.system

BRIDGE = "avbr0"
ROOT = "10.231.0.1"
HOSTS = {"avsched": "10.231.0.2", "avnodes": "10.231.0.3"}  # namespace -> address


def ip(*args: str, check: bool = True) -> None:
    subprocess.run(["ip", *args], check=check, capture_output=True)


def teardown() -> None:
    for ns in HOSTS:
        ip("netns", "del", ns, check=False)  # takes its end of the veth pair, hence the pair, with it
    ip("link", "del", BRIDGE, check=False)


@pytest.fixture
def hosts() -> Iterator[dict[str, str]]:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        reason = "network namespaces need root and iproute2 (scripts/setup-docker.sh installs it)"
        if os.environ.get("AVIARY_REQUIRE_DOCKER") == "1":  # CI: the system tests must run
            pytest.fail(reason)
        pytest.skip(reason)
    teardown()  # leftovers of an interrupted run
    try:
        ip("link", "add", BRIDGE, "type", "bridge")
        ip("addr", "add", f"{ROOT}/24", "dev", BRIDGE)
        ip("link", "set", BRIDGE, "up")
        for ns, address in HOSTS.items():
            ip("netns", "add", ns)
            ip("link", "add", f"{ns}-h", "type", "veth", "peer", "name", f"{ns}-n")
            ip("link", "set", f"{ns}-h", "master", BRIDGE, "up")
            ip("link", "set", f"{ns}-n", "netns", ns)
            ip("-n", ns, "addr", "add", f"{address}/24", "dev", f"{ns}-n")
            ip("-n", ns, "link", "set", f"{ns}-n", "up")
            ip("-n", ns, "link", "set", "lo", "up")
        yield HOSTS
    finally:
        teardown()


def test_replay_across_network_namespaces(hosts, tmp_path: Path):
    # The cluster `aviary up` would describe; the replay takes its time scale (hence Eagle's cutoff).
    up = ["up", "--policy", "eagle", "--nodes", "6", "--slots", "2", "--schedulers", "2", "--seed", "3",
          "--time-scale", "50000"]  # fmt: skip
    cluster = cluster_of(build_parser().parse_args(up))
    where = {"frontend": (None, ROOT), "central": ("avsched", hosts["avsched"]),
             "scheduler": ("avsched", hosts["avsched"]), "node": ("avnodes", hosts["avnodes"])}  # fmt: skip
    for p in cluster.processes:
        p.host = where[p.role][1]
    path = tmp_path / "cluster.toml"
    write_cluster(cluster, path)
    children = []
    try:
        for p in cluster.processes:
            ns = where[p.role][0]
            if ns is None:
                continue
            log = (tmp_path / f"{p.name}.log").open("w")
            cmd = [sys.executable, "-m", "aviary.launch.process", str(path), p.name]
            children.append(subprocess.Popen(["ip", "netns", "exec", ns, *cmd], stdout=log, stderr=log))
        out = tmp_path / "run"
        flags = ["replay", "--connect", str(path), "--jobs", "80", "--start", "6000",
                 "--task-scale", "0.0012", "--load", "0.7", "--seed", "1", "--stall-timeout", "30",
                 "--quiet", "--out", str(out)]  # fmt: skip
        assert main(flags) == 0
        summary = json.loads((out / "summary.json").read_text())
        assert summary["finished"] == summary["jobs"] == 80 and summary["unfinished"] == []
        assert summary["counters"]["tasks_finished"] == summary["tasks"]
        assert summary["messages"]["Probe"] > 0 and summary["messages"]["LongTask"] > 0
        assert all(c.poll() is None for c in children), "a process died"
    finally:
        for c in children:
            c.send_signal(signal.SIGTERM)
        for c in children:
            try:
                c.wait(timeout=10)
            except subprocess.TimeoutExpired:
                c.kill()
                c.wait()

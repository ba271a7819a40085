"""A testbed over several hosts: `aviary cluster` places the processes, `aviary host` picks its own."""

from __future__ import annotations

from collections import Counter

import pytest

from aviary.common.cluster import ClusterError, load_cluster
from aviary.launch.cli.main import main
from aviary.launch.drivers.hosts import processes_on

HOSTS = ["10.9.0.2", "10.9.0.3", "10.9.0.4"]


def write(tmp_path, *flags: str):
    path = tmp_path / "cluster.toml"
    assert main(["cluster", "--hosts", ",".join(HOSTS), "--out", str(path), *flags]) == 0
    return load_cluster(path), path


def test_schedulers_and_nodes_go_round_robin_with_consecutive_ports_per_host(tmp_path):
    cluster, _ = write(
        tmp_path, "--policy", "eagle", "--nodes", "7", "--schedulers", "3", "--base-port", "9000"
    )
    assert cluster.get("frontend").host == HOSTS[0] and cluster.get("central").host == HOSTS[0]
    assert [cluster.get(f"sched-{i}").host for i in range(3)] == HOSTS
    assert Counter(p.host for p in cluster.nodes) == {HOSTS[0]: 3, HOSTS[1]: 2, HOSTS[2]: 2}
    for host in HOSTS:
        ports = sorted(p.port for p in cluster.processes if p.host == host)
        assert ports == list(range(9000, 9000 + len(ports)))
    assert cluster.params["cutoff"] > 0 and sum(p.partition == "short" for p in cluster.nodes) == 1


def test_the_frontend_may_live_on_a_host_of_its_own_and_processes_may_bind_any_interface(tmp_path):
    cluster, _ = write(tmp_path, "--frontend-host", "10.9.0.1", "--bind", "0.0.0.0")
    assert cluster.get("frontend").address == "tcp://10.9.0.1:7100"
    assert cluster.get("node-0").bind_address == f"tcp://0.0.0.0:{cluster.get('node-0').port}"
    assert all(p.host in HOSTS for p in cluster.processes if p.role != "frontend")


def test_a_host_runs_exactly_its_processes(tmp_path):
    cluster, path = write(tmp_path, "--nodes", "4", "--schedulers", "2")
    assert processes_on(cluster, path, [HOSTS[1]]) == ["sched-1", "node-1"]
    with pytest.raises(ClusterError, match="no process has its host on this machine"):
        processes_on(cluster, path, ["10.9.9.9"])


def test_cluster_flags_are_checked_in_one_line(tmp_path, capsys):
    out = tmp_path / "c.toml"
    assert main(["cluster", "--hosts", "a,a", "--out", str(out)]) == 2
    assert "a host is named twice" in capsys.readouterr().err and not out.exists()
    with pytest.raises(SystemExit):
        main(["cluster", "--hosts", "a,,b", "--out", str(out)])
    assert "--hosts" in capsys.readouterr().err
    assert main(["cluster", "--hosts", "a", "--nodes", "20", "--base-port", "65530", "--out", str(out)]) == 2
    assert "--base-port" in capsys.readouterr().err and not out.exists()


def test_two_processes_on_one_address_are_refused(tmp_path):
    _, path = write(tmp_path)
    text = path.read_text().replace("port = 7101", "port = 7100", 1)
    path.write_text(text)
    with pytest.raises(ClusterError, match=r"field 'port': 10\.9\.0\.2:7100 is also 'frontend''s"):
        load_cluster(path)

"""A testbed over several hosts (DESIGN §3): one cluster description, one launcher per host.

    aviary cluster --hosts 10.0.0.2,10.0.0.3 --nodes 100 --policy eagle --out cluster.toml
    aviary host cluster.toml          # on every host (over SSH, say): starts the processes of that host
    aviary replay --connect cluster.toml ...          # on the frontend's host

``aviary cluster`` spreads the distributed schedulers and the node monitors round-robin over the hosts
(the central scheduler goes to the first), gives each host consecutive ports from ``--base-port`` and
puts the frontend, which ``aviary replay --connect`` plays, on ``--frontend-host``. ``aviary host``
starts the processes whose ``host`` is one of this machine's addresses (or the ``--host`` given) and
keeps them running, as ``aviary up`` does, until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from pathlib import Path

from ...common.cluster import Cluster, ClusterError

SPREAD_ROLES = ("scheduler", "node")
"""Roles spread round-robin over the hosts; the others go to one host."""


def spread(
    cluster: Cluster,
    hosts: list[str],
    *,
    base_port: int,
    frontend_host: str | None = None,
    bind: str | None = None,
) -> Cluster:
    """Place ``cluster``'s processes on ``hosts`` (in place): the frontend on ``frontend_host``
    (default: the first host), the central scheduler on the first host, schedulers and nodes
    round-robin; each host's ports count up from ``base_port``. Each binds ``bind`` (default: the
    address it is reached at; ``0.0.0.0`` where that address is not on an interface, behind NAT)."""
    if not hosts:
        raise ClusterError("--hosts: name at least one host")
    if len(set(hosts)) != len(hosts):
        raise ClusterError(f"--hosts: a host is named twice in {','.join(hosts)}")
    ports: dict[str, int] = {}
    turn = dict.fromkeys(SPREAD_ROLES, 0)
    for p in cluster.processes:
        if p.role == "frontend":
            host = frontend_host or hosts[0]
        elif p.role in turn:
            host = hosts[turn[p.role] % len(hosts)]
            turn[p.role] += 1
        else:
            host = hosts[0]
        port = ports.get(host, base_port)
        if port > 65535:
            raise ClusterError(f"--base-port: {base_port} leaves too few ports on {host}")
        p.host, p.port, p.bind = host, port, bind
        ports[host] = port + 1
    return cluster


def local_addresses() -> set[str]:
    """This machine's IPv4 addresses and names: how a cluster description may call it."""
    import psutil

    found = {
        a.address for addrs in psutil.net_if_addrs().values() for a in addrs if a.family == socket.AF_INET
    }
    return found | {socket.gethostname(), socket.getfqdn()}


def processes_on(cluster: Cluster, path: Path, hosts: Iterable[str] | None = None) -> list[str]:
    """Names of the processes (but the frontend) whose host is in ``hosts`` (default: this machine)."""
    mine = set(hosts) if hosts else local_addresses()
    names = [p.name for p in cluster.processes if p.role != "frontend" and p.host in mine]
    if not names:
        shown = ", ".join(sorted(mine)[:8])
        raise ClusterError(f"{path}: no process has its host on this machine ({shown}); name it with --host")
    return names

"""What ``aviary replay --connect`` checks before it replays against a running testbed: the cluster file,
the flags typed that contradict the testbed (its policy, nodes, executor, a parameter), that the
frontend can listen on its address here, and that the testbed runs at all (a TCP connection to each
process's address, all at once, a second at most: a testbed that is down is said so at once instead of
after the registration wait)."""

from __future__ import annotations

import argparse
import errno
import math
import select
import socket
import time
from pathlib import Path
from typing import Any

from ...common.addresses import IN_USE, bind_problem
from ...common.cluster import Cluster, load_cluster
from ..flags.spec import SHARED
from ..policies.registry import POLICIES, check_params, cluster_policy

TESTBED_FLAGS = ("policy", "nodes", "slots", "schedulers", "executor", "capacity")
"""Flags of ``aviary replay`` that describe the testbed: a replay ``--connect`` takes the running one's."""


TESTBED_HAS = {
    "policy": "runs policy {}",
    "nodes": "has {} nodes",
    "slots": "has {} slots per node",
    "schedulers": "has {} distributed schedulers",
    "executor": "runs executor {}",
    "capacity": "has nodes of capacity {}",
}


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def testbed_value(cluster: Cluster, dest: str) -> Any:
    """What the running ``cluster`` has for the testbed flag ``dest`` (None: no one value)."""
    nodes = cluster.nodes
    values: dict[str, set[Any]] = {
        "policy": {cluster.policy},
        "nodes": {len(nodes)},
        "slots": {n.slots for n in nodes},
        "schedulers": {len(cluster.schedulers)},
        "executor": {cluster.executor},
        "capacity": {n.resources for n in nodes},
    }
    one = values[dest]
    return next(iter(one)) if len(one) == 1 else None


def connect_problem(args: argparse.Namespace, given: set[str]) -> str | None:
    """Why a replay ``--connect`` cannot run, in one line: the cluster file is bad (raised), a flag
    given contradicts the running testbed (its policy, nodes, executor, a parameter: the line names the
    flag, the file and what it holds), or the frontend cannot listen on its address here; else None."""
    cluster = load_cluster(args.connect)
    check_params(cluster, str(args.connect))
    conflict = testbed_conflict(args, given, cluster)
    if conflict:
        return conflict
    frontend = cluster.frontend
    problem = bind_problem(frontend.bind or frontend.host, frontend.port)
    if problem is not None:
        hint = "is another replay using this testbed?" if problem == IN_USE else "run it on that host"
        return f"{args.connect}: frontend: cannot listen on {frontend.bind_address}: {problem} ({hint})"
    return None


def testbed_down(path: Path, cluster: Cluster) -> str | None:
    """One line when no process of the running ``cluster`` (described by ``path``) accepts a connection:
    a testbed that is down is said so at once, not after the registration wait; else None. Checked when
    a replay starts (:func:`aviary.launch.replay.run.run_replay`), whoever started the testbed
    (``--cluster`` starts it first)."""
    processes = [p for p in cluster.processes if p.name != cluster.frontend.name]
    down = not_listening([(p.host, p.port) for p in processes])
    if not processes or len(down) < len(processes):
        return None
    first = processes[0]
    compose = (Path(path).parent / "docker-compose.yml").is_file()  # written by aviary compose write
    start = f"aviary compose up {Path(path).parent}" if compose else "aviary up, aviary host"
    return (
        f"{path}: no process of the testbed answers ({first.name} at {first.host}:{first.port}: {down[0]}, "
        f"and the {len(processes) - 1} others): start it first ({start})"
    )


def _reason(code: int) -> str:
    if code == errno.ECONNREFUSED:
        return "connection refused"
    return errno.errorcode.get(code, str(code)).lower()


def not_listening(addresses: list[tuple[str, int]], timeout: float = 1.0) -> list[str]:
    """Why each of ``addresses`` that does not accept a TCP connection within ``timeout`` (all tried at
    once) does not: ``connection refused``, ``no answer``..."""
    pending: dict[socket.socket, int] = {}
    why: dict[int, str] = {}
    for i, (host, port) in enumerate(addresses):
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        code = s.connect_ex((host, port))
        if code in (0, errno.EINPROGRESS):
            pending[s] = i
        else:
            why[i] = _reason(code)
            s.close()
    deadline = time.monotonic() + timeout
    while pending and (left := deadline - time.monotonic()) > 0:
        _, ready, _ = select.select([], list(pending), [], left)
        for s in ready:
            i = pending.pop(s)
            code = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                why[i] = _reason(code)
            s.close()
    for s, i in pending.items():
        why[i] = "no answer"
        s.close()
    return [why[i] for i in sorted(why)]


def testbed_conflict(args: argparse.Namespace, given: set[str], cluster: Cluster) -> str | None:
    """The first flag given that contradicts the running ``cluster``, in one line; else None."""
    policy = cluster_policy(cluster)
    advice = "a replay --connect takes the testbed as it runs: drop the flag, or restart the testbed with it"
    for dest in TESTBED_FLAGS:
        value, held = getattr(args, dest), testbed_value(cluster, dest)
        if dest in given and value != held:
            if dest == "capacity":
                value = ",".join(f"{x:g}" for x in value)
                held = None if held is None else ",".join(f"{x:g}" for x in held)
            has = TESTBED_HAS[dest].format("mixed" if held is None else held)
            return f"--{dest} {value}: the testbed of {args.connect} {has}; {advice}"
    scale = float(cluster.params.get("time_scale", 1.0))
    for other in POLICIES.values():
        for p in other.params:
            if p.dest not in given or (p.name in SHARED and policy.param(p.name) is None):
                continue  # the cutoff of a policy without one: only the replay's reporting classes
            value = getattr(args, p.dest)
            mine = policy.param(p.name)
            if mine is None:
                return f"{p.flag}: the testbed of {args.connect} runs {policy.name!r}, without this parameter"
            if not mine.cluster:  # the short partition: the nodes' labels
                held = 100 * sum(n.partition == "short" for n in cluster.nodes) / len(cluster.nodes)
                same = round(len(cluster.nodes) * value / 100) == round(len(cluster.nodes) * held / 100)
            else:
                held = mine.held(cluster.params)
                wanted = value / scale if mine.scales and mine.scales_given else value
                same = held == wanted or (isinstance(held, float) and math.isclose(held, wanted))
                if mine.scales and mine.scales_given and isinstance(held, float):
                    held = held * scale  # shown in the unit of the flag, trace seconds
            if not same:
                return (
                    f"{p.flag} {_shown(value)}: the testbed of {args.connect} holds {p.name} "
                    f"{_shown(held)}; {advice}"
                )
    return None

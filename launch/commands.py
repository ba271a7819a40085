"""What each ``aviary`` sub-command does (the flags are in :mod:`aviary.launch.cli`)."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from ..common.cluster import Cluster, load_cluster
from ..common.results import ResultsError
from ..common.transport import IN_USE, bind_problem
from .registry import POLICIES, check_params, get_policy
from .replay import UsageError, print_summary, run_replay, setup_replay, testbed_cluster
from .spec import SHARED, ReplaySpec


def cmd_up(args: argparse.Namespace) -> int:
    from .hosts import spread
    from .up import run_up

    base_port = getattr(args, "base_port", None)
    cluster = testbed_cluster(ReplaySpec.from_args(args), bind_ports=base_port is None)
    if base_port is not None:
        spread(cluster, ["127.0.0.1"], base_port=base_port)
    return run_up(cluster, args.dir)


def cmd_cluster(args: argparse.Namespace) -> int:
    from ..common.cluster import write_cluster
    from .hosts import spread
    from .up import cluster_table

    cluster = spread(
        testbed_cluster(ReplaySpec.from_args(args), bind_ports=False),
        args.hosts,
        base_port=args.base_port,
        frontend_host=args.frontend_host,
        bind=args.bind,
    )
    write_cluster(cluster, args.out)
    Console().print(cluster_table(cluster))
    print(f"written: {args.out}; on each host: aviary host {args.out.name}")
    return 0


def cmd_host(args: argparse.Namespace) -> int:
    from ..common.cluster import load_cluster
    from .hosts import processes_on
    from .registry import check_params
    from .up import run_up

    cluster = load_cluster(args.cluster)
    check_params(cluster, str(args.cluster))
    return run_up(cluster, args.dir, processes_on(cluster, args.cluster, args.host), str(args.cluster))


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
    if problem is None:
        return None
    hint = "is another replay using this testbed?" if problem == IN_USE else "run it on that host"
    return f"{args.connect}: frontend: cannot listen on {frontend.bind_address}: {problem} ({hint})"


def testbed_conflict(args: argparse.Namespace, given: set[str], cluster: Cluster) -> str | None:
    """The first flag given that contradicts the running ``cluster``, in one line; else None."""
    policy = get_policy(cluster.policy)
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
        for p in other.declared:
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


def cmd_replay(args: argparse.Namespace) -> int:
    if args.connect is not None:
        problem = connect_problem(args, getattr(args, "given", set()))
        if problem:
            raise UsageError(problem)
    setup = setup_replay(ReplaySpec.from_args(args))
    summary = run_replay(setup, quiet=args.quiet)
    print_summary(summary, setup.out)
    return 0 if summary["finished"] == summary["jobs"] else 1


def cmd_compare(args: argparse.Namespace) -> int:
    import sys

    from .compare import compare

    try:
        table, comp = compare(args.dirs, args.plot, force=args.force)
    except ResultsError as exc:
        raise UsageError(str(exc)) from None
    for warning in comp.warnings:
        print(f"aviary compare: warning: {warning}", file=sys.stderr)
    if comp.differs:
        print(f"aviary compare: warning: {comp.differs_note()}", file=sys.stderr)
    console = Console()
    console.print(table)
    if args.plot:
        console.print(f"figure: {args.plot}", markup=False, highlight=False)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(args.out)


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import run_bench

    results = run_bench(args.out)
    print(json.dumps(results, indent=2))
    print(f"written: {Path(args.out) / 'bench.json'}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from .sweep import main_sweep

    return main_sweep(
        args.spec,
        out=args.out,
        workers=args.workers,
        cluster=args.cluster,
        force=args.force,
        quiet=args.quiet,
        dry_run=args.dry_run,
    )


def cmd_keys(args: argparse.Namespace) -> int:
    from ..common.keys import make_keys

    cluster = load_cluster(args.cluster)
    folder = make_keys(cluster, args.cluster)
    print(
        f"keys: {len(cluster.processes) + 1} key pairs (every process and the launchers' control); "
        f"public keys in {args.cluster}, secret keys in {folder}/ (mode 0600): copy it to every host"
    )
    return 0


def cmd_compose(args: argparse.Namespace) -> int:
    from .compose import run

    return run(args)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "up": cmd_up,
    "cluster": cmd_cluster,
    "host": cmd_host,
    "keys": cmd_keys,
    "replay": cmd_replay,
    "compare": cmd_compare,
    "demo": cmd_demo,
    "bench": cmd_bench,
    "sweep": cmd_sweep,
    "compose": cmd_compose,
}

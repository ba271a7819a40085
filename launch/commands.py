"""What each ``aviary`` sub-command does (the flags are in :mod:`aviary.launch.cli`)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from ..common.results import ResultsError
from .replay import UsageError, print_summary, run_replay, setup_replay, testbed_cluster
from .spec import ReplaySpec


def cmd_up(args: argparse.Namespace) -> int:
    from .up import run_up

    return run_up(testbed_cluster(ReplaySpec.from_args(args)), args.dir)


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
    return run_up(cluster, args.dir, processes_on(cluster, args.cluster, args.host))


def cmd_replay(args: argparse.Namespace) -> int:
    setup = setup_replay(ReplaySpec.from_args(args))
    summary = run_replay(setup, quiet=args.quiet)
    print_summary(summary, setup.out)
    return 0 if summary["finished"] == summary["jobs"] else 1


def cmd_compare(args: argparse.Namespace) -> int:
    from .compare import compare

    try:
        table, _ = compare(args.dirs, args.png)
    except ResultsError as exc:
        raise UsageError(str(exc)) from None
    console = Console()
    console.print(table)
    if args.png:
        console.print(f"chart: {args.png}")
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


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "up": cmd_up,
    "cluster": cmd_cluster,
    "host": cmd_host,
    "replay": cmd_replay,
    "compare": cmd_compare,
    "demo": cmd_demo,
    "bench": cmd_bench,
}

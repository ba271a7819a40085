"""What each ``aviary`` sub-command does (the flags are in :mod:`aviary.launch.flags.parser`)."""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from ...common.results import ResultsError
from ..drivers.sim import GC_FIRST_GENERATION
from ..flags.spec import ReplaySpec, UsageError
from ..replay.connect import connect_problem
from ..replay.resolve import fitted_time_scale, setup_replay, testbed_cluster
from ..replay.run import print_summary, run_replay


def cmd_up(args: argparse.Namespace) -> int:
    from ..drivers.hosts import spread
    from ..drivers.up import run_up

    if args.cluster is not None:
        from ..drivers.remote import hold

        given = sorted(getattr(args, "given", set()) - {"cluster", "dir", "remote_aviary"})
        if given:
            flag = "--" + given[0].replace("_", "-")
            raise UsageError(f"{flag}: with --cluster the testbed is {args.cluster}'s: drop the flag")
        import tempfile

        return hold(args.cluster, args.dir or Path(tempfile.mkdtemp(prefix="aviary-up-")), args.remote_aviary)

    base_port = getattr(args, "base_port", None)
    cluster = testbed_cluster(ReplaySpec.from_args(args), bind_ports=base_port is None)
    if base_port is not None:
        spread(cluster, ["127.0.0.1"], base_port=base_port)
    dashboard = None if args.dashboard is None else (args.dashboard, args.dashboard_address)
    return run_up(cluster, args.dir, keys=args.keys, dashboard=dashboard)


def cmd_cluster(args: argparse.Namespace) -> int:
    from ...common.cluster import write_cluster
    from ..drivers.hosts import spread
    from ..drivers.up import cluster_table

    cluster = spread(
        testbed_cluster(ReplaySpec.from_args(args), bind_ports=False),
        args.hosts,
        base_port=args.base_port,
        frontend_host=args.frontend_host,
        bind=args.bind,
    )
    write_cluster(cluster, args.out)
    if args.keys:
        from ...common.cluster import load_cluster
        from ...common.keys import make_keys

        folder = make_keys(load_cluster(args.out), args.out)
        cluster = load_cluster(args.out)
        print(
            f"keys: secret keys in {folder}/ (mode 0600), public keys in {args.out}: copy both to every host"
        )
    Console().print(cluster_table(cluster))
    print(f"written: {args.out}; on each host: aviary host {args.out.name}")
    return 0


def cmd_host(args: argparse.Namespace) -> int:
    from ...common.cluster import load_cluster
    from ..drivers.hosts import processes_on
    from ..drivers.up import run_up
    from ..policies.registry import check_params

    cluster = load_cluster(args.cluster)
    check_params(cluster, str(args.cluster))
    names = processes_on(cluster, args.cluster, args.host)
    return run_up(cluster, args.dir, names, str(args.cluster), lifeline=args.lifeline)


def cmd_replay(args: argparse.Namespace) -> int:
    if args.cluster is not None:
        if args.connect is not None:
            raise UsageError("--cluster and --connect: give one (--cluster starts the testbed it replays on)")
        args.connect = args.cluster
    if args.connect is not None:
        problem = connect_problem(args, getattr(args, "given", set()))
        if problem:
            raise UsageError(problem)
    if args.runtime == "sim" and args.connect is None:
        # One process whose objects live to its end: the collector's first generation is made as big as
        # the simulator's loop makes it, for the cores' construction before and the results after (at
        # 700 objects a collection, they walked a growing heap: about 0.5 s of a 21 s Eagle cell).
        gc.set_threshold(GC_FIRST_GENERATION, *gc.get_threshold()[1:])
    setup = setup_replay(ReplaySpec.from_args(args))
    if command := getattr(args, "command_line", None):
        setup.extra["command"] = command
    if args.cluster is not None:
        from ..drivers.remote import RemoteTestbed

        with RemoteTestbed(args.cluster, setup.out, aviary=args.remote_aviary):
            summary = run_replay(setup, quiet=args.quiet, progress_every=args.progress_every)
    else:
        summary = run_replay(setup, quiet=args.quiet, progress_every=args.progress_every)
    print_summary(summary, setup.out)
    return 0 if summary["finished"] == summary["jobs"] else 1


def cmd_report(args: argparse.Namespace) -> int:
    from ..results.report import write_report

    print(f"written: {write_report(args.dirs, args.html)}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """``aviary export DIR``: the run's (or sweep's) tables as Parquet (or CSV) files."""
    from ..results.frames import export

    out = args.out or args.dir / "export"
    try:
        written = export(args.dir, out, fmt=args.fmt)
    except ResultsError as exc:
        raise UsageError(str(exc)) from None
    print("written: " + ", ".join(map(str, written)))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from ..results.compare import compare

    try:
        table, comp = compare(args.dirs, args.plot, force=args.force)
    except ResultsError as exc:
        raise UsageError(str(exc)) from None
    for warning in comp.warnings:
        print(f"aviary compare: warning: {warning}", file=sys.stderr)
    if comp.differs:
        print(f"aviary compare: warning: {comp.differs_note()}", file=sys.stderr)
    if args.json:
        from ..results.compare import comparison_data

        print(json.dumps(comparison_data(comp), indent=2))
        return 0
    console = Console()
    console.print(table)
    if args.plot:
        console.print(f"figure: {args.plot}", markup=False, highlight=False)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(args.out)


def cmd_bench(args: argparse.Namespace) -> int:
    from rich.console import Console

    from .bench import run_bench, summary

    results = run_bench(args.out, peer=args.peer, dashboard=args.dashboard)
    console = Console()
    if not console.is_terminal:  # a file or a pipe: the table whole, not folded to 80 columns
        console = Console(width=120)
    console.print(summary(results))
    print(f"every figure: {Path(args.out) / 'bench.json'}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from ..sweep.run import main_sweep

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
    from ...common.cluster import load_cluster
    from ...common.keys import make_keys

    cluster = load_cluster(args.cluster)
    folder = make_keys(cluster, args.cluster)
    print(
        f"keys: {len(cluster.processes) + 1} key pairs (every process and the launchers' control); "
        f"public keys in {args.cluster}, secret keys in {folder}/ (mode 0600): copy it to every host"
    )
    return 0


def cmd_compose(args: argparse.Namespace) -> int:
    """``aviary compose write|up|down``."""
    from ..drivers.compose import down, up, write

    action = args.compose_command
    if action == "write":
        spec = ReplaySpec.from_args(args)
        spec = replace(spec, time_scale=fitted_time_scale(spec), duration=None)  # a replay of --duration
        cluster = testbed_cluster(spec, bind_ports=True)
        path = write(args.dir, cluster, cpus=args.cpus, memory=args.memory, keys=args.keys)
        print(
            f"written: {path} ({len(cluster.units()) - 1} services), {args.dir / 'cluster.toml'} "
            f"(--time-scale {spec.time_scale:g}); then: aviary compose up {args.dir} && aviary replay "
            f"--connect {args.dir / 'cluster.toml'}"
        )
        return 0
    if action == "up":
        started = up(args.dir, sdk=args.sdk, wait=args.wait)
        total = len(started.running) + len(started.failed)
        for line in started.failed:
            print(f"aviary compose up: {line}", file=sys.stderr)
        if started.failed:
            print(
                f"aviary compose up: {len(started.failed)} of {total} containers did not start (the others "
                f"run; their logs: docker logs NAME); stop them: aviary compose down {args.dir}",
                file=sys.stderr,
            )
            return 1
        print(
            f"started {total} containers with {started.via} in {started.launched:.1f} s, every process "
            f"listening after {started.seconds:.1f} s; then: aviary replay --connect "
            f"{args.dir / 'cluster.toml'} ..."
        )
        return 0
    t0 = time.monotonic()
    removed = down(args.dir)
    print(f"removed {removed} containers in {time.monotonic() - t0:.1f} s")
    return 0


def check(args: argparse.Namespace) -> int:
    """``aviary policy check``: the table, each failure's smallest case; exit 1 on a failure."""
    import logging

    from ..check import check_policy, table
    from ..check.runs import Case

    try:
        case = None if args.case is None else Case.parse(args.case)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--case: not a case printed by aviary policy check: {exc}") from None
    logging.disable(logging.WARNING)  # the frontend's notes of the deaths the fault checks inject
    try:
        results = check_policy(args.name, quick=args.quick, only=args.only, case=case, real=not args.no_real)
    finally:
        logging.disable(logging.NOTSET)
    print(table(results))
    failed = [r.check for r in results if r.passed is False]
    if failed:
        print(f"aviary policy check: {args.name}: failed {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def cmd_policy(args: argparse.Namespace) -> int:
    """``aviary policy list|new``."""
    from .plugins import new_policy, policy_list

    if args.policy_command == "check":
        return check(args)
    if args.policy_command == "list":
        table, errors = policy_list(width=shutil.get_terminal_size().columns)
        print(table)
        for line in errors:
            print(f"aviary policy list: warning: {line}", file=sys.stderr)
        return 0
    folder = new_policy(args.name, args.kind, args.dir)
    print(
        f"written: {folder} ({args.kind}); then: pip install -e {folder} && pytest {folder} && "
        f"aviary replay --policy {args.name} --runtime sim"
    )
    return 0


def cmd_protocol(args: argparse.Namespace) -> int:
    """``aviary protocol schema``."""
    from .protocol import print_schema

    return print_schema()


def cmd_trace(args: argparse.Namespace) -> int:
    """``aviary trace convert|generate|sample|info``."""
    from .trace_cmd import cmd_trace as run

    return run(args)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "up": cmd_up,
    "cluster": cmd_cluster,
    "host": cmd_host,
    "keys": cmd_keys,
    "report": cmd_report,
    "replay": cmd_replay,
    "compare": cmd_compare,
    "export": cmd_export,
    "demo": cmd_demo,
    "bench": cmd_bench,
    "sweep": cmd_sweep,
    "compose": cmd_compose,
    "policy": cmd_policy,
    "protocol": cmd_protocol,
    "trace": cmd_trace,
}
